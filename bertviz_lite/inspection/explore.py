"""The explore pages' input: one traced forward pass per sentence pair, and what a user clicked.

Everything here is plain Python, numpy, pandas and torch (no streamlit), so a notebook can do what
a page does: `trace = trace_pair(model, tokenizer, text_a, text_b)` runs the model once, and a view's data function
takes it with the view's picks spelled out: `views.attention_map(trace, layer=0, head=1)`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd
import torch

from bertviz_lite.limits import MAX_SENTENCE_CHARS, check_text
from bertviz_lite.loading.pretrained import MINILM, resolve_source
from bertviz_lite.model.batching import batcher_for
from bertviz_lite.model.modeling import BertForPreTraining
from bertviz_lite.model.outputs import BertTrace
from bertviz_lite.text.display import plain_frame
from bertviz_lite.text.tokenization import UNK_TOKEN, BertTokenizer, Encoding

EMBEDDING_NAMES = ("token", "position", "segment", "sum", "layer_norm")


class NotExposed(ValueError):
    """A view needs an array this trace does not hold (a learner's model that does not show it); one sentence."""


def _batch_one(tensor: torch.Tensor | None) -> np.ndarray | None:
    """[1, ...] tensor -> float32 array [...] (shares memory with a float32 tensor)."""
    return None if tensor is None else tensor[0].float().numpy()


def _run_head(head: torch.nn.Module, hidden: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        return head(hidden)


def _per_layer(tensors: Sequence[torch.Tensor]) -> np.ndarray:
    """Per-layer [1, ...] tensors -> one float32 array [L, ...]."""
    return torch.stack([t[0] for t in tensors]).float().numpy()


@dataclass(frozen=True)
class PairTrace:
    """One sentence pair: its encoding, what the model saw, and the model's trace of it.

    `output` is the model's BertTrace (a batch of one); the array properties below are numpy views
    of it without the batch axis, each made once, on first use.
    """

    encoding: Encoding  # the tokenizer's output, before any masking
    input_ids: np.ndarray  # [T] the ids the model saw ([MASK] written at masked_positions)
    tokens: list[str]  # [T] the tokens the model saw
    masked_positions: tuple[int, ...]  # the positions the caller asked to replace by [MASK]
    output: BertTrace
    # The model and tokenizer that made the trace, for views that run the model again (attribution,
    # head knock-out, the logit lens); left out of comparisons and repr.
    model: BertForPreTraining | None = field(default=None, compare=False, repr=False)
    tokenizer: BertTokenizer | None = field(default=None, compare=False, repr=False)
    # What the trace does not hold, by accessor name ("attentions", "queries", …), with the sentence that says why:
    # a learner's model run in the checker's child process shows only what its modules expose (check/learner_explore.py).
    missing: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    def _exposed(self, name: str) -> None:
        if name in self.missing:
            raise NotExposed(self.missing[name])

    @cached_property
    def embeddings(self) -> dict[str, np.ndarray]:
        """EMBEDDING_NAMES -> [T, H]."""
        self._exposed("embeddings")
        parts = self.output.embeddings
        arrays = (parts.token, parts.position, parts.segment, parts.sum, parts.layer_norm)
        return {name: _batch_one(array) for name, array in zip(EMBEDDING_NAMES, arrays, strict=True)}

    @cached_property
    def hidden_states(self) -> np.ndarray:
        """[L + 1, T, H]: the embedding output, then each layer's."""
        self._exposed("hidden_states")
        return _per_layer(self.output.hidden_states)

    @cached_property
    def attentions(self) -> np.ndarray:
        """[L, nh, T, T] attention probabilities; each row sums to 1."""
        self._exposed("attentions")
        return _per_layer(self.output.attentions)

    @cached_property
    def queries(self) -> np.ndarray:
        """[L, nh, T, hd]."""
        self._exposed("queries")
        return _per_layer(self.output.queries)

    @cached_property
    def keys(self) -> np.ndarray:
        """[L, nh, T, hd]."""
        self._exposed("keys")
        return _per_layer(self.output.keys)

    @cached_property
    def values(self) -> np.ndarray:
        """[L, nh, T, hd]."""
        self._exposed("values")
        return _per_layer(self.output.values)

    def layer_array(self, name: str) -> np.ndarray:
        """Any intermediate outputs.LayerAttention declares, by its per_layer name, as one array [L, ...] made once."""
        self._exposed(name)
        made = self.__dict__.setdefault("_layer_arrays", {})
        if name not in made:
            if name not in self.output.per_layer():
                raise KeyError(
                    f"the trace recorded no per-layer {name!r} (outputs.LayerAttention declares it)"
                )
            made[name] = _per_layer(self.output.layer_tensors(name))
        return made[name]

    @cached_property
    def mlm_logits(self) -> np.ndarray | None:
        """[T, V], made on first use (trace_pair leaves the heads out); None without an MLM head."""
        logits = self.output.mlm_logits
        if logits is None and self.model is not None and self.model.has_mlm_head:
            logits = _run_head(self.model.cls.predictions, self.output.hidden_states[-1])
        return _batch_one(logits)

    @cached_property
    def nsp_logits(self) -> np.ndarray | None:
        """[2], index 0 = IsNext, made on first use; None without an NSP head."""
        logits = self.output.nsp_logits
        if logits is None and self.model is not None and self.model.has_nsp_head:
            logits = _run_head(self.model.cls.seq_relationship, self.output.pooled)
        return _batch_one(logits)

    @property
    def num_tokens(self) -> int:
        return len(self.tokens)

    @property
    def segments(self) -> np.ndarray:
        return np.asarray(self.encoding.token_type_ids)

    @property
    def special(self) -> np.ndarray:
        return np.asarray(self.encoding.special_tokens_mask)

    @property
    def has_sentence_b(self) -> bool:
        return has_sentence_b(self.encoding)


def has_sentence_b(encoding: Encoding) -> bool:
    """Whether the encoding holds a sentence B."""
    return any(s == 1 for s in encoding.sequence_ids if s is not None)


def source_version(source: str) -> str:
    """Sizes and modification times of a model folder's files: changes when a checkpoint is rewritten.

    Caches keyed by (source, version) so a retrained checkpoint of the same name is loaded afresh.
    """
    if source == MINILM:
        return "packaged"
    try:
        folder = resolve_source(source)
    except FileNotFoundError:
        return "missing"
    files = [folder / name for name in ("config.json", "vocab.txt", "model.safetensors", "pytorch_model.bin")]
    return "|".join(f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in files if p.is_file())


def model_card(model: BertForPreTraining, tokenizer: BertTokenizer) -> str:
    """One line on a model: its sizes, vocabulary, position embeddings and which pre-training heads it has."""
    config = model.config
    heads = [name for name, has in (("MLM", model.has_mlm_head), ("NSP", model.has_nsp_head)) if has]
    parts = [
        f"{config.num_hidden_layers} layers",
        f"{config.num_attention_heads} heads",
        f"hidden {config.hidden_size}",
        f"vocabulary {tokenizer.vocab_size}",
        f"{config.position_embedding_type} positions",
        f"heads: {', '.join(heads) or 'none'}",
    ]
    return " · ".join(parts)


def effective_max_length(model: BertForPreTraining, max_length: int) -> int:
    """max_length capped by the model's position table (a tiny model may know only 128 positions)."""
    return int(min(max_length, model.config.max_position_embeddings))


def encode(tokenizer: BertTokenizer, text_a: str, text_b: str | None, max_length: int) -> Encoding:
    """Tokenize the pair; an empty or whitespace-only B means "no sentence B". Raises ValueError (a sentence longer
    than limits.MAX_SENTENCE_CHARS is refused before it is tokenized)."""
    check_text(text_a, MAX_SENTENCE_CHARS, "Sentence A")
    check_text(text_b or "", MAX_SENTENCE_CHARS, "Sentence B")
    return tokenizer.encode_pair(text_a, text_b if text_b and text_b.strip() else None, max_length=max_length)


def input_warnings(encoding: Encoding, max_length: int) -> list[str]:
    """Plain sentences about what the tokenizer had to do with the input (truncation, [UNK])."""
    notes = []
    if encoding.truncated:
        notes.append(
            f"The pair was truncated to {len(encoding)} tokens (max length {max_length}): "
            "the longer sentence lost its last tokens first."
        )
    unknown = sum(token == UNK_TOKEN for token in encoding.tokens)
    if unknown:
        notes.append(
            f"{unknown} piece{'s' if unknown > 1 else ''} of the text {'are' if unknown > 1 else 'is'} not in this "
            f"model's vocabulary and became {UNK_TOKEN} (emoji and rare symbols often do)."
        )
    return notes


def trace_pair(
    model: BertForPreTraining,
    tokenizer: BertTokenizer,
    text_a: str,
    text_b: str | None,
    max_length: int = 128,
    masked_positions: Sequence[int] = (),
    batched: bool = True,
) -> PairTrace:
    """Tokenize (max_length capped by the model's positions), optionally write [MASK] at some positions, and run one
    traced forward pass (trace_encoding)."""
    max_length = effective_max_length(model, max_length)
    encoding = encode(tokenizer, text_a, text_b, max_length)
    return trace_encoding(model, tokenizer, encoding, max_length, masked_positions, batched)


def trace_encoding(
    model: BertForPreTraining,
    tokenizer: BertTokenizer,
    encoding: Encoding,
    max_length: int,
    masked_positions: Sequence[int] = (),
    batched: bool = True,
) -> PairTrace:
    """One traced forward pass of a pair encoded with max_length (the capped one), [MASK] written at masked_positions.

    batched: the pass is shared with other threads' traces of the same moment (model/batching.py: one padded pass,
    the same numbers up to float rounding), which costs a lone caller a few milliseconds.
    """
    inputs = encoding.to_tensors()
    masked = tuple(sorted({int(p) for p in masked_positions}))
    if any(not 0 <= p < len(encoding) for p in masked):
        raise ValueError(f"masked positions {list(masked)} must lie in 0..{len(encoding) - 1}")
    inputs["input_ids"][0, list(masked)] = tokenizer.mask_token_id
    model.eval()
    # No MLM/NSP logits yet: the decoder over the whole vocabulary costs as much as the encoder, and most views
    # never read it (PairTrace.mlm_logits makes it on first use).
    if batched:
        output = batcher_for(model).trace(inputs, max_length, heads=False)
    else:
        with torch.inference_mode():
            output = model.trace(**inputs, heads=False)
    ids = inputs["input_ids"][0].numpy()
    tokens = list(tokenizer.convert_ids_to_tokens(ids.tolist()))
    return PairTrace(
        encoding=encoding,
        input_ids=ids,
        tokens=tokens,
        masked_positions=masked,
        output=output,
        model=model,
        tokenizer=tokenizer,
    )


def token_window(num_tokens: int, start: int, size: int) -> slice:
    """Positions [start, start + size) clipped to the input; the whole input when it is short."""
    start = int(np.clip(start, 0, max(num_tokens - size, 0)))
    return slice(start, min(num_tokens, start + size))


# ---------------------------------------------------------------- clicks


def model_view_selection(selection: dict | None, num_layers: int, num_heads: int) -> tuple[int, int] | None:
    """(layer, head) of the tile clicked in the model view, from st.plotly_chart's selection state.

    The tile picker's customdata is (layer, head); the browser may send it as a list or as
    {"0": layer, "1": head}. Without it, the point index (layer * num_heads + head) is used.
    """
    for point in (selection or {}).get("points") or []:
        custom = point.get("customdata")
        if isinstance(custom, dict):
            custom = [custom[k] for k in sorted(custom, key=int)]
        if isinstance(custom, Sequence) and len(custom) >= 2:
            layer = int(custom[0])
            head = int(custom[1])
        elif isinstance(point.get("point_index"), int):
            layer, head = divmod(point["point_index"], num_heads)
        else:
            continue
        if 0 <= layer < num_layers and 0 <= head < num_heads:
            return layer, head
    return None


def clicked_token(selection: dict | None) -> int | None:
    """Index (within the figure) of the token clicked in a head view, from st.plotly_chart's selection.

    The token columns of figures.head_view_figure carry their index as customdata; its lines carry none.
    """
    for point in (selection or {}).get("points") or []:
        custom = point.get("customdata")
        if isinstance(custom, int | float) and not isinstance(custom, bool):
            return int(custom)
    return None


def csv_bytes(frame: pd.DataFrame, index: bool = False) -> bytes:
    """A DataFrame as UTF-8 CSV bytes for st.download_button; text cells that a spreadsheet would run as a formula
    (`=HYPERLINK(…)` from a vocab token) start with a ' instead."""
    return plain_frame(frame).to_csv(index=index).encode("utf-8")
