"""Attention figures: single map, BertViz-style head view, model mosaic, neuron view, head stats."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from bertviz_lite.analysis import downsample_attention, unique_labels
from bertviz_lite.figures._common import (
    DIVERGING,
    SEQUENTIAL,
    as_matrix,
    category_axis,
    check_length,
    head_colour,
    rgba,
    symmetric_range,
    token_axis_height,
)

ATTENTION_HOVER = "%{y} → %{x}: %{z:.3f}<extra></extra>"
STAT_TITLES = {
    "entropy": "Mean attention entropy (nats)",
    "to_cls": "Share of attention on [CLS]",
    "to_sep": "Share of attention on [SEP]",
    "to_self": "Share of attention on the token itself",
    "to_prev": "Share of attention on the previous token",
    "to_next": "Share of attention on the next token",
}


def _stack(attn, ndim: int, shape_text: str) -> np.ndarray:
    attn = np.asarray(attn, dtype=np.float64)
    if attn.ndim != ndim or attn.shape[-1] != attn.shape[-2]:
        raise ValueError(f"attention must have shape {shape_text}, got {list(attn.shape)}")
    return attn


# ---------------------------------------------------------------- one map


def attention_heatmap(
    attn, q_tokens: Sequence[str], k_tokens: Sequence[str] | None = None, title: str = "Attention"
) -> go.Figure:
    """Heatmap of a [Tq, Tk] attention map; rows are queries, columns keys, z = attn exactly."""
    attn = as_matrix(attn, "attention")
    k_tokens = q_tokens if k_tokens is None else k_tokens
    check_length(q_tokens, attn.shape[0], "query tokens")
    check_length(k_tokens, attn.shape[1], "key tokens")
    fig = go.Figure(
        go.Heatmap(
            z=attn,
            x=unique_labels(k_tokens),
            y=unique_labels(q_tokens),
            colorscale=SEQUENTIAL,
            zmin=0,
            hovertemplate=ATTENTION_HOVER,
            colorbar={"title": {"text": "weight"}},
        )
    )
    fig.update_layout(
        title=title,
        height=token_axis_height(attn.shape[0]),
        xaxis={**category_axis(), "title": {"text": "key (attended to)"}, "side": "top"},
        yaxis={**category_axis(reverse=True), "title": {"text": "query (attending)"}},
    )
    return fig


def rollout_heatmap(rollout, tokens: Sequence[str], title: str = "Attention rollout") -> go.Figure:
    """Heatmap of a [T, T] rollout: row i shows how much each input token flows into token i."""
    fig = attention_heatmap(rollout, tokens, tokens, title)
    fig.update_layout(xaxis_title="input token", yaxis_title="token at this layer")
    fig.update_traces(colorbar={"title": {"text": "share"}})
    return fig


# ---------------------------------------------------------------- head view


def _select_lines(weights: np.ndarray, top_k: int, min_weight: float) -> tuple[np.ndarray, ...]:
    """(query, key, weight) of the lines to draw: weight > 0, >= min_weight and among the row's top_k."""
    keep = (weights > 0) & (weights >= min_weight)
    if top_k < weights.shape[1]:
        top = np.argpartition(-weights, top_k - 1, axis=1)[:, :top_k]
        in_top = np.zeros_like(keep)
        np.put_along_axis(in_top, top, True, axis=1)
        keep &= in_top
    queries, keys = np.nonzero(keep)
    return queries, keys, weights[queries, keys]


