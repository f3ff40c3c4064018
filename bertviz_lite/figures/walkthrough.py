"""Figures of the walkthrough's own steps: ids per token, one head's three stages, the residual stream."""

from __future__ import annotations

import copy
import functools
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from bertviz_lite.figures._common import (
    COLOUR_BAR_BELOW,
    NARROW_BAR_MARGIN,
    SEGMENT_COLOURS,
    SEQUENTIAL,
    category_axis,
    check_length,
)
from bertviz_lite.inspection.analysis import unique_labels
from bertviz_lite.inspection.walkthrough import OneHead, ResidualChanges
from bertviz_lite.text.display import plain_labels

MAX_ID_COLUMNS = 48  # tokens shown in the ids table; beyond that the labels no longer fit a screen


# Titles that fit one line of a 564-px figure (1024 x 768 with the sidebar open); the phone versions take two.
IDS_TITLE = "What BERT reads: token, position and segment ids (blue: A, orange: B)"
NARROW_IDS_TITLE = "What BERT reads: each token's position<br>and segment id (blue: A, orange: B)"
IDS_ROWS = ("token", "position id", "segment id")
NARROW_ROW = 24  # px a token's row takes in a phone's table (16-px text)


def ids_figure(
    tokens: Sequence[str], positions: Sequence[int], segments: Sequence[int], narrow: bool = False
) -> go.Figure:
    """A table of what BERT reads per token: the token, its position id and its segment id, coloured by sentence.

    narrow: for a phone's width: one row a token (22 columns of ~10 px ran their labels into each other), the
    title on two lines.
    """
    count = min(len(tokens), MAX_ID_COLUMNS)
    check_length(positions, len(tokens), "position ids")
    check_length(segments, len(tokens), "segment ids")
    segs = np.asarray(segments[:count], dtype=float)
    text = [plain_labels(tokens[:count]), [str(p) for p in positions[:count]], [str(int(s)) for s in segs]]
    colours = [[0, SEGMENT_COLOURS[0] + "33"], [1, SEGMENT_COLOURS[1] + "55"]]
    size = 16 if narrow or count <= 16 else 14 if count <= 26 else 10
    cells = {"text": text, "z": np.tile(segs, (3, 1)), "x": list(range(count)), "y": list(IDS_ROWS)}
    if narrow:
        cells = {
            "text": np.array(text).T.tolist(),
            "z": cells["z"].T,
            "x": [row.split()[0] for row in IDS_ROWS],
            "y": list(range(count)),
        }
    fig = go.Figure(
        go.Heatmap(
            **cells,
            texttemplate="%{text}",
            textfont={"size": size, "color": "#111111"},
            colorscale=colours,
            zmin=0,
            zmax=1,
            showscale=False,
            xgap=2,
            ygap=2,
            hovertemplate=("position %{y}, %{x}" if narrow else "position %{x}, %{y}")
            + ": %{text}<extra></extra>",
        )
    )
    if narrow:
        title, top = _phone_title(NARROW_IDS_TITLE, count, len(tokens))
        fig.update_layout(
            title=title,
            height=NARROW_ROW * count + top + 10,
            margin={"t": top, "b": 10, "l": 10, "r": 10},
            xaxis={**category_axis(), "side": "top"},
            yaxis={"visible": False, "autorange": "reversed"},
        )
    else:
        fig.update_layout(
            title=IDS_TITLE + (f"; first {count} of {len(tokens)} tokens" if count < len(tokens) else ""),
            height=260,
            margin={"t": 60, "b": 20, "l": 110, "r": 20},
            xaxis={"visible": False},
            yaxis={**category_axis(reverse=True)},
        )
    fig.update_layout(plot_bgcolor="white")
    return fig


def _phone_title(title: str, shown: int, total: int) -> tuple[str, int]:
    """A phone table's two-line title, with a third line when it shows only its first rows, and the top margin for
    it (plotly centres a title in the margin: a third line takes two rows' height)."""
    if shown == total:
        return title, 120
    return f"{title}<br>first {shown} of {total} tokens", 120 + 2 * NARROW_ROW


ONE_HEAD_TITLES = ("1. score q · k / √d", "2. softmax: weight", "3. |weight × value|")
NARROW_ONE_HEAD_TITLES = ("1. score", "2. weight", "3. |w × v|")  # three ~80-px plots on a phone


