"""Attention and embedding analysis on plain numpy arrays (one example, no batch axis).

Every function accepts numpy arrays or anything `np.asarray` understands (CPU torch tensors
included) and returns numpy arrays or pandas DataFrames. Shapes use T = tokens, L = layers,
H = heads (or hidden size where it says so), d = head size. The views (inspection/views/) hand them a trace's
arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

SENTENCE_FILTERS = ("All", "A→A", "A→B", "B→A", "B→B")


def unique_labels(tokens: Sequence[str]) -> list[str]:
    """Label each token with its position, e.g. "the (3)", so equal tokens stay apart on an axis."""
    return [f"{token} ({i})" for i, token in enumerate(tokens)]


# ---------------------------------------------------------------- sentence filter


def sentence_ids(token_type_ids, special_tokens_mask) -> np.ndarray:
    """Sentence of each token: 0 = A, 1 = B. Shape [T].

    Ordinary tokens take their segment id. A special token takes the sentence of the nearest
    ordinary token before it, so [CLS] (nothing before it) and the first [SEP] belong to A and the
    final [SEP] to B, whatever segment id a tokenizer gave them.
    """
    segments = np.asarray(token_type_ids).astype(int).reshape(-1)
    special = np.asarray(special_tokens_mask).astype(bool).reshape(-1)
    if segments.shape != special.shape:
        raise ValueError(
            f"token_type_ids ({segments.shape[0]}) and special_tokens_mask ({special.shape[0]}) "
            "must have the same length"
        )
    sentence = np.zeros_like(segments)
    current = 0
    for i, (segment, is_special) in enumerate(zip(segments, special, strict=True)):
        if not is_special:
            current = int(segment != 0)
        sentence[i] = current
    return sentence


def sentence_filter_mask(
    token_type_ids, special_tokens_mask, sentence_filter: str = "All", attention_mask=None
) -> np.ndarray:
    """Which (query, key) cells belong to a sentence pair such as "A→B". Shape bool [T, T].

    Rows are queries, columns keys; "A→B" keeps queries in sentence A attending to keys in B.
    Sentence membership follows `sentence_ids` ([CLS] and the first [SEP] in A, final [SEP] in B).
    Positions with `attention_mask == 0` (padding) are dropped from every filter, "All" included.
    """
    if sentence_filter not in SENTENCE_FILTERS:
        raise ValueError(f"sentence filter {sentence_filter!r} is not one of {', '.join(SENTENCE_FILTERS)}")
    sentence = sentence_ids(token_type_ids, special_tokens_mask)
    valid = _valid_positions(attention_mask, sentence.shape[0])
    if sentence_filter == "All":
        queries = valid
        keys = valid
    else:
        query_sentence = "AB".index(sentence_filter[0])
        key_sentence = "AB".index(sentence_filter[-1])
        queries = (sentence == query_sentence) & valid
        keys = (sentence == key_sentence) & valid
    return queries[:, None] & keys[None, :]


def _valid_positions(attention_mask, length: int) -> np.ndarray:
    if attention_mask is None:
        return np.ones(length, dtype=bool)
    valid = np.asarray(attention_mask).astype(bool).reshape(-1)
    if valid.shape[0] != length:
        raise ValueError(f"attention_mask has {valid.shape[0]} positions but there are {length} tokens")
    return valid


# ---------------------------------------------------------------- head statistics

STATISTICS = ("entropy", "to_cls", "to_sep", "to_self", "to_prev", "to_next")


def _attention_stack(attentions) -> np.ndarray:
    """attentions as an array [L, H, T, T] in its own dtype (a float64 copy of 512 tokens is 150 MB)."""
    attentions = np.asarray(attentions)
    if attentions.ndim != 4 or attentions.shape[-1] != attentions.shape[-2]:
        raise ValueError(f"attention must have shape [layers, heads, T, T], got {list(attentions.shape)}")
    return attentions


def _row_entropy(attn: np.ndarray) -> np.ndarray:
    """Entropy in nats of each attention row, 0·log 0 taken as 0. [..., T, T] -> [..., T]."""
    safe = np.where(attn > 0, attn, 1.0)
    return -(attn * np.log(safe)).sum(axis=-1)


def _masked_row_mean(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Mean of values [H, T] over the query rows selected by rows bool [T]; 0 when none are."""
    if not rows.any():
        return np.zeros(values.shape[:-1])
    return values[..., rows].mean(axis=-1)


