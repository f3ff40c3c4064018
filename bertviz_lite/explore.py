"""Page-facing helpers for the explore pages: one trace per sentence pair, and the data each view shows.

Everything here is plain Python, numpy, pandas and torch (no streamlit), so a notebook can build the
same views: `trace_pair` runs the model once; the other functions slice that trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import torch

from bertviz_lite import analysis
from bertviz_lite.figures.attention import attention_heatmap, head_view, neuron_view_figure, rollout_heatmap
from bertviz_lite.figures.mosaic import model_view_mosaic
from bertviz_lite.figures.predictions import nsp_bar
from bertviz_lite.masking import DECISION_NAMES, IGNORE_INDEX, MaskingResult, mask_tokens
from bertviz_lite.model import Bert
from bertviz_lite.pretrained import MINILM, resolve_source
from bertviz_lite.tokenization import MASK_TOKEN, UNK_TOKEN, BertTokenizer, Encoding

EMBEDDING_NAMES = ("token", "position", "segment", "sum", "layer_norm")
# Line budget of the head view: above it, fewer lines per query are drawn (keeps 512 tokens smooth).
HEAD_VIEW_MAX_LINES = 8000
HEAD_VIEW_MAX_TOP_K = 20


@dataclass(frozen=True)
class PairTrace:
    """One forward pass over one sentence pair, as numpy arrays without the batch axis."""

    encoding: Encoding  # the tokenizer's output, before any masking
    input_ids: np.ndarray  # [T] the ids the model saw ([MASK] written at masked_positions)
    tokens: list[str]  # [T] the tokens the model saw
    masked_positions: tuple[int, ...]  # positions replaced by [MASK] on request
    embeddings: dict[str, np.ndarray]  # EMBEDDING_NAMES -> [T, H]
    attentions: np.ndarray  # [L, nh, T, T]
    queries: np.ndarray  # [L, nh, T, hd]
    keys: np.ndarray
    values: np.ndarray
    hidden_states: np.ndarray  # [L + 1, T, H]
    mlm_logits: np.ndarray | None  # [T, V]
    nsp_logits: np.ndarray | None  # [2], index 0 = IsNext

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
        return any(s == 1 for s in self.encoding.sequence_ids if s is not None)


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


def effective_max_length(model: Bert, max_length: int) -> int:
    """max_length capped by the model's position table (a tiny model may know only 128 positions)."""
    return int(min(max_length, model.config.max_position_embeddings))


def encode(tokenizer: BertTokenizer, text_a: str, text_b: str | None, max_length: int) -> Encoding:
    """Tokenize the pair; an empty or whitespace-only B means "no sentence B". Raises ValueError."""
    return tokenizer.encode_pair(text_a, text_b if text_b and text_b.strip() else None, max_length=max_length)


def _numpy(tensors: Sequence[torch.Tensor]) -> np.ndarray:
    """Per-layer [1, ...] tensors -> one float32 array [L, ...]."""
    return torch.stack([t[0] for t in tensors]).float().numpy()


def trace_pair(
    model: Bert,
    tokenizer: BertTokenizer,
    text_a: str,
    text_b: str | None,
    max_length: int = 128,
    masked_positions: Sequence[int] = (),
) -> PairTrace:
    """Tokenize, optionally write [MASK] at some positions, and run one traced forward pass."""
    encoding = encode(tokenizer, text_a, text_b, effective_max_length(model, max_length))
    inputs = encoding.to_tensors()
    masked = tuple(sorted({int(p) for p in masked_positions}))
    if any(not 0 <= p < len(encoding) for p in masked):
        raise ValueError(f"masked positions {list(masked)} must lie in 0..{len(encoding) - 1}")
    inputs["input_ids"][0, list(masked)] = tokenizer.mask_token_id
    model.eval()
    with torch.inference_mode():
        trace = model.trace(**inputs)
    ids = inputs["input_ids"][0].numpy()
    parts = trace.embeddings
    return PairTrace(
        encoding=encoding,
        input_ids=ids,
        tokens=list(tokenizer.convert_ids_to_tokens(ids.tolist())),
        masked_positions=masked,
        embeddings={name: getattr(parts, name)[0].float().numpy() for name in EMBEDDING_NAMES},
        attentions=_numpy(trace.attentions),
        queries=_numpy(trace.queries),
        keys=_numpy(trace.keys),
        values=_numpy(trace.values),
        hidden_states=_numpy(trace.hidden_states),
        mlm_logits=None if trace.mlm_logits is None else trace.mlm_logits[0].float().numpy(),
        nsp_logits=None if trace.nsp_logits is None else trace.nsp_logits[0].float().numpy(),
    )


