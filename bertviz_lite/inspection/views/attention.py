"""The data behind each attention view: arrays and labels for a builder in bertviz_lite.figures.

Each data function takes a trace (explore.PairTrace) and the view's picks, spelled out; each view's data has a
to_frame() for its CSV download. The arithmetic on plain arrays is in analysis.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from bertviz_lite.inspection import analysis
from bertviz_lite.inspection.explore import PairTrace

# What `bertviz_lite.inspection.views` offers at its top (its __init__ lists them by name).
__all__ = [
    "AttentionMap",
    "ModelView",
    "HeadViewLinks",
    "NeuronView",
    "attention_map",
    "model_view",
    "model_view_tiles",
    "head_view_links",
    "head_view_min_weight",
    "head_view_top_k",
    "model_view_size",
    "neuron_view",
    "select_links",
    "Rollout",
    "rollout",
    "HeadStatistics",
    "head_statistics",
]

# Line budget of the head view: above it, fewer lines per query are drawn (keeps 512 tokens smooth).
HEAD_VIEW_MAX_LINES = 8000
HEAD_VIEW_MAX_TOP_K = 20
MODEL_VIEW_MAX_TILE = 32  # the model view averages each head into at most 32 × 32 blocks of tokens


# ---------------------------------------------------------------- one head


class SentenceCut:
    """The token labels of the rows and columns a sentence filter kept (from tokens, query_ and key_positions)."""

    tokens: list[str]
    query_positions: np.ndarray
    key_positions: np.ndarray

    @property
    def query_tokens(self) -> list[str]:
        return [self.tokens[i] for i in self.query_positions]

    @property
    def key_tokens(self) -> list[str]:
        return [self.tokens[i] for i in self.key_positions]


@dataclass(frozen=True)
class AttentionMap(SentenceCut):
    """One head's attention cut to a sentence filter, with the input positions of its rows and columns."""

    weights: np.ndarray  # [Q, K]
    query_positions: np.ndarray  # [Q]
    key_positions: np.ndarray  # [K]
    tokens: list[str]  # [T] every token of the input
    layer: int
    head: int
    sentence_filter: str = "All"

    @property
    def title(self) -> str:
        return f"Layer {self.layer}, head {self.head} ({self.sentence_filter})"

    def to_frame(self) -> pd.DataFrame:
        """Long table: query_index, query, key_index, key (input positions), weight, layer, head."""
        frame = analysis.attention_to_csv_frame(self.weights, self.query_tokens, self.key_tokens)
        frame["query_index"] = self.query_positions[frame["query_index"].to_numpy()]
        frame["key_index"] = self.key_positions[frame["key_index"].to_numpy()]
        return frame.assign(layer=self.layer, head=self.head)


def attention_map(trace: PairTrace, layer: int, head: int, sentence_filter: str = "All") -> AttentionMap:
    """One head of the trace's attention, the cells kept by a sentence filter such as "A→B"."""
    mask = analysis.sentence_filter_mask(trace.segments, trace.special, sentence_filter)
    rows = np.flatnonzero(mask.any(axis=1))
    cols = np.flatnonzero(mask.any(axis=0))
    weights = np.asarray(trace.attentions[layer, head])[np.ix_(rows, cols)]
    return AttentionMap(weights, rows, cols, list(trace.tokens), layer, head, sentence_filter)


# ---------------------------------------------------------------- head view


@dataclass(frozen=True)
class HeadViewLinks:
    """The lines of a head view: for each drawn head, which query links to which key, with what weight."""

    attention: np.ndarray  # [nh, W, W] the layer's attention among the drawn tokens (float64)
    tokens: list[str]  # [W] the drawn tokens
    heads: tuple[int, ...]
    links: tuple[
        tuple[np.ndarray, np.ndarray, np.ndarray], ...
    ]  # per head: query, key, weight (window positions)
    focus_token: int | None  # the window position whose lines alone are kept, if any
    top_k: int  # most lines kept per query and head
    start: int = 0  # input position of the first drawn token
    layer: int = 0

    @property
    def stop(self) -> int:
        return self.start + len(self.tokens)

    def to_frame(self) -> pd.DataFrame:
        """Long table of the drawn heads' attention: query_index, query, key_index, key, weight, layer, head."""
        frames = []
        for head in self.heads:
            frame = analysis.attention_to_csv_frame(self.attention[head], self.tokens)
            frame[["query_index", "key_index"]] += self.start
            frames.append(frame.assign(layer=self.layer, head=head))
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _strongest(weights: np.ndarray, top_k: int, min_weight: float) -> tuple[np.ndarray, ...]:
    """(query, key, weight) of the cells with weight > 0, >= min_weight and among their row's top_k."""
    keep = (weights > 0) & (weights >= min_weight)
    if top_k < weights.shape[1]:
        top = np.argpartition(-weights, top_k - 1, axis=1)[:, :top_k]
        in_top = np.zeros_like(keep)
        np.put_along_axis(in_top, top, True, axis=1)
        keep &= in_top
    queries, keys = np.nonzero(keep)
    return queries, keys, weights[queries, keys]