def _layer_statistics(attn: np.ndarray, tokens: np.ndarray, valid: np.ndarray) -> dict[str, np.ndarray]:
    """STATISTICS of each head of one layer's attention [H, T, T] (float64): name -> [H]."""
    num_heads = attn.shape[0]
    prev = np.concatenate([np.zeros((num_heads, 1)), np.diagonal(attn, -1, -2, -1)], axis=-1)
    next_ = np.concatenate([np.diagonal(attn, 1, -2, -1), np.zeros((num_heads, 1))], axis=-1)
    has_prev = valid & np.concatenate([[False], valid[:-1]])
    has_next = valid & np.concatenate([valid[1:], [False]])
    return {
        "entropy": _masked_row_mean(_row_entropy(attn), valid),
        "to_cls": _masked_row_mean(attn[..., tokens == "[CLS]"].sum(axis=-1), valid),
        "to_sep": _masked_row_mean(attn[..., tokens == "[SEP]"].sum(axis=-1), valid),
        "to_self": _masked_row_mean(np.diagonal(attn, axis1=-2, axis2=-1), valid),
        "to_prev": _masked_row_mean(prev, has_prev),
        "to_next": _masked_row_mean(next_, has_next),
    }


def attention_statistics(attentions, tokens: Sequence[str], attention_mask=None) -> pd.DataFrame:
    """Summary numbers for every attention head, computed one layer at a time.

    Args:
        attentions: [L, H, T, T] attention probabilities (rows = queries).
        tokens: T token strings; "[CLS]" and "[SEP]" are found by their text.
        attention_mask: optional [T], 1 for real tokens, 0 for padding; padded query rows and
            padded neighbours are left out of the means.

    Returns:
        One row per (layer, head) with columns layer, head, entropy (mean row entropy in nats),
        to_cls, to_sep (attention mass on those tokens), to_self, to_prev, to_next (mass on the
        token itself / the one before / the one after). to_prev and to_next average only over
        queries that have a real previous / next token.
    """
    attentions = _attention_stack(attentions)
    num_layers, num_heads, length, _ = attentions.shape
    if len(tokens) != length:
        raise ValueError(f"got {len(tokens)} tokens for attention over {length} positions")
    valid = _valid_positions(attention_mask, length)
    token_array = np.asarray(tokens, dtype=object)
    layers = [_layer_statistics(np.asarray(a, dtype=np.float64), token_array, valid) for a in attentions]
    layer, head = np.meshgrid(np.arange(num_layers), np.arange(num_heads), indexing="ij")
    frame = {"layer": layer.ravel(), "head": head.ravel()}
    frame.update({name: np.concatenate([stats[name] for stats in layers]) for name in STATISTICS})
    return pd.DataFrame(frame)


# ---------------------------------------------------------------- rollout


def _normalise_rows(matrix: np.ndarray) -> np.ndarray:
    totals = matrix.sum(axis=-1, keepdims=True)
    return np.divide(matrix, totals, out=np.zeros_like(matrix), where=totals > 0)


def attention_rollout(attentions, add_residual: bool = True) -> np.ndarray:
    """Attention rollout (Abnar & Zuidema, 2020) after every layer.

    Heads are averaged; with `add_residual` each layer becomes 0.5·A + 0.5·I (the skip
    connection) with rows renormalised; layers are then multiplied, rollout[l] = A_l · rollout[l-1].

    Args:
        attentions: [L, H, T, T] attention probabilities.

    Returns:
        [L, T, T]: rollout[l][i, j] = how much input token j flows into token i after layer l.
    """
    per_layer = np.stack([np.asarray(a, dtype=np.float64).mean(axis=0) for a in _attention_stack(attentions)])
    if add_residual:
        per_layer = 0.5 * per_layer + 0.5 * np.eye(per_layer.shape[-1])
    per_layer = _normalise_rows(per_layer)
    rollout = np.empty_like(per_layer)
    rollout[0] = per_layer[0]
    for layer in range(1, per_layer.shape[0]):
        rollout[layer] = per_layer[layer] @ rollout[layer - 1]
    return rollout


# ---------------------------------------------------------------- softmax