# ---------------------------------------------------------------- tokens and masking


def encoding_frame(encoding: Encoding) -> pd.DataFrame:
    """One row per token: token, id, segment, position, attention mask, source word."""
    return pd.DataFrame(
        {
            "token": encoding.tokens,
            "id": encoding.input_ids,
            "segment": encoding.token_type_ids,
            "position": encoding.position_ids,
            "attention_mask": encoding.attention_mask,
            "word": [w if w is not None else "" for w in encoding.words],
        }
    )


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
            f"{unknown} piece(s) of the text are not in this model's vocabulary and became {UNK_TOKEN} "
            "(emoji and rare symbols often do)."
        )
    return notes


def mask_encoding(encoding: Encoding, tokenizer: BertTokenizer, mask_prob: float, seed: int) -> MaskingResult:
    """BERT's 15% / 80-10-10 corruption of one encoding, reproducible from the seed."""
    ids = torch.tensor(encoding.input_ids, dtype=torch.long)
    special = torch.tensor(encoding.special_tokens_mask, dtype=torch.long)
    generator = torch.Generator().manual_seed(int(seed))
    ordinary = sorted(set(range(tokenizer.vocab_size)) - set(tokenizer.all_special_ids))
    return mask_tokens(
        ids,
        special,
        mask_token_id=tokenizer.mask_token_id,
        vocab_size=tokenizer.vocab_size,
        mask_prob=float(mask_prob),
        generator=generator,
        random_token_ids=torch.tensor(ordinary or [tokenizer.unk_token_id]),
    )


def masking_frame(encoding: Encoding, result: MaskingResult, tokenizer: BertTokenizer) -> pd.DataFrame:
    """One row per token: original, what the model sees, the decision, and the MLM label."""
    labels = result.labels.tolist()
    return pd.DataFrame(
        {
            "position": encoding.position_ids,
            "original": encoding.tokens,
            "model input": tokenizer.convert_ids_to_tokens(result.input_ids.tolist()),
            "decision": [DECISION_NAMES[int(d)] for d in result.decisions.tolist()],
            "MLM label": [tokenizer.convert_ids_to_tokens(x) if x != IGNORE_INDEX else "" for x in labels],
        }
    )


# ---------------------------------------------------------------- embeddings


def token_window(num_tokens: int, start: int, size: int) -> slice:
    """Positions [start, start + size) clipped to the input; the whole input when it is short."""
    start = int(np.clip(start, 0, max(num_tokens - size, 0)))
    return slice(start, min(num_tokens, start + size))


def embedding_sum_error(trace: PairTrace) -> float:
    """Largest |sum - (token + position + segment)| over all tokens and dimensions (float rounding)."""
    parts = trace.embeddings
    return float(np.abs(parts["sum"] - (parts["token"] + parts["position"] + parts["segment"])).max())


def embedding_parts(trace: PairTrace, window: slice) -> tuple[list[np.ndarray], list[str]]:
    """The five embedding stages [T, H] of a window of tokens, and those tokens."""
    return [trace.embeddings[name][window] for name in EMBEDDING_NAMES], trace.tokens[window]


def position_tables(model: Bert, num_positions: int) -> tuple[np.ndarray, np.ndarray]:
    """(the model's position embeddings, the sinusoidal table), both [N, H], N capped by the model."""
    weight = model.bert.embeddings.position_embeddings.weight.detach()
    count = int(min(num_positions, weight.shape[0]))
    learned = weight[:count].float().numpy()
    return learned, analysis.sinusoidal_position_table(count, weight.shape[1])


def vector_choices(num_layers: int) -> list[str]:
    """Names of the token vectors the PCA plot can show."""
    return ["token embedding", "embedding output (after LayerNorm)"] + [
        f"after layer {i}" for i in range(1, num_layers + 1)
    ]


def vectors_for(trace: PairTrace, choice: str) -> np.ndarray:
    """[T, H] vectors named by vector_choices."""
    if choice == "token embedding":
        return trace.embeddings["token"]
    if choice.startswith("embedding output"):
        return trace.hidden_states[0]
    if choice.startswith("after layer "):
        return trace.hidden_states[int(choice.rsplit(" ", 1)[1])]
    raise ValueError(f"unknown vectors {choice!r}: pick one of {', '.join(vector_choices(1))} or 'after layer N'")