@functools.cache
def _three_plots(narrow: bool) -> dict:
    """The layout of one_head_figure's three side-by-side plots (axes, titles), made once: make_subplots takes ~10 ms
    and a lesson draws a figure for each of its heads (72 for a 6 × 12 model)."""
    titles = NARROW_ONE_HEAD_TITLES if narrow else ONE_HEAD_TITLES
    grid = make_subplots(rows=1, cols=3, shared_yaxes=True, subplot_titles=titles, horizontal_spacing=0.04)
    layout = grid.layout.to_plotly_json()
    layout.pop("template", None)  # each figure takes plotly's default template as it is made
    return layout


def one_head_figure(data: OneHead, narrow: bool = False) -> go.Figure:
    """Three bar charts over the keys of one query: q · k / √d, the softmax weight, and |weight × value|.

    narrow: for a phone's width: the title on two lines and short plot titles (they ran into each other).
    """
    labels = plain_labels(unique_labels(data.tokens))
    colours = ("#7f7f7f", "#1f77b4", "#2ca02c")
    values = (data.scores, data.weights, data.contributions)
    bars = [
        go.Bar(
            x=value,
            y=labels,
            orientation="h",
            marker_color=colour,
            name=name,
            showlegend=False,
            hovertemplate="%{y}: %{x:.3f}<extra>" + name + "</extra>",
            xaxis=f"x{suffix}",
            yaxis=f"y{suffix}",
        )
        for suffix, name, value, colour in zip(("", "2", "3"), ONE_HEAD_TITLES, values, colours, strict=True)
    ]
    fig = go.Figure(bars, layout=copy.deepcopy(_three_plots(narrow)))
    fig.update_yaxes(**category_axis(reverse=True), categoryorder="array", categoryarray=labels)
    query = f"the query of {labels[data.query_index]} against every key"
    fig.update_layout(
        title=f"Layer {data.layer}, head {data.head}:" + ("<br>" if narrow else " ") + query,
        height=max(300, 22 * len(labels) + 130) + (20 if narrow else 0),
        margin={"t": 110 if narrow else 90, "b": 30},
    )
    if narrow:
        fig.update_xaxes(nticks=3)
    return fig


RESIDUAL_TITLE = "How much each layer changes each token: |after − before| / |before|"
NARROW_RESIDUAL_TITLE = "How much each layer (column) changes<br>each token's vector (relative change)"


def residual_figure(data: ResidualChanges, narrow: bool = False) -> go.Figure:
    """Heatmap layers × tokens of how much each layer changes each token's vector (relative).

    narrow: for a phone's width: tokens × layers, one row a token (22 rotated labels under ~250 px ran into each
    other), the colour bar under the plot and the title on two lines.
    """
    change = np.asarray(data.change, dtype=np.float64)
    check_length(data.tokens, change.shape[1], "tokens")
    labels = plain_labels(unique_labels(data.tokens))
    layers = [f"layer {i}" for i in range(1, change.shape[0] + 1)]
    cells = {"z": change, "x": labels, "y": layers}
    if narrow:  # the first MAX_ID_COLUMNS tokens, as the ids table: a row each, 24 px
        cells = {
            "z": change.T[:MAX_ID_COLUMNS],
            "x": [f"L{i}" for i in range(1, change.shape[0] + 1)],
            "y": labels[:MAX_ID_COLUMNS],
        }
    fig = go.Figure(
        go.Heatmap(
            **cells,
            colorscale=SEQUENTIAL,
            zmin=0,
            colorbar={"title": {"text": "change"}, **(COLOUR_BAR_BELOW if narrow else {})},
            hovertemplate="%{y}, %{x}: changed by %{z:.0%}<extra></extra>",
        )
    )
    if narrow:
        shown = len(cells["y"])
        title, top = _phone_title(NARROW_RESIDUAL_TITLE, shown, len(labels))
        fig.update_layout(
            title=title,
            height=NARROW_ROW * shown + top + NARROW_BAR_MARGIN,
            margin={"t": top, "b": NARROW_BAR_MARGIN, "r": 10},
            xaxis={**category_axis(), "side": "top"},
            yaxis={**category_axis(reverse=True)},
        )
        return fig
    fig.update_layout(
        title=RESIDUAL_TITLE,
        height=max(280, 34 * change.shape[0] + 200),
        margin={"t": 60},
        xaxis={**category_axis(), "tickangle": -45},
        yaxis={**category_axis(reverse=True)},
    )
    return fig