def softmax(scores) -> np.ndarray:
    """Softmax over the last axis, in float64; -inf scores get weight 0, a row of only -inf all zeros."""
    scores = np.asarray(scores, dtype=np.float64)
    finite = np.isfinite(scores)
    top = np.where(finite, scores, -np.inf).max(axis=-1, keepdims=True)
    shifted = scores - np.where(np.isfinite(top), top, 0.0)
    exp = np.exp(shifted, where=finite, out=np.zeros_like(scores))
    total = exp.sum(axis=-1, keepdims=True)
    return np.divide(exp, total, out=np.zeros_like(exp), where=total > 0)


@dataclass(frozen=True)
class AttentionSteps:
    """Every step of one head's attention for one query token, in float64 (T keys, d head size)."""

    query: np.ndarray  # [d]
    keys: np.ndarray  # [T, d]
    values: np.ndarray  # [T, d]
    products: np.ndarray  # [T, d] q * k per element
    dot: np.ndarray  # [T] q · k
    scaled: np.ndarray  # [T] dot / sqrt(d)
    masked: np.ndarray  # [T] scaled, -inf on masked keys
    weights: np.ndarray  # [T] softmax of masked: the model's attention row
    weighted_values: np.ndarray  # [T, d] weights[:, None] * values
    output: np.ndarray  # [d] the sum of weighted_values


def attention_steps(q, k, v, query_index: int, key_mask=None) -> AttentionSteps:
    """Every step of one head's attention ([T, d] q, k, v) for one query token; key_mask: optional [T], 1 for keys
    that may be attended to, 0 for padding."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    if q.ndim != 2 or q.shape != k.shape or k.shape[0] != v.shape[0]:
        raise ValueError(f"q, k, v must be [T, d] with matching T; got {q.shape}, {k.shape}, {v.shape}")
    if not 0 <= query_index < q.shape[0]:
        raise ValueError(f"query_index {query_index} is outside 0..{q.shape[0] - 1}")
    query = q[query_index]
    products = query[None, :] * k
    dot = products.sum(axis=-1)
    scaled = dot / np.sqrt(q.shape[-1])
    masked = np.where(_valid_positions(key_mask, k.shape[0]), scaled, -np.inf)
    weights = softmax(masked)
    weighted_values = weights[:, None] * v
    return AttentionSteps(
        query, k, v, products, dot, scaled, masked, weights, weighted_values, weighted_values.sum(axis=0)
    )


# ---------------------------------------------------------------- downsampling


def _group_label(tokens: Sequence[str] | None, start: int, stop: int) -> str:
    """Label tokens[start:stop] as "the…dog (5-9)", or "the (5)" for a single token."""
    if stop - start == 1:
        return f"{tokens[start] if tokens is not None else start} ({start})"
    if tokens is None:
        return f"{start}-{stop - 1}"
    return f"{tokens[start]}…{tokens[stop - 1]} ({start}-{stop - 1})"


def downsample_attention(
    attn, max_size: int, tokens: Sequence[str] | None = None
) -> tuple[np.ndarray, list[str]]:
    """Block-average a [T, T] attention map into at most max_size × max_size groups.

    Tokens are split into contiguous groups of near-equal size. A cell is the mean over the
    group's query rows of the summed weight on the key group, so rows still sum to 1.

    Returns:
        (attn_small [G, G], labels [G]) with G = min(T, max_size); labels like "the…dog (5-9)".
    """
    attn = np.asarray(attn, dtype=np.float64)
    if attn.ndim != 2 or attn.shape[0] != attn.shape[1]:
        raise ValueError(f"attention must have shape [T, T], got {list(attn.shape)}")
    if max_size < 1:
        raise ValueError(f"max_size must be at least 1, got {max_size}")
    length = attn.shape[0]
    groups = min(length, max_size)
    bounds = np.arange(groups + 1) * length // groups  # integer split: no group is empty
    starts = bounds[:-1]
    stops = bounds[1:]
    key_sums = np.add.reduceat(attn, starts, axis=1)  # (T, G)
    small = np.add.reduceat(key_sums, starts, axis=0) / (stops - starts)[:, None]
    labels = [_group_label(tokens, int(a), int(b)) for a, b in zip(starts, stops, strict=True)]
    return small, labels


# ---------------------------------------------------------------- embeddings


def cosine_similarity_matrix(x) -> np.ndarray:
    """Cosine similarity between every pair of rows of x [N, D] -> [N, N]; zero rows give 0."""
    x = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    unit = np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)
    return np.clip(unit @ unit.T, -1.0, 1.0)


def pca_2d(x) -> np.ndarray:
    """Project rows of x [N, D] onto their first two principal components -> [N, 2].

    Uses an SVD of the centred data. Each component's sign is fixed so that its largest
    loading is positive, which makes the result deterministic. Missing components are 0.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"pca_2d needs a [N, D] matrix, got shape {list(x.shape)}")
    centred = x - x.mean(axis=0, keepdims=True)
    _, _, components = np.linalg.svd(centred, full_matrices=False)
    components = components[:2]
    largest = components[np.arange(components.shape[0]), np.abs(components).argmax(axis=1)]
    components = components * np.where(largest < 0, -1.0, 1.0)[:, None]
    points = np.zeros((x.shape[0], 2))
    points[:, : components.shape[0]] = centred @ components.T
    return points