# ---------------------------------------------------------------- attention


def sentence_of_tokens(trace: PairTrace) -> np.ndarray:
    """0 = sentence A, 1 = sentence B, per token ([CLS] and the first [SEP] in A)."""
    return analysis.sentence_ids(trace.segments, trace.special)


def filter_indices(trace: PairTrace, which: str) -> tuple[np.ndarray, np.ndarray]:
    """(query positions, key positions) kept by a sentence filter such as "A→B"."""
    mask = analysis.sentence_filter_mask(trace.segments, trace.special, which)
    return np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))


def attention_block(trace: PairTrace, layer: int, head: int, which: str = "All") -> tuple[np.ndarray, list, list]:
    """One head's attention cut to a sentence filter: (weights [Q, K], query tokens, key tokens)."""
    rows, cols = filter_indices(trace, which)
    block = trace.attentions[layer, head][np.ix_(rows, cols)]
    return block, [trace.tokens[i] for i in rows], [trace.tokens[i] for i in cols]


MAX_TICK_LABELS = 64  # beyond this, every token label on an axis is unreadable and slow to lay out


def _title_above_top_labels(fig: go.Figure) -> go.Figure:
    """Move a token heatmap's title above the key labels along its top; thin the labels of long inputs.

    Hovering still names every cell's tokens; at 512 tokens thinning halves plotly's drawing time.
    """
    fig.update_layout(title={"y": 0.995, "yanchor": "top"}, margin={"t": 160}, height=fig.layout.height + 80)
    if max(len(fig.data[0].x), len(fig.data[0].y)) > 2 * MAX_TICK_LABELS:
        fig.update_xaxes(nticks=MAX_TICK_LABELS)
        fig.update_yaxes(nticks=MAX_TICK_LABELS)
    return fig


def single_head_figure(trace: PairTrace, layer: int, head: int, which: str = "All") -> go.Figure:
    """figures.attention_heatmap of attention_block."""
    block, q_tokens, k_tokens = attention_block(trace, layer, head, which)
    return _title_above_top_labels(
        attention_heatmap(block, q_tokens, k_tokens, title=f"Layer {layer}, head {head} ({which})")
    )


def rollout_figure(flow: np.ndarray, tokens: Sequence[str], after_layer: int) -> go.Figure:
    """figures.rollout_heatmap of one layer's rollout [T, T]."""
    return _title_above_top_labels(rollout_heatmap(flow, tokens, title=f"Attention rollout after layer {after_layer}"))


def attention_block_frame(trace: PairTrace, layer: int, head: int, which: str = "All") -> pd.DataFrame:
    """Long table of attention_block with the original positions as indices."""
    rows, cols = filter_indices(trace, which)
    frame = analysis.attention_to_csv_frame(
        trace.attentions[layer, head][np.ix_(rows, cols)],
        [trace.tokens[i] for i in rows],
        [trace.tokens[i] for i in cols],
    )
    frame["query_index"] = rows[frame["query_index"].to_numpy()]
    frame["key_index"] = cols[frame["key_index"].to_numpy()]
    return frame.assign(layer=layer, head=head)


def attention_layer_frame(trace: PairTrace, layer: int, heads: Sequence[int]) -> pd.DataFrame:
    """Long table of the chosen heads of one layer: head, query, key, weight."""
    frames = [
        analysis.attention_to_csv_frame(trace.attentions[layer, h], trace.tokens).assign(layer=layer, head=h)
        for h in heads
    ]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def attention_all_frame(trace: PairTrace, size: int) -> pd.DataFrame:
    """Long table of every layer and head, block-averaged to size × size as the model view shows it."""
    frames = []
    for layer, head in np.ndindex(*trace.attentions.shape[:2]):
        tile, labels = analysis.downsample_attention(trace.attentions[layer, head], size, trace.tokens)
        frames.append(analysis.attention_to_csv_frame(tile, labels).assign(layer=layer, head=head))
    return pd.concat(frames, ignore_index=True)