def _line_xy(queries: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Segments from (0, query) to (1, key), separated by NaN (sent to plotly as null gaps)."""
    x = np.tile(np.array([0.0, 1.0, np.nan], np.float32), queries.size)
    y = np.column_stack([queries, keys, np.full(queries.size, np.nan)]).ravel().astype(np.float32)
    return x, y  # float32 is exact for indices and halves the JSON


def _head_traces(weights: np.ndarray, head: int, top_k: int, min_weight: float, levels: int) -> list:
    """Line traces of one head, one per opacity level; the first one carries the legend entry."""
    queries, keys, values = _select_lines(weights, top_k, min_weight)
    level = np.clip(np.ceil(values * levels), 1, levels).astype(int)
    traces = []
    for lvl in range(1, levels + 1):
        chosen = level == lvl
        if not chosen.any() and (traces or lvl < levels):
            continue  # a head with no lines still gets one empty trace, for its legend entry
        x, y = _line_xy(queries[chosen], keys[chosen])
        traces.append(
            go.Scatter(
                x=x,
                y=y,
                mode="lines",
                name=f"head {head}",
                legendgroup=f"head {head}",
                showlegend=not traces,
                hoverinfo="skip",
                meta={"head": head, "level": lvl},
                line={"color": rgba(head_colour(head), lvl / levels), "width": 0.5 + 2.5 * lvl / levels},
            )
        )
    return traces


def _token_column(tokens: Sequence[str], x: float, side: str, focus_token: int | None) -> go.Scatter:
    length = len(tokens)
    sizes = np.full(length, 6.0)
    if focus_token is not None:
        sizes[focus_token] = 12.0
    return go.Scatter(
        x=np.full(length, x),
        y=np.arange(length),
        mode="markers+text" if length <= 128 else "markers",
        text=list(tokens),
        customdata=np.arange(length),
        textposition=f"middle {side}",
        marker={"size": sizes, "color": "#444"},
        name="queries" if side == "left" else "keys",
        showlegend=False,
        hovertemplate="%{text} (%{customdata})<extra>%{fullData.name}</extra>",
    )


def head_view(
    attn,
    tokens: Sequence[str],
    heads: Sequence[int] | None = None,
    focus_token: int | None = None,
    mask=None,
    top_k: int = 20,
    min_weight: float = 0.01,
    levels: int = 5,
) -> go.Figure:
    """BertViz-style head view of one layer: queries on the left, keys on the right, lines between.

    Args:
        attn: [H, T, T] attention of one layer.
        tokens: T token strings.
        heads: heads to draw (default all); each gets a colour and a legend entry that toggles it.
        focus_token: draw only the lines leaving this query token.
        mask: optional bool [T, T] of (query, key) cells to keep, e.g. from sentence_filter_mask.
        top_k: at most this many lines per query and head (keeps 512-token inputs fast).
        min_weight: lines below this weight are dropped.
        levels: weights are bucketed into this many opacity/width levels (one trace per level).
    """
    attn = _stack(attn, 3, "[heads, T, T]")
    num_heads, length, _ = attn.shape
    check_length(tokens, length, "tokens")
    heads = list(range(num_heads)) if heads is None else [int(h) for h in heads]
    if any(not 0 <= h < num_heads for h in heads):
        raise ValueError(f"heads {heads} must lie in 0..{num_heads - 1}")
    if focus_token is not None and not 0 <= focus_token < length:
        raise ValueError(f"focus_token {focus_token} is outside 0..{length - 1}")
    keep = np.ones((length, length), bool) if mask is None else np.asarray(mask, bool)
    if keep.shape != (length, length):
        raise ValueError(f"mask must be [{length}, {length}], got {list(keep.shape)}")
    if focus_token is not None:
        keep = keep & (np.arange(length) == focus_token)[:, None]
    fig = go.Figure()
    for head in heads:
        fig.add_traces(_head_traces(attn[head] * keep, head, top_k, min_weight, levels))
    fig.add_traces(
        [_token_column(tokens, 0.0, "left", focus_token), _token_column(tokens, 1.0, "right", None)]
    )
    fig.update_layout(
        title="Head view: each query token (left) to the key tokens it attends to (right)",
        height=token_axis_height(length, per_token=20, high=4000),
        legend_title_text="heads (click to toggle)",
        xaxis={"visible": False, "range": [-0.8, 1.8]},
        plot_bgcolor="white",
        yaxis={"visible": False, "autorange": "reversed"},
    )
    return fig


# ---------------------------------------------------------------- model view


def model_view(attn, tokens: Sequence[str], max_tokens: int = 64, tile_size: int = 90) -> go.Figure:
    """Every layer × head as a mosaic of small attention maps sharing one colour scale.

    Tiles are block-averaged to at most max_tokens × max_tokens (rows still sum to 1). Each tile's
    trace has name "layer l head h" and meta {"layer": l, "head": h}, so a click identifies it.
    """
    attn = _stack(attn, 4, "[layers, heads, T, T]")
    num_layers, num_heads, length, _ = attn.shape
    check_length(tokens, length, "tokens")
    fig = make_subplots(
        rows=num_layers,
        cols=num_heads,
        row_titles=[f"L{i}" for i in range(num_layers)],
        column_titles=[f"H{i}" for i in range(num_heads)],
        horizontal_spacing=0.004,
        vertical_spacing=min(0.01, 1 / max(num_layers - 1, 1)),
    )
    for layer in range(num_layers):
        for head in range(num_heads):
            tile, labels = downsample_attention(attn[layer, head], max_tokens, tokens)
            fig.add_trace(
                go.Heatmap(
                    z=tile,
                    x=labels,
                    y=labels,
                    coloraxis="coloraxis",
                    name=f"layer {layer} head {head}",
                    meta={"layer": layer, "head": head},
                    hovertemplate=f"layer {layer} head {head}<br>{ATTENTION_HOVER}",
                ),
                row=layer + 1,
                col=head + 1,
            )
    fig.update_xaxes(showticklabels=False, type="category")
    fig.update_yaxes(showticklabels=False, type="category", autorange="reversed")
    fig.update_layout(
        title="Model view: attention of every layer (rows) and head (columns)",
        coloraxis={"colorscale": SEQUENTIAL, "cmin": 0, "colorbar": {"title": {"text": "weight"}}},
        height=tile_size * num_layers + 120,
        width=tile_size * num_heads + 160,
        margin={"l": 20, "r": 60, "t": 80, "b": 20},
    )
    return fig


# ---------------------------------------------------------------- neuron view

_NEURON_TITLES = (
    "query q",
    "keys k",
    "q × k per dimension",
    "q · k and q · k / √d",
    "softmax weights",
    "weight × value",
    "output = Σ weight × value",
)


def _vector_heatmap(matrix: np.ndarray, y: list[str], limit: float, name: str) -> go.Heatmap:
    return go.Heatmap(
        z=matrix,
        x=np.arange(matrix.shape[1]),
        y=y,
        colorscale=DIVERGING,
        zmid=0,
        zmin=-limit,
        zmax=limit,
        showscale=False,
        name=name,
        hovertemplate="%{y}, dimension %{x}: %{z:.3f}<extra>" + name + "</extra>",
    )


def _score_bars(neuron: dict, labels: list[str]) -> list[go.Bar]:
    masked = ~np.isfinite(neuron["masked"])
    scaled_colours = np.where(masked, "#bbbbbb", "#1f77b4").tolist()
    bar = {"y": labels, "orientation": "h"}
    return [
        go.Bar(
            x=neuron["dot"],
            name="q · k",
            marker_color="#aec7e8",
            **bar,
            hovertemplate="%{y}: q · k = %{x:.3f}<extra></extra>",
        ),
        go.Bar(
            x=neuron["scaled"],
            name="q · k / √d (grey = masked)",
            marker_color=scaled_colours,
            **bar,
            hovertemplate="%{y}: scaled = %{x:.3f}<extra></extra>",
        ),
    ]


def neuron_view_figure(neuron: dict, tokens: Sequence[str], query_index: int) -> go.Figure:
    """The whole path of one query through one head, from analysis.neuron_view.

    Top: the query vector. Middle row, one line per key token: keys, q × k, the dot products
    (raw and scaled), softmax weights and weighted values. Bottom: the output vector.
    """
    keys = np.asarray(neuron["keys"])
    length = keys.shape[0]
    check_length(tokens, length, "tokens")
    labels = unique_labels(tokens)
    middle = max(0.5, min(0.9, length / (length + 4)))
    fig = make_subplots(
        rows=3,
        cols=5,
        row_heights=[(1 - middle) / 2, middle, (1 - middle) / 2],
        specs=[[{}, None, None, None, None], [{}, {}, {}, {}, {}], [None, None, None, None, {}]],
        subplot_titles=_NEURON_TITLES,
        horizontal_spacing=0.03,
        vertical_spacing=0.08,
    )
    qk_limit = symmetric_range(neuron["query"], keys)
    value_limit = symmetric_range(neuron["weighted_values"], neuron["output"])
    query_label = [f"q: {labels[query_index]}"]
    fig.add_trace(_vector_heatmap(neuron["query"][None, :], query_label, qk_limit, "query"), row=1, col=1)
    fig.add_trace(_vector_heatmap(keys, labels, qk_limit, "keys"), row=2, col=1)
    products = np.asarray(neuron["products"])
    fig.add_trace(_vector_heatmap(products, labels, symmetric_range(products), "q × k"), row=2, col=2)
    fig.add_traces(_score_bars(neuron, labels), rows=2, cols=3)
    fig.add_trace(
        go.Bar(
            x=neuron["weights"],
            y=labels,
            orientation="h",
            name="softmax weight",
            marker_color="#2ca02c",
            hovertemplate="%{y}: %{x:.3f}<extra></extra>",
        ),
        row=2,
        col=4,
    )
    fig.add_trace(
        _vector_heatmap(neuron["weighted_values"], labels, value_limit, "weight × value"), row=2, col=5
    )
    fig.add_trace(_vector_heatmap(neuron["output"][None, :], ["output"], value_limit, "output"), row=3, col=5)
    fig.update_yaxes(
        type="category", autorange="reversed", categoryorder="array", categoryarray=labels, row=2
    )
    for col in range(2, 6):
        fig.update_yaxes(showticklabels=False, row=2, col=col)
    fig.update_layout(
        title=f"Neuron view for query {labels[query_index]}",
        barmode="group",
        showlegend=True,
        height=token_axis_height(length, per_token=18) + 200,
        legend={"orientation": "h", "y": -0.05},
    )
    return fig


# ---------------------------------------------------------------- head statistics


def head_statistics_figure(df: pd.DataFrame, value: str = "entropy") -> go.Figure:
    """Heatmap layer × head of one column of analysis.head_statistics."""
    if value not in df:
        raise ValueError(f"column {value!r} is not in the head statistics ({', '.join(df.columns)})")
    table = df.pivot(index="layer", columns="head", values=value).sort_index().sort_index(axis=1)
    fig = go.Figure(
        go.Heatmap(
            z=table.to_numpy(dtype=float),
            x=[f"H{h}" for h in table.columns],
            y=[f"L{i}" for i in table.index],
            colorscale=SEQUENTIAL,
            hovertemplate="%{y} %{x}: %{z:.3f}<extra></extra>",
            colorbar={"title": {"text": value}},
        )
    )
    fig.update_layout(
        title=STAT_TITLES.get(value, value),
        xaxis={**category_axis(), "title": {"text": "head"}},
        yaxis={**category_axis(reverse=True), "title": {"text": "layer"}},
    )
    return fig