def select_links(
    attn,
    tokens: Sequence[str],
    heads: Sequence[int] | None = None,
    focus_token: int | None = None,
    mask=None,
    top_k: int = 20,
    min_weight: float = 0.01,
    start: int = 0,
    layer: int = 0,
) -> HeadViewLinks:
    """The lines a head view of one layer draws.

    Args:
        attn: [nh, T, T] attention of one layer.
        tokens: T token strings.
        heads: heads to draw (default all).
        focus_token: keep only the lines leaving this query token.
        mask: optional bool [T, T] of (query, key) cells to keep, e.g. from sentence_filter_mask.
        top_k: at most this many lines per query and head (keeps 512-token inputs fast).
        min_weight: lines below this weight are dropped.
        start, layer: where these tokens sit in the input, for the table.
    """
    attn = np.asarray(attn, dtype=np.float64)
    if attn.ndim != 3 or attn.shape[-1] != attn.shape[-2]:
        raise ValueError(f"attention must have shape [heads, T, T], got {list(attn.shape)}")
    num_heads, length, _ = attn.shape
    if len(tokens) != length:
        raise ValueError(f"got {len(tokens)} tokens for {length} rows/columns of data")
    heads = tuple(range(num_heads)) if heads is None else tuple(int(h) for h in heads)
    if any(not 0 <= h < num_heads for h in heads):
        raise ValueError(f"heads {list(heads)} must lie in 0..{num_heads - 1}")
    if focus_token is not None and not 0 <= focus_token < length:
        raise ValueError(f"focus_token {focus_token} is outside 0..{length - 1}")
    keep = np.ones((length, length), bool) if mask is None else np.asarray(mask, bool)
    if keep.shape != (length, length):
        raise ValueError(f"mask must be [{length}, {length}], got {list(keep.shape)}")
    if focus_token is not None:
        keep = keep & (np.arange(length) == focus_token)[:, None]
    links = tuple(_strongest(attn[head] * keep, top_k, min_weight) for head in heads)
    return HeadViewLinks(attn, list(tokens), heads, links, focus_token, top_k, start, layer)