def head_view_top_k(num_tokens: int, num_heads: int, max_lines: int = HEAD_VIEW_MAX_LINES) -> int:
    """Lines per query and head so that the head view draws at most about max_lines lines."""
    return int(np.clip(max_lines // max(num_tokens * num_heads, 1), 1, HEAD_VIEW_MAX_TOP_K))


def head_view_min_weight(num_tokens: int) -> float:
    """Default threshold for head-view lines: uniform attention (1/T), rounded down to 0.01."""
    return float(np.floor(100 / max(num_tokens, 1)) / 100)


def head_view_figure(
    trace: PairTrace,
    layer: int,
    heads: Sequence[int],
    which: str = "All",
    window: slice | None = None,
    focus: int | None = None,
    min_weight: float | None = None,
) -> go.Figure:
    """figures.head_view of one layer, for the tokens in a window (queries and keys) of a long input.

    focus is a position in the whole input; lines per query are capped by head_view_top_k, and
    layout.meta records {"top_k", "start", "stop"} for the caption.
    """
    window = window or slice(0, trace.num_tokens)
    size = window.stop - window.start
    mask = analysis.sentence_filter_mask(trace.segments, trace.special, which)[window, window]
    top_k = head_view_top_k(1 if focus is not None else size, max(len(heads), 1))
    fig = head_view(
        trace.attentions[layer][:, window, window], trace.tokens[window], heads=heads, mask=mask, top_k=top_k,
        focus_token=None if focus is None else focus - window.start,
        min_weight=head_view_min_weight(size) if min_weight is None else min_weight,
    )  # fmt: skip
    fig.update_layout(meta={"top_k": top_k, "start": window.start, "stop": window.stop})
    return fig


def model_view_size(num_tokens: int) -> int:
    """Tile resolution of the model view: 32 × 32 blocks at most, so 512 tokens stay light."""
    return min(num_tokens, 32)


def model_view_figure(trace: PairTrace) -> go.Figure:
    """Every layer and head as one clickable mosaic (figures.mosaic), tiles of model_view_size tokens."""
    return model_view_mosaic(trace.attentions, trace.tokens, max_tokens=model_view_size(trace.num_tokens))


def rollout(trace: PairTrace) -> np.ndarray:
    """analysis.attention_rollout of the trace: [L, T, T]."""
    return analysis.attention_rollout(trace.attentions)


def head_statistics(trace: PairTrace) -> pd.DataFrame:
    """analysis.head_statistics one layer at a time (a [L, H, 512, 512] float64 copy is 150 MB)."""
    frames = []
    for layer in range(trace.attentions.shape[0]):
        frame = analysis.head_statistics(trace.attentions[layer : layer + 1], trace.tokens)
        frames.append(frame.assign(layer=layer))
    return pd.concat(frames, ignore_index=True)


def neuron_data(trace: PairTrace, layer: int, head: int, query_index: int) -> dict[str, np.ndarray]:
    """analysis.neuron_view for one head and query token."""
    return analysis.neuron_view(
        trace.queries[layer, head], trace.keys[layer, head], trace.values[layer, head], query_index
    )


def neuron_figure(trace: PairTrace, layer: int, head: int, query_index: int) -> go.Figure:
    """figures.neuron_view_figure with room on the right for the last subplot title."""
    fig = neuron_view_figure(neuron_data(trace, layer, head, query_index), trace.tokens, query_index)
    fig.update_layout(margin={"r": 120})
    return fig


def neuron_frame(neuron: dict[str, np.ndarray], tokens: Sequence[str]) -> pd.DataFrame:
    """Per key token: q·k, q·k/√d, softmax weight; the vectors as key_i / value_i columns."""
    frame = pd.DataFrame(
        {"key_index": np.arange(len(tokens)), "key": list(tokens), "q_dot_k": neuron["dot"],
         "scaled": neuron["scaled"], "weight": neuron["weights"]}
    )  # fmt: skip
    dims = neuron["keys"].shape[1]
    keys = pd.DataFrame(neuron["keys"], columns=[f"key_{i}" for i in range(dims)])
    weighted = pd.DataFrame(neuron["weighted_values"], columns=[f"weighted_value_{i}" for i in range(dims)])
    return pd.concat([frame, keys, weighted], axis=1)


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
            layer, head = int(custom[0]), int(custom[1])
        elif isinstance(point.get("point_index"), int):
            layer, head = divmod(point["point_index"], num_heads)
        else:
            continue
        if 0 <= layer < num_layers and 0 <= head < num_heads:
            return layer, head
    return None


def clicked_token(selection: dict | None) -> int | None:
    """Index (within the figure) of the token clicked in a head view, from st.plotly_chart's selection.

    The token columns of figures.head_view carry their index as customdata; line traces carry none.
    """
    for point in (selection or {}).get("points") or []:
        custom = point.get("customdata")
        if isinstance(custom, int | float) and not isinstance(custom, bool):
            return int(custom)
    return None


# ---------------------------------------------------------------- predictions


def maskable_positions(encoding: Encoding) -> list[int]:
    """Positions of ordinary tokens (not [CLS]/[SEP]), the ones a user may mask."""
    return [i for i, special in enumerate(encoding.special_tokens_mask) if not special]


def default_mask_position(encoding: Encoding) -> int | None:
    """A good first token to mask: the last whole word of sentence A, else any ordinary token."""
    ordinary = maskable_positions(encoding)
    words = [i for i in ordinary if encoding.sequence_ids[i] == 0 and encoding.tokens[i].isalpha()]
    return (words or ordinary or [None])[-1]


def masked_positions(trace: PairTrace) -> list[int]:
    """Positions the model sees as [MASK]: picked in the app, or typed as [MASK] in the text."""
    return [i for i, token in enumerate(trace.tokens) if token == MASK_TOKEN]


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def top_predictions(trace: PairTrace, tokenizer: BertTokenizer, position: int, k: int = 10) -> pd.DataFrame:
    """The k most likely tokens at one position, with probabilities (softmax over the vocabulary)."""
    if trace.mlm_logits is None:
        raise ValueError("This model has no trained masked-language-model head, so it cannot predict tokens.")
    probs = _softmax(trace.mlm_logits[position].astype(np.float64))
    top = np.argsort(-probs, kind="stable")[:k]
    return pd.DataFrame(
        {"rank": np.arange(1, top.size + 1), "token": tokenizer.convert_ids_to_tokens(top.tolist()),
         "id": top, "probability": probs[top]}
    )  # fmt: skip


def is_next_probability(trace: PairTrace) -> float | None:
    """P(B follows A) from the NSP head; None without a head."""
    if trace.nsp_logits is None:
        return None
    return float(_softmax(trace.nsp_logits.astype(np.float64))[0])


def prediction_title(encoding: Encoding, position: int) -> str:
    """Title of one top-k chart: where, and what the token was before masking."""
    original = encoding.tokens[position]
    if original == MASK_TOKEN:
        return f"Position {position}: [MASK] typed in the text"
    return f"Position {position}: the model sees [MASK]; the original was {original!r}"


def nsp_figure(p_is_next: float) -> go.Figure:
    """figures.nsp_bar with the question in the title (the rotated axis title does not fit its height)."""
    fig = nsp_bar(p_is_next, title="Next-sentence prediction: does sentence B follow A?")
    fig.update_yaxes(title_text="")
    return fig


def nsp_frame(p_is_next: float) -> pd.DataFrame:
    """The NSP probabilities as a two-row table."""
    return pd.DataFrame({"label": ["IsNext", "NotNext"], "probability": [p_is_next, 1.0 - p_is_next]})


# ---------------------------------------------------------------- downloads


def _trace_rows(trace) -> pd.DataFrame:
    """Numbers of one plotly trace as a long table (heatmap cells, or bar/scatter points)."""
    name = trace.name or trace.type
    if trace.type == "heatmap":
        z = np.asarray(trace.z, dtype=float)
        x = list(trace.x) if trace.x is not None else list(range(z.shape[1]))
        y = list(trace.y) if trace.y is not None else list(range(z.shape[0]))
        rows, cols = np.meshgrid(np.arange(z.shape[0]), np.arange(z.shape[1]), indexing="ij")
        return pd.DataFrame(
            {"trace": name, "y": np.asarray(y, dtype=object)[rows.ravel()],
             "x": np.asarray(x, dtype=object)[cols.ravel()], "value": z.ravel()}
        )  # fmt: skip
    x = np.asarray(trace.x if trace.x is not None else [], dtype=object)
    y = np.asarray(trace.y if trace.y is not None else [], dtype=object)
    frame = pd.DataFrame({"trace": name, "x": x, "y": y})
    return frame[~(pd.isna(frame["x"]) | pd.isna(frame["y"]))]


def figure_frame(fig: go.Figure) -> pd.DataFrame:
    """Every number a figure plots, one row per heatmap cell or point, with its trace name."""
    frames = [_trace_rows(t) for t in fig.data if t.type in ("heatmap", "bar", "scatter")]
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["trace", "x", "y"])


def csv_bytes(frame: pd.DataFrame, index: bool = False) -> bytes:
    """A DataFrame as UTF-8 CSV bytes for st.download_button."""
    return frame.to_csv(index=index).encode("utf-8")
