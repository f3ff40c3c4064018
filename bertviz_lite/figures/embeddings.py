"""Figures for the embedding layer: token + position + segment, their sum and LayerNorm."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from bertviz_lite.figures._common import (
    COLUMN_TITLE_CHARS,
    DIVERGING,
    LEGEND_BELOW,
    ROBUST_PERCENTILE,
    SEGMENT_COLOURS,
    TITLE_LINE_PX,
    UNIT_DIVERGING,
    as_matrix,
    category_axis,
    check_length,
    robust_range,
    token_axis_height,
    wrapped,
)
from bertviz_lite.inspection.analysis import EMBEDDING_PARTS, unique_labels
from bertviz_lite.text.display import plain_labels

if TYPE_CHECKING:
    from bertviz_lite.inspection.views.embeddings import (
        EmbeddingNorms,
        EmbeddingWindow,
        PositionSimilarity,
        TokenProjection,
    )

# What `bertviz_lite.figures` offers at its top (its __init__ lists them by name).
__all__ = [
    "embedding_norms_figure",
    "embedding_window_figure",
    "position_similarity_figure",
    "token_projection_figure",
]

PART_TITLES = ("token embedding", "position embedding", "segment embedding", "sum", "after LayerNorm")
# Subplot titles short enough not to collide at 1024 px, read left to right as the sum they are.
SUBPLOT_TITLES = ("token", "+ position", "+ segment", "= sum", "→ LayerNorm")
# On a phone five plots share ~270 px: about 50 px a title (the title above spells the parts out).
NARROW_SUBPLOT_TITLES = ("token", "+ pos.", "+ seg.", "= sum", "→ LN")
PARTS_TITLE = "Embedding parts: token + position + segment = sum → LayerNorm"
NARROW_BAR_ROW = 48  # px a flat colour bar with its ticks takes on a phone
NARROW_PARTS_TITLE = "Embedding parts: token + position<br>+ segment = sum → LayerNorm"


def _embedding_trace(matrix: np.ndarray, labels: list[str], **kwargs) -> go.Heatmap:
    return go.Heatmap(
        z=matrix,
        x=np.arange(matrix.shape[1]),
        y=labels,
        hovertemplate="%{y}, dimension %{x}: %{z:.3f}<extra></extra>",
        **kwargs,
    )


def _embedding_parts_figure(
    token,
    position,
    segment,
    summed,
    layer_norm,
    tokens: Sequence[str],
    layout: str = "row",
    narrow: bool = False,
) -> go.Figure:
    """The five embedding stages of one example side by side (layout "row") or stacked ("column").

    The four raw parts share one symmetric colour scale so their sizes compare directly;
    the LayerNorm output, on a different scale, gets its own.
    narrow: for a phone's width: the title on two lines, short subplot titles, fewer dimension ticks and the two
    colour bars one under the other, full width (side by side their titles ran into each other).
    """
    parts = _checked_parts((token, position, segment, summed, layer_norm), tokens, layout)
    rows, cols = (1, 5) if layout == "row" else (5, 1)
    fig = make_subplots(
        rows=rows,
        cols=cols,
        subplot_titles=(NARROW_SUBPLOT_TITLES if narrow else SUBPLOT_TITLES)
        if layout == "row"
        else PART_TITLES,
        shared_yaxes=layout == "row",
        shared_xaxes=layout == "column",
        horizontal_spacing=0.02,
        vertical_spacing=0.04,
    )
    labels = plain_labels(unique_labels(tokens))
    for i, part in enumerate(parts):
        axis = "coloraxis2" if i == 4 else "coloraxis"
        row, col = (1, i + 1) if layout == "row" else (i + 1, 1)
        fig.add_trace(_embedding_trace(part, labels, coloraxis=axis, name=PART_TITLES[i]), row=row, col=col)
    raw_limit = robust_range(*parts[:4])
    norm_limit = robust_range(parts[4])
    height = token_axis_height(parts[0].shape[0]) * (1 if layout == "row" else 3)
    _lay_out_parts(fig, height, raw_limit, norm_limit)
    fig.update_yaxes(**category_axis(reverse=True))
    fig.update_xaxes(
        title_text="hidden dimension", row=rows, col=(cols + 1) // 2
    )  # one title, under the middle
    if narrow:
        _stack_colour_bars(fig, raw_limit, norm_limit)
    return fig


def _checked_parts(raw_parts: Sequence, tokens: Sequence[str], layout: str) -> list[np.ndarray]:
    """The five parts as matrices of one shape, one row a token; a ValueError that names what is wrong otherwise."""
    parts = [as_matrix(p, name) for p, name in zip(raw_parts, PART_TITLES, strict=True)]
    if len({p.shape for p in parts}) != 1:
        raise ValueError(f"embedding parts must share one shape, got {[list(p.shape) for p in parts]}")
    if layout not in ("row", "column"):
        raise ValueError(f"layout must be 'row' or 'column', got {layout!r}")
    check_length(tokens, parts[0].shape[0], "tokens")
    return parts


def _lay_out_parts(fig: go.Figure, height: int, raw_limit: float, norm_limit: float) -> None:
    """The title, the height and the two colour axes (the raw parts' and LayerNorm's)."""
    # Colour bars lie flat under the plots (under the raw parts, and under LayerNorm): upright ones at the
    # right collided with each other and with the last plot on a 1024-px screen.
    fig.update_layout(
        title=PARTS_TITLE,
        height=height + 90,
        margin={"t": 90, "b": 125, "r": 20},
        # What the colours mean, on the bars: blue below 0, red above, full colour where 98% of the values lie.
        coloraxis=_diverging_axis(
            raw_limit,
            f"raw parts: blue < 0 < red, full at ±{raw_limit:.2g} ({ROBUST_PERCENTILE:g}% inside)",
            x=0.34,
            length=0.62,
        ),
        coloraxis2=_diverging_axis(norm_limit, f"LayerNorm: full at ±{norm_limit:.2g}", x=0.84, length=0.3),
    )


def _stack_colour_bars(fig: go.Figure, raw_limit: float, norm_limit: float) -> None:
    """A phone's layout of _embedding_parts_figure: two-line title, short bar titles, the bars one under the other."""
    raw, norm = (
        _diverging_axis(limit, title, x=0.5, length=1.0)
        for limit, title in (
            (raw_limit, f"raw parts ({ROBUST_PERCENTILE:g}% inside)"),
            (norm_limit, "LayerNorm"),
        )
    )
    height = fig.layout.height + NARROW_BAR_ROW + 20
    raw["colorbar"]["y"] = (
        norm["colorbar"]["y"] + NARROW_BAR_ROW / height
    )  # above LayerNorm's bar, not beside it
    fig.update_layout(
        title=NARROW_PARTS_TITLE,
        height=height,
        coloraxis=raw,
        coloraxis2=norm,
        margin={"t": 110, "b": 125 + NARROW_BAR_ROW, "l": 0, "r": 8},
    )
    fig.update_xaxes(nticks=2)  # "0 100 200 300" rotated under each 50-px plot ran into the axis title


