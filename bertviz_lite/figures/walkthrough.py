"""Figures of the walkthrough's own steps: ids per token, one head's three stages, the residual stream."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from bertviz_lite.figures._common import SEGMENT_COLOURS, SEQUENTIAL, category_axis, check_length
from bertviz_lite.inspection.analysis import unique_labels
from bertviz_lite.inspection.walkthrough import OneHead, ResidualChanges
from bertviz_lite.text.display import plain_labels

MAX_ID_COLUMNS = 48  # tokens shown in the ids table; beyond that the labels no longer fit a screen


def ids_figure(tokens: Sequence[str], positions: Sequence[int], segments: Sequence[int]) -> go.Figure:
    """A table of what BERT reads per token: the token, its position id and its segment id, coloured by sentence."""
    count = min(len(tokens), MAX_ID_COLUMNS)
    check_length(positions, len(tokens), "position ids")
    check_length(segments, len(tokens), "segment ids")
    segs = np.asarray(segments[:count], dtype=float)
    rows = ["token", "position id", "segment id"]
    text = [list(tokens[:count]), [str(p) for p in positions[:count]], [str(int(s)) for s in segs]]
    colours = [[0, SEGMENT_COLOURS[0] + "33"], [1, SEGMENT_COLOURS[1] + "55"]]
    fig = go.Figure(
        go.Heatmap(z=np.tile(segs, (3, 1)), x=list(range(count)), y=rows, text=text, texttemplate="%{text}",
                   textfont={"size": 16 if count <= 16 else 14 if count <= 26 else 10, "color": "#111111"},
                   colorscale=colours, zmin=0, zmax=1, showscale=False, xgap=2, ygap=2,
                   hovertemplate="position %{x}, %{y}: %{text}<extra></extra>")
    )
    title = "What BERT reads: token, position id and segment id (blue: sentence A, orange: B)"
    if count < len(tokens):
        title += f"; first {count} of {len(tokens)} tokens"
    fig.update_layout(title=title, height=260, margin={"t": 60, "b": 20, "l": 110, "r": 20},
                      xaxis={"visible": False}, yaxis={**category_axis(reverse=True)}, plot_bgcolor="white")
    return fig


def one_head_figure(data: OneHead) -> go.Figure:
    """Three bar charts over the keys of one query: q · k / √d, the softmax weight, and |weight × value|."""
    labels = plain_labels(unique_labels(data.tokens))
    titles = ("1. score q · k / √d", "2. softmax: weight", "3. |weight × value|")
    fig = make_subplots(rows=1, cols=3, shared_yaxes=True, subplot_titles=titles, horizontal_spacing=0.04)
    colours = ("#7f7f7f", "#1f77b4", "#2ca02c")
    values = (data.scores, data.weights, data.contributions)
    for col, (name, value, colour) in enumerate(zip(titles, values, colours, strict=True), start=1):
        fig.add_trace(go.Bar(x=value, y=labels, orientation="h", marker_color=colour, name=name, showlegend=False,
                             hovertemplate="%{y}: %{x:.3f}<extra>" + name + "</extra>"), row=1, col=col)
    fig.update_yaxes(**category_axis(reverse=True), categoryorder="array", categoryarray=labels)
    fig.update_layout(
        title=f"Layer {data.layer}, head {data.head}: the query of {labels[data.query_index]} against every key",
        height=max(300, 22 * len(labels) + 130), margin={"t": 90, "b": 30},
    )
    return fig


def residual_figure(data: ResidualChanges) -> go.Figure:
    """Heatmap layers × tokens of how much each layer changes each token's vector (relative)."""
    change = np.asarray(data.change, dtype=np.float64)
    check_length(data.tokens, change.shape[1], "tokens")
    layers = [f"layer {i}" for i in range(1, change.shape[0] + 1)]
    fig = go.Figure(
        go.Heatmap(z=change, x=plain_labels(unique_labels(data.tokens)), y=layers, colorscale=SEQUENTIAL, zmin=0,
                   colorbar={"title": {"text": "change"}},
                   hovertemplate="%{y}, %{x}: changed by %{z:.0%}<extra></extra>")
    )
    fig.update_layout(
        title="How much each layer changes each token's vector: |after − before| / |before|",
        height=max(280, 34 * change.shape[0] + 200), margin={"t": 60},
        xaxis={**category_axis(), "tickangle": -45}, yaxis={**category_axis(reverse=True)},
    )
    return fig
