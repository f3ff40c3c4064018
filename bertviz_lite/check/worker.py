"""`python -m bertviz_lite.check.worker DIR`: the learner's code runs here, job after job, under limits.

The checker writes DIR/request.json (config, jobs, limits), our weights (ours.safetensors) and the inputs
(inputs.safetensors); each job leaves DIR/job<N>.json and DIR/job<N>.safetensors as soon as it ends, so a job that
hangs or dies costs only itself. The checker reads JSON and safetensors back, never a pickle.
"""

from __future__ import annotations

import inspect
import json
import resource
import signal
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch import Tensor, nn
from torch.nn.parameter import is_lazy

from bertviz_lite.check import masking_worker
from bertviz_lite.check.capture import StageHooks, first_tensor, load_weights, observe, param_infos
from bertviz_lite.check.learner import MODEL_NAMES, CannotBuild, build, find_class
from bertviz_lite.check.learner import load_file as load_learner
from bertviz_lite.check.mapping import EMB, Sizes, map_parameters, map_part
from bertviz_lite.check.reference import our_shapes
from bertviz_lite.model.config import BertConfig

PART_NAMES = {
    "model": MODEL_NAMES,
    "embedding": ("BertEmbedding", "BertEmbeddings", "BERTEmbedding", "Embeddings", "Embedding"),
    "attention": (
        "BertAttention",
        "MultiHeadedAttention",
        "MultiHeadAttention",
        "BertSelfAttention",
        "SelfAttention",
        "Attention",
    ),
    "mlp": (
        "BertMLP",
        "PositionwiseFeedForward",
        "PositionWiseFFN",
        "FeedForward",
        "MLP",
        "BertFeedForward",
        "FFN",
    ),
    "layer": (
        "BertLayer",
        "EncoderLayer",
        "TransformerBlock",
        "TransformerEncoderBlock",
        "TransformerLayer",
        "Block",
    ),
}


class TimeLimit(Exception):
    """The job ran past its time limit."""


def _on_alarm(_signum, _frame):
    raise TimeLimit()


def last_frame(error: BaseException, learner_dir: str | None) -> str:
    """Their traceback's last frame ("file.py, line 12, in forward: code"), preferring frames in their folder."""
    frames = traceback.extract_tb(error.__traceback__)
    theirs = [f for f in frames if learner_dir and f.filename.startswith(learner_dir)]
    frame = (theirs or frames or [None])[-1]
    if frame is None:
        return ""
    return f"{Path(frame.filename).name}, line {frame.lineno}, in {frame.name}: {(frame.line or '').strip()}"


def run_job(job: dict[str, Any], request: dict[str, Any], ours: dict[str, Tensor], inputs: dict[str, Tensor]):
    """(result JSON, tensors) of one job; every failure of theirs becomes a result, never an exception here."""
    phase = {"now": "load"}
    torch.manual_seed(0)  # each job sees the same random numbers, alone or after others
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, float(request["time_limit"]))
    try:
        if job["part"] == "masking":
            return masking_worker.masking_job(job, phase)
        if job["part"] == "trace":
            return trace_job(job, request, ours, inputs, phase)
        return model_job(job, request, ours, inputs, phase)
    except CannotBuild as error:
        return {"status": "cannot-build", "message": str(error)}, {}
    except BaseException as error:  # noqa: BLE001 - whatever their code raises is a finding
        return _failure(error, job, phase["now"]), {}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        _forget(Path(job["file"]).resolve().parent)


def _forget(folder: Path) -> None:
    """The learner's folder off sys.path and its modules out of sys.modules: the next job's files of the same
    names (another attention.py) are imported afresh."""
    sys.path[:] = [p for p in sys.path if p != str(folder)]
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file and Path(file).resolve().parent == folder:
            del sys.modules[name]


def _failure(error: BaseException, job: dict[str, Any], phase: str) -> dict[str, Any]:
    where = last_frame(error, str(Path(job["file"]).resolve().parent))
    if isinstance(error, TimeLimit):
        status = "timeout"
        message = "stopped there"
    elif isinstance(error, MemoryError) or ("memory" in str(error).lower() and "alloc" in str(error).lower()):
        status = "memory"
        message = f"it asked for more memory than the limit allows ({type(error).__name__})"
    else:
        status = "exception"
        message = f"{type(error).__name__}: {str(error)[:300]}"
    return {"status": status, "phase": phase, "message": message, "where": where}