def _component_norms_bar(df: pd.DataFrame) -> go.Figure:
    """Grouped bars of the L2 norm of each embedding part per token (from embedding_component_norms)."""
    labels = plain_labels(unique_labels(df["token"].astype(str).tolist()))
    fig = go.Figure()
    for column, name in EMBEDDING_PARTS.items():
        if column in df:
            fig.add_trace(
                go.Bar(
                    x=labels,
                    y=df[column].to_numpy(dtype=float),
                    name=name,
                    hovertemplate="%{x}: %{y:.3f}<extra>" + name + "</extra>",
                )
            )
    fig.update_layout(
        title="Size (L2 norm) of each embedding part",
        barmode="group",
        xaxis={**category_axis(), "title": {"text": "token"}},
        yaxis_title="L2 norm",
        legend=LEGEND_BELOW,
    )
    return fig


def _position_similarity_heatmap(
    sim,
    title: str = "Cosine similarity between position embeddings",
    labels: Sequence[str] | None = None,
    narrow: bool = False,
) -> go.Figure:
    """Heatmap of a [N, N] similarity matrix between positions (or any labelled items).

    narrow: for a column of a laptop's screen or a phone: the title in lines that fit (on one it ran past the edges).
    """
    sim = as_matrix(sim, "similarity matrix")
    axis_labels = list(labels) if labels is not None else [str(i) for i in range(sim.shape[0])]
    check_length(axis_labels, sim.shape[0], "labels")
    fig = go.Figure(
        go.Heatmap(
            z=sim,
            x=axis_labels,
            y=axis_labels,
            **UNIT_DIVERGING,
            colorbar={"title": {"text": "cosine"}},
            hovertemplate="%{y} vs %{x}: %{z:.3f}<extra></extra>",
        )
    )
    fig.update_layout(
        title=title,
        xaxis={**category_axis(), "title": {"text": "position"}},
        yaxis={**category_axis(reverse=True), "title": {"text": "position"}},
        height=min(900, max(400, 6 * sim.shape[0] + 200)),
    )
    if narrow:  # plotly writes a title's next lines downwards: the top margin grows by them, the figure too
        lines = wrapped(title, COLUMN_TITLE_CHARS)
        extra = TITLE_LINE_PX * lines.count("<br>")
        fig.update_layout(title=lines, margin_t=100 + extra, height=fig.layout.height + extra)
    return fig


