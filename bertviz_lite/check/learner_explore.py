"""A learner's model on the explore pages: run in the checker's child process, its arrays back as a `PairTrace`.

The app never imports their file. `open_learner` builds their model once in the worker (sandbox.py: time and memory
limits) to learn what it shows; `learner_trace` runs it on a sentence pair there, with the hooks of capture.py on, and
makes the PairTrace the explore pages' views read. Its weights are either ours (a model source's, placed on their
parameters by the checker's mapping: their architecture with a trained BERT's numbers) or theirs (a run that trained
their model with `--model-file`). What their modules do not show is missing from the trace, each with its sentence
(`PairTrace.missing`): a view that needs it says so instead of failing.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file
from torch import Tensor

from bertviz_lite.check.learner_model import LearnerSpec
from bertviz_lite.check.learner_run import file_sha256, read_record
from bertviz_lite.check.sandbox import run_jobs
from bertviz_lite.inspection.explore import PairTrace
from bertviz_lite.loading.run_folder import RunFolder
from bertviz_lite.model.config import BertConfig
from bertviz_lite.model.modeling import BertForPreTraining
from bertviz_lite.model.outputs import BertTrace, EmbeddingParts, LayerAttention
from bertviz_lite.text.tokenization import BertTokenizer, Encoding

LABEL = "Your BERT"  # how the model picker names a learner's model
PAGES = "Tokens, Embeddings, Attention and Predictions"  # the explore pages that show a learner's model
MISSING = {
    "attentions": "Your model does not expose its attention probabilities (a softmax written inline or "
    "F.scaled_dot_product_attention keeps them inside): return them from your attention, or keep them as self.attn, "
    "to see this view.",
    "embeddings": "Your model does not show these parts of its embeddings as the outputs of modules of their own: "
    "{parts} (a parameter added inline, or a sum computed in a forward that then runs the layers), so this view has "
    "nothing to draw.",
    "hidden_states": "Your model does not show each layer's output as the output of a module of its own (a "
    "layer class whose forward returns it), so this view has nothing to draw.",
    "queries": "This view needs each head's queries and keys, which only our BERT's trace records: your model's run "
    "gives its attention probabilities, hidden states and heads' outputs.",
}
EMBEDDING_PART_WORDS = {  # the sentence of MISSING["embeddings"]
    "token": "the token embeddings",
    "position": "the position embeddings",
    "segment": "the segment embeddings",
    "sum": "the sum",
}
OUR_INTERNALS = (
    f"This page needs our BERT's internals (it runs the model again, or reads its weights); {LABEL} opens on the "
    f"{PAGES} pages: pick another model in the sidebar to use this one."
)


@dataclass(frozen=True, eq=False)
class LearnerModel:
    """What the explore pages know of a learner's model without importing it: sizes, heads, where its weights are."""

    key: str  # the model picker's entry for it
    spec: LearnerSpec
    sha256: str  # their file's content hash when it was opened: a changed file is refused
    weights: str  # the model source whose weights it runs with, or the learner run folder holding its own
    config: BertConfig
    has_mlm_head: bool
    has_nsp_head: bool
    tokenizer: BertTokenizer = field(repr=False)
    own_weights: bool = False  # weights from a learner run (their names), not a model source's (ours, mapped)


class LearnerRunFailed(ValueError):
    """Their model could not run on the explore pages (their code failed, or their file changed): one sentence."""


def _job(model: LearnerModel | LearnerSpec, own_weights: bool) -> dict:
    spec = model.spec if isinstance(model, LearnerModel) else model
    return {
        "file": str(spec.file.resolve()),
        "part": "trace",
        "class": spec.class_name,
        "weights": "theirs" if own_weights else "ours",
    }


def _run(job: dict, config: BertConfig, weights: dict[str, Tensor], ids: Tensor, segments: Tensor):
    """(result, tensors) of one trace job in the child; ValueError with the sentence when their code failed."""
    inputs = {"input_ids": ids, "token_type_ids": segments}
    weights = {name: tensor.detach().float().clone() for name, tensor in weights.items()}  # tied ones apart
    result, tensors = run_jobs([job], asdict(config), weights, inputs)[0]
    if result.get("status") != "ran":
        where = f" (last frame: {result['where']})" if result.get("where") else ""
        raise LearnerRunFailed(
            f"{Path(job['file']).name} could not run: {result.get('message', 'it failed')}{where}"
        )
    return result, tensors


def open_learner(
    spec: LearnerSpec, source: str, model: BertForPreTraining, tokenizer: BertTokenizer
) -> LearnerModel:
    """Their model as a model source, with the weights of `model` (the model source `source`, with its tokenizer)
    placed on their parameters; run once in the child to learn what it shows. ValueError with a sentence."""
    return _opened(spec, source, model.config, model.hf_state_dict(), tokenizer, own_weights=False)


def open_learner_run(run_dir: str | os.PathLike) -> LearnerModel:
    """A run that trained their model (`--model-file`), with its own weights; their file must be unchanged."""
    record = read_record(run_dir)
    refusal = record.changed_file()
    if refusal:
        raise ValueError(refusal)
    tokenizer = BertTokenizer.from_vocab(RunFolder(run_dir).vocab)
    return _opened(
        record.spec, str(run_dir), record.config, run_weights(run_dir), tokenizer, own_weights=True
    )


