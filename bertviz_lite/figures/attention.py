"""Attention figures: single map, BertViz-style head view, neuron view, head statistics (the model view: model_view.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from bertviz_lite.figures._common import (
    COLOUR_BAR_BELOW,
    DIVERGING,
    LEGEND_BELOW,
    NARROW_BAR_MARGIN,
    SEQUENTIAL,
    as_matrix,
    category_axis,
    check_length,
    head_colour,
    rgba,
    symmetric_range,
    token_axis_height,
)
from bertviz_lite.inspection.analysis import unique_labels
from bertviz_lite.text.display import plain_labels

# What `bertviz_lite.figures` offers at its top (its __init__ lists them by name).
__all__ = [
    "attention_map_figure",
    "head_statistics_figure",
    "head_view_figure",
    "neuron_view_figure",
    "rollout_figure",
]

if TYPE_CHECKING:
    from bertviz_lite.inspection.analysis import AttentionSteps
    from bertviz_lite.inspection.views.attention import (
        AttentionMap,
        HeadStatistics,
        HeadViewLinks,
        NeuronView,
        Rollout,
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
MAX_TICK_LABELS = 64  # beyond this, every token label on an axis is unreadable and slow to lay out


# ---------------------------------------------------------------- one map


def _attention_heatmap(
    attn,
    q_tokens: Sequence[str],
    k_tokens: Sequence[str] | None = None,
    title: str = "Attention",
    axis_titles: bool = True,
    narrow: bool = False,
) -> go.Figure:
    """Heatmap of a [Tq, Tk] attention map; rows are queries, columns keys, z = attn exactly.

    axis_titles=False leaves out "key"/"query" (a narrow figure has no room beside its token labels).
    narrow: for a column under 500 px or a phone: the colour bar lies flat under the map (upright at the right of a
    200-px column, its labels were cut at the figure's edge: 0.25 read "0.2").
    The keys label the top axis, so a title goes above them. Past 2 × MAX_TICK_LABELS tokens an axis
    shows about MAX_TICK_LABELS labels (hovering still names every cell; plotly draws 512 in half the time).
    """
    attn = as_matrix(attn, "attention")
    k_tokens = q_tokens if k_tokens is None else k_tokens
    check_length(q_tokens, attn.shape[0], "query tokens")
    check_length(k_tokens, attn.shape[1], "key tokens")
    long = max(attn.shape) > 2 * MAX_TICK_LABELS
    ticks = {"nticks": MAX_TICK_LABELS} if long else {}
    # The layout in one piece: plotly validates it once (five update_layout calls cost 5 ms a figure, a burst's CPU).
    layout = {
        "title": {"text": title, **({"y": 0.995, "yanchor": "top"} if title else {})},
        "height": token_axis_height(attn.shape[0]) + (80 if title else 0),
        # automargin: in a narrow column long token labels would otherwise run into the axis titles
        "xaxis": {
            **category_axis(),
            "title": {"text": "key (attended to)" if axis_titles else ""},
            "side": "top",
            "automargin": True,
            **ticks,
        },
        "yaxis": {
            **category_axis(reverse=True),
            "title": {"text": "query (attending)" if axis_titles else ""},
            "automargin": True,
            **ticks,
        },
        "margin": {**({"t": 160} if title else {}), **({"b": NARROW_BAR_MARGIN} if narrow else {})},
    }
    if narrow:
        layout["height"] += NARROW_BAR_MARGIN
    heatmap = go.Heatmap(
        z=attn,
        x=plain_labels(unique_labels(k_tokens)),  # a vocab token may hold <a href=…>: shown as text
        y=plain_labels(unique_labels(q_tokens)),
        colorscale=SEQUENTIAL,
        zmin=0,
        hovertemplate=ATTENTION_HOVER,
        colorbar={"title": {"text": "weight"}, **(COLOUR_BAR_BELOW if narrow else {})},
    )
    return go.Figure(heatmap, layout=layout)


def _rollout_heatmap(rollout, tokens: Sequence[str], title: str = "Attention rollout") -> go.Figure:
    """Heatmap of a [T, T] rollout: row i shows how much each input token flows into token i."""
    fig = _attention_heatmap(rollout, tokens, tokens, title)
    fig.update_layout(xaxis_title="input token", yaxis_title="token at this layer")
    fig.update_traces(colorbar={"title": {"text": "share"}})
    return fig


# ---------------------------------------------------------------- head view


def _line_xy(queries: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Segments from (0, query) to (1, key), separated by NaN (sent to plotly as null gaps)."""
    x = np.tile(np.array([0.0, 1.0, np.nan], np.float32), queries.size)
    y = np.column_stack([queries, keys, np.full(queries.size, np.nan)]).ravel().astype(np.float32)
    return x, y  # float32 is exact for indices and halves the JSON


def _legend_entry(head: int) -> go.Scatter:
    """A one-gap line trace that only carries the head's legend entry, its swatch in the head's full colour.

    It needs a point: plotly hides a trace without data, legend entry included.
    """
    return go.Scatter(
        x=[None],
        y=[None],
        mode="lines",
        name=f"head {head}",
        legendgroup=f"head {head}",
        showlegend=True,
        hoverinfo="skip",
        meta={"head": head, "level": 0},
        line={"color": rgba(head_colour(head), 1.0), "width": 3},
    )


def _head_traces(queries: np.ndarray, keys: np.ndarray, weights: np.ndarray, head: int, levels: int) -> list:
    """The head's legend entry, then its line traces, one per opacity level that has lines."""
    level = np.clip(np.ceil(weights * levels), 1, levels).astype(int)
    traces = [_legend_entry(head)]
    for lvl in range(1, levels + 1):
        chosen = level == lvl
        if not chosen.any():
            continue
        x, y = _line_xy(queries[chosen], keys[chosen])
        traces.append(
            go.Scatter(
                x=x,
                y=y,
                mode="lines",
                name=f"head {head}",
                legendgroup=f"head {head}",
                showlegend=False,
                hoverinfo="skip",
                meta={"head": head, "level": lvl},
                line={"color": rgba(head_colour(head), lvl / levels), "width": 0.5 + 2.5 * lvl / levels},
            )
        )
    return traces


HOVER_LINES = 6  # strongest lines listed when hovering a token of the head view


def _strongest_lines(links: HeadViewLinks, side: str) -> list[str]:
    """Per token, its strongest drawn lines as hover text: "→ fox 0.41 (head 3)" (queries) or "← …" (keys)."""
    found: list[list[tuple[float, str]]] = [[] for _ in links.tokens]
    for head, (queries, keys, weights) in zip(links.heads, links.links, strict=True):
        ends, others = (queries, keys) if side == "left" else (keys, queries)
        for end, other, weight in zip(ends.tolist(), others.tolist(), weights.tolist(), strict=True):
            found[end].append((weight, f"{links.tokens[other]} {weight:.2f} (head {head})"))
    arrow = "→" if side == "left" else "←"
    return [
        "<br>".join(f"{arrow} {text}" for _, text in sorted(lines, reverse=True)[:HOVER_LINES]) or "no lines"
        for lines in found
    ]


def _token_column(links: HeadViewLinks, x: float, side: str) -> go.Scatter:
    tokens = links.tokens
    length = len(links.tokens)
    sizes = np.full(length, 7.0)
    if side == "left" and links.focus_token is not None:
        sizes[links.focus_token] = 13.0
    return go.Scatter(
        x=np.full(length, x),
        y=np.arange(length),
        mode="markers+text" if length <= 128 else "markers",
        text=plain_labels(tokens),
        customdata=np.arange(length),
        hovertext=_strongest_lines(links, side),
        textposition=f"middle {side}",
        marker={"size": sizes, "color": "#444"},
        cliponaxis=False,  # the first and last labels stand out of the rows' range by half a line
        name="queries" if side == "left" else "keys",
        showlegend=False,
        hovertemplate="<b>%{text}</b> (%{customdata})<br>%{hovertext}<extra>%{fullData.name}</extra>",
    )


HEAD_VIEW_TITLE = "Head view: each query token (left) to the key tokens it attends to (right)"
NARROW_HEAD_VIEW_TITLE = "Head view: each query token (left)<br>to the key tokens it attends to (right)"
NARROW_LEGEND_ROWS = 110  # px under a phone's head view: the legend's title and 12 heads, five a row


def head_view_figure(links: HeadViewLinks, levels: int = 5, narrow: bool = False) -> go.Figure:
    """BertViz-style head view of one layer (views.select_links): queries left, keys right, lines between.

    Each head gets a distinct colour and a legend entry: a click shows that head alone, a second click all
    of them. A line's opacity and width show its weight in `levels` steps (one trace per step); hovering a
    token lists its strongest lines. layout.meta = {"top_k", "start", "stop"} of the links.
    narrow: for a phone's width: the title on two lines (on one it ran past the figure's right edge), the legend
    in rows under the lines (beside them it took a third of the width, leaving the lines 80 px).
    """
    tokens = links.tokens
    fig = go.Figure()
    for head, (queries, keys, weights) in zip(links.heads, links.links, strict=True):
        fig.add_traces(_head_traces(queries, keys, weights, head, levels))
    fig.add_traces([_token_column(links, 0.0, "left"), _token_column(links, 1.0, "right")])
    fig.update_layout(
        title=NARROW_HEAD_VIEW_TITLE if narrow else HEAD_VIEW_TITLE,
        height=token_axis_height(len(tokens), per_token=20, high=4000) + (24 if narrow else 0),
        # One click on a head shows it alone (click it again for all); a double click hides just that head.
        legend={
            "title": {"text": "heads: click = only this,<br>again = all"},
            "itemclick": "toggleothers",
            "itemdoubleclick": "toggle",
            "itemsizing": "constant",
            "tracegroupgap": 0,
        },  # 12 heads fit a slide
        # No axes: the height goes to the token rows (plotly's default margins left 13 px a row on a slide and
        # the labels ran into each other).
        margin={"t": 80 if narrow else 56, "b": 8, "l": 8, "r": 8},
        xaxis={"visible": False, "range": [-0.8, 1.8]},
        plot_bgcolor="white",
        yaxis={
            "visible": False,
            "range": [len(tokens) - 0.5, -0.5],
        },  # top to bottom, no padding beyond the rows
        meta={"top_k": links.top_k, "start": links.start, "stop": links.stop},
    )
    if narrow:
        fig.update_layout(
            legend={
                **LEGEND_BELOW,
                "title": {"text": "heads: click = only this, again = all", "side": "top"},
            },
            height=fig.layout.height + NARROW_LEGEND_ROWS,
            margin={"b": NARROW_LEGEND_ROWS},
            xaxis={"range": [-0.5, 1.5]},
        )  # ~90 px a side for the labels, the rest for the lines
    return fig


# ---------------------------------------------------------------- neuron view

# Short: five columns share a 1024-px screen, and the output's title sits above the softmax column's ticks.
_NEURON_TITLES = (
    "query q",
    "keys k",
    "q × k",
    "q · k, q · k / √d",
    "softmax",
    "weight × value",
    "output Σ",
)
# On a phone the five middle columns get ~50 px each: a title each of at most ~6 characters (the legend below
# names the bars).
_NARROW_NEURON_TITLES = ("query q", "keys", "q × k", "q · k", "weight", "× value", "output Σ")


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


def _score_bars(neuron: AttentionSteps, labels: list[str]) -> list[go.Bar]:
    masked = ~np.isfinite(neuron.masked)
    scaled_colours = np.where(masked, "#bbbbbb", "#1f77b4").tolist()
    bar = {"y": labels, "orientation": "h"}
    return [
        go.Bar(
            x=neuron.dot,
            name="q · k",
            marker_color="#aec7e8",
            **bar,
            hovertemplate="%{y}: q · k = %{x:.3f}<extra></extra>",
        ),
        go.Bar(
            x=neuron.scaled,
            name="q · k / √d (grey = masked)",
            marker_color=scaled_colours,
            **bar,
            hovertemplate="%{y}: scaled = %{x:.3f}<extra></extra>",
        ),
    ]


def _add_neuron_traces(fig: go.Figure, neuron: AttentionSteps, labels: list[str], query_index: int) -> None:
    """The query (top), one row per key through the head's stages (middle), the output (bottom)."""
    keys = np.asarray(neuron.keys)
    qk_limit = symmetric_range(neuron.query, keys)
    value_limit = symmetric_range(neuron.weighted_values, neuron.output)
    query_label = [f"q: {labels[query_index]}"]
    fig.add_trace(_vector_heatmap(neuron.query[None, :], query_label, qk_limit, "query"), row=1, col=1)
    fig.add_trace(_vector_heatmap(keys, labels, qk_limit, "keys"), row=2, col=1)
    products = np.asarray(neuron.products)
    fig.add_trace(_vector_heatmap(products, labels, symmetric_range(products), "q × k"), row=2, col=2)
    fig.add_traces(_score_bars(neuron, labels), rows=2, cols=3)
    weights = go.Bar(
        x=neuron.weights,
        y=labels,
        orientation="h",
        name="softmax weight",
        marker_color="#2ca02c",
        hovertemplate="%{y}: %{x:.3f}<extra></extra>",
    )
    fig.add_trace(weights, row=2, col=4)
    fig.add_trace(
        _vector_heatmap(neuron.weighted_values, labels, value_limit, "weight × value"), row=2, col=5
    )
    fig.add_trace(_vector_heatmap(neuron.output[None, :], ["output"], value_limit, "output"), row=3, col=5)


def neuron_view_figure(data: NeuronView, narrow: bool = False) -> go.Figure:
    """The whole path of one query through one head (views.neuron_view).

    Top: the query vector. Middle row, one line per key token: keys, q × k, the dot products
    (raw and scaled), softmax weights and weighted values. Bottom: the output vector.
    narrow: for a phone's width: short column titles and fewer ticks (the long ones ran into each other).
    """
    neuron = data.steps
    tokens = data.tokens
    query_index = data.query_index
    keys = np.asarray(neuron.keys)
    length = keys.shape[0]
    check_length(tokens, length, "tokens")
    labels = plain_labels(unique_labels(tokens))
    middle = max(0.5, min(0.9, length / (length + 4)))
    fig = make_subplots(
        rows=3,
        cols=5,
        row_heights=[(1 - middle) / 2, middle, (1 - middle) / 2],
        specs=[[{}, None, None, None, None], [{}, {}, {}, {}, {}], [None, None, None, None, {}]],
        subplot_titles=_NARROW_NEURON_TITLES if narrow else _NEURON_TITLES,
        horizontal_spacing=0.03,
        vertical_spacing=0.08,
    )
    _add_neuron_traces(fig, neuron, labels, query_index)
    fig.update_yaxes(
        type="category", autorange="reversed", categoryorder="array", categoryarray=labels, row=2
    )
    for col in range(2, 6):
        fig.update_yaxes(showticklabels=False, row=2, col=col)
    # Dimension numbers under the query row and the weighted values ran into the subplot titles below them.
    fig.update_xaxes(showticklabels=False, row=1, col=1)
    fig.update_xaxes(showticklabels=False, row=2, col=5)
    fig.update_layout(
        title=f"Neuron view for query {labels[query_index]}",
        barmode="group",
        showlegend=True,
        height=token_axis_height(length, per_token=18) + 200,
        legend={"orientation": "h", "y": -0.05},
        margin={"r": 120},  # room for the last subplot title
    )
    if narrow:
        fig.update_layout(margin={"r": 8, "l": 0})
        for col in (1, 2):  # rotated dimension numbers under 50-px columns ran into each other
            fig.update_xaxes(showticklabels=False, row=2, col=col)
        fig.update_xaxes(nticks=2, row=2)
        fig.update_xaxes(showticklabels=False, row=3, col=5)
    return fig


# ---------------------------------------------------------------- head statistics


def head_statistics_figure(data: HeadStatistics, value: str = "entropy") -> go.Figure:
    """Heatmap layer × head of one column of views.head_statistics."""
    df = data.table
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


# ---- builders that take their view's data (pages hand them the dataclass, never its unpacked arrays) ----


def attention_map_figure(block: AttentionMap, axis_titles: bool = True, narrow: bool = False) -> go.Figure:
    """One head's attention map (views.attention_map), rows queries and columns keys; narrow: its colour bar below."""
    return _attention_heatmap(
        block.weights,
        block.query_tokens,
        block.key_tokens,
        block.title,
        axis_titles=axis_titles,
        narrow=narrow,
    )


def rollout_figure(data: Rollout) -> go.Figure:
    """Attention rollout after one layer (views.rollout)."""
    return _rollout_heatmap(data.flow, data.tokens, title=data.title)