def _pca_scatter(
    points,
    tokens: Sequence[str],
    token_type_ids: Sequence[int] | None = None,
    title: str = "Token vectors projected on their first two principal components",
) -> go.Figure:
    """Scatter of [N, 2] projected points, one trace per sentence (A, B), labelled by token."""
    points = as_matrix(points, "points")
    if points.shape[1] != 2:
        raise ValueError(f"points must be [N, 2], got {list(points.shape)}")
    check_length(tokens, points.shape[0], "tokens")
    segments = (
        np.zeros(len(tokens), int) if token_type_ids is None else np.asarray(token_type_ids).astype(int)
    )
    check_length(segments, points.shape[0], "segment ids")
    shown = _uncluttered_labels(points, tokens)
    fig = go.Figure()
    for segment, name in ((0, "sentence A"), (1, "sentence B")):
        chosen = np.flatnonzero(segments == segment)
        if chosen.size:
            fig.add_trace(
                go.Scatter(
                    x=points[chosen, 0],
                    y=points[chosen, 1],
                    name=name,
                    mode="markers+text" if len(tokens) <= 64 else "markers",
                    text=[shown[i] for i in chosen],
                    customdata=np.stack(
                        [chosen, np.array([tokens[i] for i in chosen], dtype=object)], axis=-1
                    ),
                    textposition="top center",
                    marker={"color": SEGMENT_COLOURS[segment], "size": 9},
                    hovertemplate="%{customdata[1]} (%{customdata[0]})<br>PC1 %{x:.3f}, PC2 %{y:.3f}<extra></extra>",
                )
            )
    fig.update_layout(
        title=title,
        xaxis_title="first principal component",
        yaxis_title="second principal component",
        legend=LEGEND_BELOW,
    )
    return fig


def _uncluttered_labels(points: np.ndarray, tokens: Sequence[str], min_gap: float = 0.06) -> list[str]:
    """Each point's label, or "" where it would sit on a label already placed (it stays on hover).

    Greedy in token order on the plot's unit square: 14 tokens in one blob showed as one unreadable smear.
    """
    span = np.ptp(points, axis=0)
    unit = (points - points.min(axis=0)) / np.where(span > 0, span, 1.0)
    placed: list[np.ndarray] = []
    shown = []
    for point, token in zip(unit, tokens, strict=True):
        free = all(np.abs(point - other).max() >= min_gap for other in placed)
        shown.append(token if free else "")
        if free:
            placed.append(point)
    return shown


def _diverging_axis(limit: float, title: str, x: float, length: float) -> dict:
    """A colour axis centred on 0 from -limit to +limit, its colour bar flat at the figure's bottom, centred at `x`."""
    # Title at the bar's left end ("right" is what plotly calls that side of a flat bar; "top" drew it on the bar).
    colorbar = {
        "title": {"text": title, "side": "right"},
        "orientation": "h",
        "x": x,
        "xanchor": "center",
        "len": length,
        "thickness": 14,
        "yref": "container",
        "y": 0.01,
        "yanchor": "bottom",
        # three ticks only: a short bar's five ticks stacked into each other at 1024 px in presentation mode
        "tickvals": [-limit, 0, limit],
        "ticktext": [f"−{limit:.2g}", "0", f"{limit:.2g}"],
    }
    return {"colorscale": DIVERGING, "cmid": 0, "cmin": -limit, "cmax": limit, "colorbar": colorbar}


# ---- builders that take their view's data (pages hand them the dataclass, never its unpacked arrays) ----


def embedding_window_figure(window: EmbeddingWindow, layout: str = "row", narrow: bool = False) -> go.Figure:
    """The five embedding stages of a window of tokens (views.embedding_window); narrow: laid out for a phone."""
    return _embedding_parts_figure(*window.parts, tokens=window.tokens, layout=layout, narrow=narrow)


def position_similarity_figure(similarity: PositionSimilarity, narrow: bool = False) -> go.Figure:
    """Cosine similarity of one table's position vectors (views.position_similarity); narrow: its title wrapped."""
    return _position_similarity_heatmap(similarity.matrix, title=similarity.title, narrow=narrow)


def token_projection_figure(projection: TokenProjection) -> go.Figure:
    """Token vectors on their first two principal components (views.token_projection)."""
    return _pca_scatter(projection.points, projection.tokens, projection.sentence, title=projection.title)


def embedding_norms_figure(data: EmbeddingNorms) -> go.Figure:
    """Each embedding part's size per token (views.embedding_norms)."""
    return _component_norms_bar(data.table)