def head_view_top_k(num_tokens: int, num_heads: int, max_lines: int = HEAD_VIEW_MAX_LINES) -> int:
    """Lines per query and head so that the head view draws at most about max_lines lines."""
    return int(np.clip(max_lines // max(num_tokens * num_heads, 1), 1, HEAD_VIEW_MAX_TOP_K))


def head_view_min_weight(num_tokens: int) -> float:
    """Default threshold for head-view lines: uniform attention (1/T), rounded down to 0.01."""
    return float(np.floor(100 / max(num_tokens, 1)) / 100)


def head_view_links(
    trace: PairTrace,
    layer: int,
    heads: Sequence[int],
    sentence_filter: str = "All",
    window: slice | None = None,
    focus: int | None = None,
    min_weight: float | None = None,
) -> HeadViewLinks:
    """select_links of one layer for the tokens in a window (queries and keys) of a long input.

    focus is a position in the whole input; lines per query are capped by head_view_top_k, and
    min_weight defaults to head_view_min_weight of the window.
    """
    window = window or slice(0, trace.num_tokens)
    size = window.stop - window.start
    mask = analysis.sentence_filter_mask(trace.segments, trace.special, sentence_filter)[window, window]
    top_k = head_view_top_k(1 if focus is not None else size, max(len(heads), 1))
    return select_links(
        trace.attentions[layer][:, window, window],
        trace.tokens[window],
        heads,
        mask=mask,
        top_k=top_k,
        focus_token=None if focus is None else focus - window.start,
        min_weight=head_view_min_weight(size) if min_weight is None else min_weight,
        start=window.start,
        layer=layer,
    )


# ---------------------------------------------------------------- model view


@dataclass(frozen=True)
class ModelView:
    """Every layer and head of one input, each averaged into tile × tile blocks of tokens."""

    tiles: np.ndarray  # [L, nh, G, G] float32; each tile's rows sum to 1
    labels: list[str]  # [G] the token groups, e.g. "the…dog (5-9)"

    @property
    def tile(self) -> int:
        return self.tiles.shape[-1]

    def to_frame(self) -> pd.DataFrame:
        """Long table of every tile: query_index, query, key_index, key (groups), weight, layer, head."""
        frames = [
            analysis.attention_to_csv_frame(self.tiles[layer, head], self.labels).assign(
                layer=layer, head=head
            )
            for layer, head in np.ndindex(*self.tiles.shape[:2])
        ]
        return pd.concat(frames, ignore_index=True)


def model_view_size(num_tokens: int) -> int:
    """Tile resolution of the model view: MODEL_VIEW_MAX_TILE blocks at most, so 512 tokens stay light."""
    return min(num_tokens, MODEL_VIEW_MAX_TILE)


def model_view(trace: PairTrace, max_tokens: int | None = None) -> ModelView:
    """Every head of the trace block-averaged (model_view_tiles)."""
    return model_view_tiles(trace.attentions, trace.tokens, max_tokens)


def model_view_tiles(attentions, tokens: Sequence[str], max_tokens: int | None = None) -> ModelView:
    """[L, nh, T, T] attention -> every head block-averaged (analysis.downsample_attention).

    Tiles have min(T, max_tokens) groups a side; by default model_view_size(T).
    """
    attentions = np.asarray(attentions)
    if attentions.ndim != 4 or attentions.shape[-1] != attentions.shape[-2]:
        raise ValueError(f"attention must have shape [layers, heads, T, T], got {list(attentions.shape)}")
    num_layers, num_heads, length, _ = attentions.shape
    if len(tokens) != length:
        raise ValueError(f"got {len(tokens)} tokens for {length} rows/columns of data")
    size = model_view_size(length) if max_tokens is None else min(length, max_tokens)
    tiles = np.empty((num_layers, num_heads, size, size), dtype=np.float32)
    labels: list[str] = []
    for layer, head in np.ndindex(num_layers, num_heads):
        tiles[layer, head], labels = analysis.downsample_attention(attentions[layer, head], size, tokens)
    return ModelView(tiles, labels)


# ---------------------------------------------------------------- neuron view


@dataclass(frozen=True)
class NeuronView:
    """Every step of one head's attention for one query token (analysis.attention_steps)."""

    steps: analysis.AttentionSteps
    tokens: list[str]
    query_index: int

    def to_frame(self) -> pd.DataFrame:
        """Per key token: q·k, q·k/√d, softmax weight; the vectors as key_i / weighted_value_i columns."""
        steps = self.steps
        frame = pd.DataFrame(
            {
                "key_index": np.arange(len(self.tokens)),
                "key": self.tokens,
                "q_dot_k": steps.dot,
                "scaled": steps.scaled,
                "weight": steps.weights,
            }
        )
        dims = steps.keys.shape[1]
        keys = pd.DataFrame(steps.keys, columns=[f"key_{i}" for i in range(dims)])
        weighted = pd.DataFrame(steps.weighted_values, columns=[f"weighted_value_{i}" for i in range(dims)])
        return pd.concat([frame, keys, weighted], axis=1)


def neuron_view(trace: PairTrace, layer: int, head: int, query_index: int) -> NeuronView:
    """analysis.attention_steps of one head of the trace and one query token."""
    steps = analysis.attention_steps(
        trace.queries[layer, head], trace.keys[layer, head], trace.values[layer, head], query_index
    )
    return NeuronView(steps, list(trace.tokens), query_index)


# ---------------------------------------------------------------- head statistics and rollout


@dataclass(frozen=True)
class HeadStatistics:
    """One row per (layer, head): analysis.attention_statistics of the trace (entropy, to_cls, …)."""

    table: pd.DataFrame

    def to_frame(self) -> pd.DataFrame:
        return self.table


def head_statistics(trace: PairTrace) -> HeadStatistics:
    """Summary numbers for every attention head of the trace (analysis.attention_statistics)."""
    return HeadStatistics(analysis.attention_statistics(trace.attentions, trace.tokens))


@dataclass(frozen=True)
class Rollout:
    """Attention rollout after one layer: row i, how much each input token flows into token i."""

    flow: np.ndarray  # [T, T]
    tokens: list[str]
    after: int  # layers multiplied in, 1 … L

    @property
    def title(self) -> str:
        return f"Attention rollout after layer {self.after}"

    def to_frame(self) -> pd.DataFrame:
        """Long table: query_index, query, key_index, key, weight."""
        return analysis.attention_to_csv_frame(self.flow, self.tokens)


def rollout(trace: PairTrace, after: int) -> Rollout:
    """analysis.attention_rollout of the trace's attentions, after layer `after` (1 … L)."""
    return Rollout(analysis.attention_rollout(trace.attentions)[after - 1], list(trace.tokens), after)