def model_job(job, request, ours, inputs, phase) -> tuple[dict[str, Any], dict[str, Tensor]]:
    """Build their model or part, fill it with our weights, run it with hooks (twice, to catch live dropout)."""
    config = request["config"]
    part = job["part"]
    module = load_learner(Path(job["file"]))
    cls = find_class(module, job.get("class"), PART_NAMES[part])
    model = build(module, cls, config)
    materialize(model, part, inputs)
    phase["now"] = "map"
    sizes = sizes_of(config)
    check_sizes(param_infos(model), part, config)
    model.eval()
    observed = None
    if part == "model":  # a trial pass: which module runs when and what it gives tells the heads apart
        phase["now"] = "run"
        observed = observe(model, lambda: call(model, part, inputs))
        phase["now"] = "map"
    infos = param_infos(model, observed)
    mapping = map_part(infos, {k: tuple(v.shape) for k, v in ours.items()}, sizes, part, job.get("override"))
    problems = load_weights(model, mapping, ours)
    phase["now"] = "run"
    hooks = StageHooks(model, mapping, config)
    hooks.install()
    first = _traced(model, hooks, part, inputs, config)
    second = _traced(model, hooks, part, inputs, config)
    dropout_stage = next((k for k in first if k in second and not torch.equal(first[k], second[k])), None)
    if dropout_stage:
        with _dropout_off():
            first = _traced(model, hooks, part, inputs, config)
    result = {
        "status": "ran",
        "class": cls.__name__,
        "mapping": mapping.table(),
        "problems": problems,
        "unmapped": {"theirs": mapping.unmapped_theirs, "ours": mapping.unmapped_ours},
        "dropout_stage": dropout_stage,
        "tied": _tied(model, mapping),
        "eps": sorted({m.eps for m in model.modules() if isinstance(m, nn.LayerNorm)}),
    }
    return result, {k: v.contiguous() for k, v in first.items()}


def trace_job(job, request, weights, inputs, phase) -> tuple[dict[str, Any], dict[str, Tensor]]:
    """Their model at the request's sizes with `weights` (ours, placed by the mapping, or theirs by their names when
    job["weights"] is "theirs"), run once on `inputs` with the hooks on: every stage it shows, and its logits."""
    config = request["config"]
    module = load_learner(Path(job["file"]))
    model = build(module, find_class(module, job.get("class"), PART_NAMES["model"]), config)
    materialize(model, "model", inputs)
    check_sizes(param_infos(model), "model", config)
    phase["now"] = "run"
    observed = observe(model.eval(), lambda: call(model, "model", inputs))
    phase["now"] = "map"
    mapping = map_parameters(param_infos(model, observed), our_shapes(BertConfig(**config)), sizes_of(config))
    if job.get("weights") == "theirs":
        loaded = model.load_state_dict(weights, strict=False)
        problems = [f"{name} is not in the saved weights" for name in loaded.missing_keys]
    else:
        problems = load_weights(model, mapping, weights)
    phase["now"] = "run"
    hooks = StageHooks(model, mapping, config)
    hooks.install()
    captured = _traced(model, hooks, "model", inputs, config)
    return {"status": "ran", "class": type(model).__name__, "problems": problems}, captured


def sizes_of(config: dict[str, Any]) -> Sizes:
    """The sizes the mapping places parameters by, from a config dict (BertConfig's fields)."""
    fields = (
        "vocab_size",
        "hidden_size",
        "intermediate_size",
        "max_position_embeddings",
        "num_hidden_layers",
    )
    return Sizes(**{name: config[name] for name in fields})


def check_sizes(infos, part: str, config: dict[str, Any]) -> None:
    """Refuse a model built at sizes of its own: nothing would map, and every stage would differ for that alone."""
    vocab = config["vocab_size"]
    hidden = config["hidden_size"]
    if part in ("model", "embedding") and infos and not any(p.shape == (vocab, hidden) for p in infos):
        shapes = sorted({p.shape for p in infos if len(p.shape) == 2}, key=lambda s: -s[0] * s[1])[:1]
        raise CannotBuild(
            f"Your model does not take the sizes it is given (vocab_size={vocab}, hidden_size={hidden}): none of its "
            f"weights is a {vocab} x {hidden} word table (its largest is {' x '.join(map(str, shapes[0]))}). Take the "
            f"sizes as constructor parameters, or add a function build(config) that uses config.vocab_size, "
            f"config.hidden_size, …."
        )


def _traced(
    model: nn.Module, hooks: StageHooks, part: str, inputs: dict[str, Tensor], config
) -> dict[str, Tensor]:
    hooks.captured = {}
    with torch.no_grad():
        output = call(model, part, inputs)
    hooks.exposed(batch=inputs["input_ids"].shape[0])
    captured = dict(hooks.captured)
    if part in ("model", "embedding"):
        logits = first_tensor(output, config["vocab_size"])
        if logits is not None and logits.dim() == 3:
            captured["model.output"] = logits.detach().float().clone()
        nsp = first_tensor(output, 2)
        if nsp is not None and nsp.dim() == 2 and "nsp_logits" not in captured:
            captured["nsp_logits"] = nsp.detach().float().clone()
    hidden = first_tensor(output, config["hidden_size"])
    if hidden is not None:
        captured["part.output"] = hidden.detach().float().clone()
    return captured