def _opened(
    spec: LearnerSpec,
    weights: str,
    config: BertConfig,
    tensors: dict[str, Tensor],
    tokenizer: BertTokenizer,
    own_weights: bool,
) -> LearnerModel:
    encoding = tokenizer.encode_pair("The cat sat on the mat.", "It purred.", max_length=16)
    ids = torch.tensor([encoding.input_ids])
    segments = torch.tensor([encoding.token_type_ids])
    result, found = _run(_job(spec, own_weights), config, tensors, ids, segments)
    spec = LearnerSpec(spec.file, result.get("class") or spec.class_name)
    return LearnerModel(
        f"{LABEL}: {spec.name} with {Path(weights).name}'s weights",
        spec,
        file_sha256(spec.file),
        weights,
        config,
        "model.output" in found,
        "nsp_logits" in found,
        tokenizer,
        own_weights=own_weights,
    )


def run_weights(run_dir: str | os.PathLike) -> dict[str, Tensor]:
    """A learner run's weights under their names (learner.safetensors); ValueError when they do not load."""
    try:
        return load_file(str(RunFolder(run_dir).learner_weights))
    except (OSError, SafetensorError) as error:
        raise LearnerRunFailed(
            f"{Path(run_dir).name}'s learner.safetensors does not load ({error})"
        ) from None


def learner_trace(
    learner: LearnerModel,
    encoding: Encoding,
    masked: Sequence[int] = (),
    reference: BertForPreTraining | None = None,
) -> PairTrace:
    """Their model's run on one encoded pair ([MASK] at `masked`), in the child, as the PairTrace the views read.

    `reference`: the model whose weights it runs with (a model source's); None for a learner run's own weights.
    ValueError with a sentence when their file changed since it was opened, or their code failed.
    """
    if not learner.spec.file.is_file() or file_sha256(learner.spec.file) != learner.sha256:
        raise LearnerRunFailed(
            f"{learner.spec.file} has changed since it was opened on the explore pages: check it again on the Your "
            "BERT page and open it anew."
        )
    inputs = encoding.to_tensors()
    masked = tuple(sorted({int(p) for p in masked}))
    inputs["input_ids"][0, list(masked)] = learner.tokenizer.mask_token_id
    weights = run_weights(learner.weights) if learner.own_weights else reference.hf_state_dict()
    job = _job(learner, learner.own_weights)
    _, found = _run(job, learner.config, weights, inputs["input_ids"], inputs["token_type_ids"])
    output, missing = trace_of(found, learner.config.num_hidden_layers, len(encoding))
    ids = inputs["input_ids"][0].numpy()
    return PairTrace(
        encoding=encoding,
        input_ids=ids,
        tokens=list(learner.tokenizer.convert_ids_to_tokens(ids.tolist())),
        masked_positions=masked,
        output=output,
        tokenizer=learner.tokenizer,
        missing=missing,
    )


def trace_of(found: dict[str, Tensor], layers: int, tokens: int) -> tuple[BertTrace, dict[str, str]]:
    """The BertTrace of what the hooks caught (stages as check/capture.py names them), and the sentences for what
    they did not: their attention hidden, their embeddings or layers not modules of their own. q/k/v never come."""
    probs = [found.get(f"layer.{i}.attention.probs") for i in range(layers)]
    first = found.get("embeddings.layer_norm", found.get("embeddings.sum", found.get("layer.0.input")))
    hidden = [_batched(h, tokens) for h in [first, *(found.get(f"layer.{i}.output") for i in range(layers))]]
    names = ("token", "position", "segment", "sum", "layer_norm")
    parts = [_batched(found.get(f"embeddings.{name}"), tokens) for name in names]
    missing = {name: MISSING["queries"] for name in ("queries", "keys", "values")}
    if not all(
        p is not None and p.dim() == 4 for p in probs
    ):  # (B, T, T): nn.MultiheadAttention's head average
        missing["attentions"] = MISSING["attentions"]
    if any(h is None for h in hidden):
        missing["hidden_states"] = MISSING["hidden_states"]
    absent = [
        EMBEDDING_PART_WORDS[name] for name, part in zip(names[:4], parts[:4], strict=True) if part is None
    ]
    if absent:
        listed = absent[0] if len(absent) == 1 else ", ".join(absent[:-1]) + " and " + absent[-1]
        missing["embeddings"] = MISSING["embeddings"].format(parts=listed)
    if parts[4] is None:
        parts[4] = parts[3]  # no embedding LayerNorm of theirs: the sum is what the first layer reads
    trace = BertTrace(
        embeddings=EmbeddingParts(*parts),
        layers=tuple(LayerAttention(None, None, None, p) for p in probs),
        hidden_states=tuple(hidden),
        pooled=found.get("pooler"),
        mlm_logits=_batched(found.get("model.output"), tokens),
        nsp_logits=found.get("nsp_logits"),
        attention_mask=torch.ones(1, tokens, dtype=torch.long),
    )
    return trace, missing


def _batched(part: Tensor | None, tokens: int) -> Tensor | None:
    """One pair's (1, T, H): a position table (T, H) given a batch axis, a sequence-first model's (T, 1, H) turned
    (nn.Transformer's default, as PyTorch's tutorial keeps it)."""
    if part is None or part.dim() not in (2, 3):
        return part
    if part.dim() == 2:
        return part.reshape(1, *part.shape[-2:])
    return part.transpose(0, 1) if part.shape[:2] == (tokens, 1) and tokens > 1 else part