def sinusoidal_position_table(num_positions: int, dim: int) -> np.ndarray:
    """Fixed position encodings of Vaswani et al. (2017): [num_positions, dim] float32.

    table[pos, 2i] = sin(pos / 10000^(2i/dim)) and table[pos, 2i+1] = cos(pos / 10000^(2i/dim));
    the same table the model uses when position_embedding_type is "sinusoidal".
    """
    if num_positions < 0 or dim < 1:
        raise ValueError(f"need num_positions >= 0 and dim >= 1, got {num_positions} and {dim}")
    from bertviz_lite.model.embeddings import sinusoidal_position_table as table

    return table(num_positions, dim).numpy()


EMBEDDING_PARTS = {
    "token_norm": "token embedding",
    "position_norm": "position embedding",
    "segment_norm": "segment embedding",
    "sum_norm": "sum",
    "layer_norm_norm": "after LayerNorm",
}


def embedding_component_norms(
    token, position, segment, summed, layer_norm, tokens: Sequence[str] | None = None
) -> pd.DataFrame:
    """L2 norm of each embedding part for every token.

    Args:
        token, position, segment, summed, layer_norm: [T, H] embedding parts of one example.
        tokens: optional T token strings.

    Returns:
        One row per token: index, token, then token_norm, position_norm, segment_norm, sum_norm,
        layer_norm_norm (see EMBEDDING_PARTS for plain-word names).
    """
    parts = [np.asarray(p, dtype=np.float64) for p in (token, position, segment, summed, layer_norm)]
    shapes = {p.shape for p in parts}
    if len(shapes) != 1 or parts[0].ndim != 2:
        raise ValueError(f"embedding parts must all be [T, H]; got shapes {[list(p.shape) for p in parts]}")
    length = parts[0].shape[0]
    frame = pd.DataFrame({"index": np.arange(length), "token": _token_column(tokens, length)})
    for column, part in zip(EMBEDDING_PARTS, parts, strict=True):
        frame[column] = np.linalg.norm(part, axis=-1)
    return frame


def _token_column(tokens: Sequence[str] | None, length: int) -> list[str]:
    if tokens is None:
        return [str(i) for i in range(length)]
    if len(tokens) != length:
        raise ValueError(f"got {len(tokens)} tokens for {length} positions")
    return list(tokens)


# ---------------------------------------------------------------- tables for download


def attention_to_csv_frame(
    attn, tokens: Sequence[str], key_tokens: Sequence[str] | None = None
) -> pd.DataFrame:
    """Long table of an attention map [Tq, Tk]: query_index, query, key_index, key, weight."""
    attn = np.asarray(attn, dtype=np.float64)
    if attn.ndim != 2:
        raise ValueError(f"attention must have shape [T, T], got {list(attn.shape)}")
    queries = _token_column(tokens, attn.shape[0])
    keys = _token_column(key_tokens if key_tokens is not None else tokens, attn.shape[1])
    query_index, key_index = np.meshgrid(np.arange(attn.shape[0]), np.arange(attn.shape[1]), indexing="ij")
    return pd.DataFrame(
        {
            "query_index": query_index.ravel(),
            "query": np.asarray(queries, dtype=object)[query_index.ravel()],
            "key_index": key_index.ravel(),
            "key": np.asarray(keys, dtype=object)[key_index.ravel()],
            "weight": attn.ravel(),
        }
    )