def call(model: nn.Module, part: str, inputs: dict[str, Tensor]) -> Any:
    """Their forward, with the arguments its signature asks for: (ids, segments), (x, mask), (q, k, v, mask), (x)."""
    names = [
        n.lower()
        for n, p in inspect.signature(model.forward).parameters.items()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    required = sum(
        1
        for p in inspect.signature(model.forward).parameters.values()
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    )
    if part in ("model", "embedding"):
        ids = inputs["input_ids"]
        seg = inputs["token_type_ids"]
        extra = _extra_arguments(model.forward, ids)
        return model(ids, **extra) if len(names) == 1 else model(ids, seg, **extra)
    x = inputs["layer_input" if part != "mlp" else "mlp_input"]
    if part == "mlp" or len(names) == 1:
        return model(x)
    qkv = len(names) >= 4 or (required >= 3 and names[:3] in (["q", "k", "v"], ["query", "key", "value"]))
    keep = inputs["input_ids"] != 0
    # (B, 1, 1, T) with 1 where a key may be attended; else (B, T) so; else nn.MultiheadAttention's (B, T), True on padding
    masks = (keep.long()[:, None, None, :], keep.long(), ~keep)
    if any(name in _VALID_LENGTHS for name in names):  # d2l.ai: each row's count of tokens, (B,)
        masks = (keep.sum(dim=1),)
    for index, mask in enumerate(masks):
        try:
            return model(x, x, x, mask) if qkv else model(x, mask)
        except (RuntimeError, IndexError, AssertionError):
            if index == len(masks) - 1:
                raise


# A forward's further parameters that the checker fills in by their usual names (Dive into Deep Learning's BERT:
# `forward(tokens, segments, valid_lens=None, pred_positions=None)`), from the padded ids: 0 is padding.
_VALID_LENGTHS = ("valid_lens", "valid_len", "valid_lengths", "lengths", "seq_lens")
_ATTENTION_MASKS = ("attention_mask",)  # transformers' convention: (B, T), 1 where a token may be attended
_PREDICTION_POSITIONS = ("pred_positions", "masked_positions", "mlm_positions", "masked_lm_positions")


def _extra_arguments(forward: Callable[..., Any], ids: Tensor) -> dict[str, Tensor]:
    """Keyword arguments for the parameters of `forward` after the ids and segments that have a usual name: every
    row's count of tokens, the attention mask where it is required (an optional one is left to their default, which
    finds the padding itself), and every position as one to predict (so the MLM head runs on all)."""
    keep = ids != 0
    values = {}
    for name, param in list(inspect.signature(forward).parameters.items())[2:]:
        if name.lower() in _VALID_LENGTHS:
            values[name] = keep.sum(dim=1)
        elif name.lower() in _ATTENTION_MASKS and param.default is param.empty:
            values[name] = keep.long()
        elif name.lower() in _PREDICTION_POSITIONS:
            values[name] = torch.arange(ids.shape[1]).expand(ids.shape[0], -1)
    return values


def materialize(model: nn.Module, part: str, inputs: dict[str, Tensor]) -> None:
    """Give lazy modules (nn.LazyLinear, as Dive into Deep Learning's BERT uses) their shapes by one pass, as their
    own first forward would, before the checker reads any parameter's shape."""
    if any(is_lazy(param) for param in model.parameters()):
        with torch.no_grad():
            call(model, part, inputs)


class _dropout_off:
    """Dropout made the identity while their model runs once more, to compare what the rest computes."""

    def __enter__(self):
        self.saved = (torch.nn.functional.dropout, torch.dropout, nn.Dropout.forward)
        torch.nn.functional.dropout = lambda x, *args, **kwargs: x
        torch.dropout = lambda x, *args, **kwargs: x
        nn.Dropout.forward = lambda self, x: x

    def __exit__(self, *exc):
        torch.nn.functional.dropout, torch.dropout, nn.Dropout.forward = self.saved


def _tied(model: nn.Module, mapping) -> bool | None:
    """Whether their MLM decoder is their word-embedding matrix; None when they have no decoder of their own."""
    params = dict(model.named_parameters(remove_duplicate=False))
    holders = [
        name for name, sources in mapping.entries.items() if sources == [EMB + "word_embeddings.weight"]
    ]
    if len(holders) < 2:
        return None
    return all(params[h] is params[holders[0]] for h in holders)


def main(argv: list[str]) -> int:
    folder = Path(argv[0])
    request = json.loads((folder / "request.json").read_text())
    torch.set_num_threads(1)
    torch.manual_seed(0)
    # nn.TransformerEncoder(Layer)'s eval fast path runs a layer as one fused kernel (no hook sees its linears or
    # norms) and a padded batch as a nested tensor; off, their layers run module by module, as in training.
    torch.backends.mha.set_fastpath_enabled(False)
    limit = int(request["memory_limit"])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    ours = load_file(folder / "ours.safetensors")
    inputs = load_file(folder / "inputs.safetensors")
    (folder / "ready").write_text("")
    stop = request.get("stop", len(request["jobs"]))
    for n, job in enumerate(request["jobs"]):
        if not request.get("start", 0) <= n < stop:
            continue
        result, tensors = run_job(job, request, ours, inputs)
        save_file(tensors, str(folder / f"job{n}.safetensors"))
        (folder / f"job{n}.json").write_text(json.dumps(result, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
