"""Figures beyond attention weights: norm-weighted attention, attribution against leave-one-out, knock-out, logit lens.

Builders only draw: they take a view's data (bertviz_lite.inspection.views.norms / views.beyond_attention) and
return a `go.Figure`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from bertviz_lite.figures._common import (
    LEGEND_BELOW,
    SEQUENTIAL,
    UNIT_DIVERGING,
    category_axis,
    token_axis_height,
    wrapped,
)
from bertviz_lite.figures.attention import _attention_heatmap
from bertviz_lite.inspection.analysis import unique_labels
from bertviz_lite.text.display import plain_labels

# What `bertviz_lite.figures` offers at its top (its __init__ lists them by name).
__all__ = [
    "attention_weights_figure",
    "head_knockout_figure",
    "logit_lens_figure",
    "norm_attention_figure",
    "special_share_by_layer_figure",
    "token_attribution_figure",
]

if TYPE_CHECKING:
    from bertviz_lite.inspection.views.beyond_attention import Attribution, HeadKnockout, LogitLens
    from bertviz_lite.inspection.views.norms import NormAttention, SpecialShares

BEFORE = "#1f77b4"
AFTER = "#d62728"
WEIGHTING_COLOURS = {"attention weight": "#1f77b4", "norm-weighted": "#ff7f0e"}


def attention_weights_figure(data: NormAttention) -> go.Figure:
    """The attention weights α beside their norm-weighted map (the heads' mean when no head is picked)."""
    title = ("α, heads' mean · " if data.head is None else "α · ") + data.where
    return _attention_heatmap(data.raw, data.query_tokens, data.key_tokens, title)


def norm_attention_figure(data: NormAttention) -> go.Figure:
    """The norm-weighted map ‖α f(x)‖ as a heatmap shaped like the attention heatmap beside it."""
    fig = _attention_heatmap(data.norm, data.query_tokens, data.key_tokens, f"‖α f(x)‖ · {data.where}")
    fig.update_traces(
        colorbar={"title": {"text": "norm"}},
        colorscale="Oranges",
        hovertemplate="%{y} → %{x}: ‖α f(x)‖ = %{z:.3f}<extra></extra>",
    )
    return fig


def special_share_by_layer_figure(data: SpecialShares) -> go.Figure:
    """Per layer, the share on [CLS] and on [SEP] by attention weight and by norm (views.special_share_by_layer)."""
    shares = data.table
    fig = make_subplots(
        rows=1, cols=2, subplot_titles=["Share on [CLS]", "Share on [SEP]"], shared_yaxes=True
    )
    for col, column in enumerate(("to [CLS]", "to [SEP]"), start=1):
        for weighting, group in shares.groupby("weighting", sort=False):
            fig.add_trace(
                go.Bar(
                    x=[f"layer {i}" for i in group["layer"]],
                    y=group[column],
                    name=weighting,
                    marker_color=WEIGHTING_COLOURS.get(weighting),
                    showlegend=col == 1,
                    hovertemplate=f"%{{x}}: %{{y:.1%}} ({weighting})<extra></extra>",
                ),
                row=1,
                col=col,
            )
    fig.update_layout(
        title="Attention by weight and by norm",
        barmode="group",
        height=340,
        yaxis={"tickformat": ".0%", "range": [0, 1]},
        legend=LEGEND_BELOW,
    )
    return fig


SUBTITLE = (
    "<br><sup>each column ÷ its largest |score|; ρ: Spearman with leave-one-out over this input's "
    "tokens</sup>"
)
HEADER_CHARS = 13  # a slide's attribution header line: "(last layer)", "norm-weighted"


def token_attribution_figure(data: Attribution, slide: bool = False) -> go.Figure:
    """Tokens (rows) × methods (columns), each column scaled by its largest |score|; ρ with leave-one-out in the header.

    slide: for a projector's slide (presentation mode: the figure is short and wide), headers on up to three short
    lines that need no rotation, only as much room above the rows as they take, and no subtitle (its words are in
    the view's help), so that 22 rows of 16-px labels do not touch.
    """
    methods = list(data.scores)
    raw = np.column_stack([data.scores[m] for m in methods])
    scale = np.abs(raw).max(axis=0)
    scaled = np.divide(raw, scale, out=np.zeros_like(raw), where=scale > 0)
    names = [wrapped(m, HEADER_CHARS) if slide else m for m in methods]
    headers = [
        name if m not in data.correlation else f"{name}<br>ρ = {data.correlation[m]:.2f}"
        for m, name in zip(methods, names, strict=True)
    ]
    fig = go.Figure(
        go.Heatmap(
            z=scaled,
            x=headers,
            y=plain_labels(unique_labels(data.tokens)),
            customdata=raw,
            **UNIT_DIVERGING,
            hovertemplate="%{y} · %{x}: %{customdata:.4g}<extra></extra>",
            colorbar={"title": {"text": "÷ max |score|"}},
        )
    )
    # The title at the figure's top edge and room below it for the two-line headers, which a narrow screen
    # rotates, so they reach higher; on a slide they stay level and take less.
    fig.update_layout(
        title={
            "text": f"What {data.label} rests on" + ("" if slide else SUBTITLE),
            "yref": "container",
            "y": 1,
            "yanchor": "top",
            "pad": {"t": 8 if slide else 26},
        },
        height=token_axis_height(len(data.tokens), per_token=20) + 140,
        xaxis={**category_axis(), "side": "top", **({"tickangle": 0} if slide else {})},
        yaxis={**category_axis(reverse=True), "dtick": 1},  # every token's label: plotly would skip some
        margin={"t": 128, "b": 10} if slide else {"t": 210},  # on a slide: title 40 px, three header lines 80
    )
    return fig


def _before_after(fig: go.Figure, labels: list[str], before, after, row: int) -> None:
    for name, values, colour in (("with every head", before, BEFORE), ("heads knocked out", after, AFTER)):
        fig.add_trace(
            go.Bar(
                x=values,
                y=labels,
                orientation="h",
                name=name,
                marker_color=colour,
                showlegend=row == 1,
                text=[f"{v:.1%}" for v in values],
                textposition="outside",
                cliponaxis=False,
                constraintext="none",
                hovertemplate=f"%{{y}}: %{{x:.4f}} ({name})<extra></extra>",
            ),
            row=row,
            col=1,
        )


def head_knockout_figure(data: HeadKnockout) -> go.Figure:
    """MLM candidates and P(IsNext), before and after the knock-out, as paired horizontal bars."""
    parts = (
        [(f"Position {data.position}: top predictions", data.candidates, data.before, data.after)]
        if data.candidates
        else []
    )
    if data.nsp_before is not None:
        parts.append(("Next sentence: P(IsNext)", ["IsNext"], [data.nsp_before], [data.nsp_after]))
    heights = [max(len(p[1]), 1) for p in parts] or [1]
    height = 160 + 44 * sum(heights) + 70 * (len(heights) - 1)
    fig = make_subplots(
        rows=len(heights),
        cols=1,
        subplot_titles=[p[0] for p in parts] or [""],
        row_heights=heights,
        vertical_spacing=min(0.3, 110 / height),
    )  # ticks, then the next title
    for row, (_, labels, before, after) in enumerate(parts, start=1):
        _before_after(fig, labels, before, after, row)
        fig.update_yaxes(category_axis(reverse=True), row=row, col=1)
        # Room right of 100% for a bar's label: inside a bar plotly shrank it to fit (6 px on a slide).
        fig.update_xaxes(
            range=[0, 1.14], tickvals=[0, 0.2, 0.4, 0.6, 0.8, 1], tickformat=".0%", row=row, col=1
        )
    knocked = ", ".join(data.heads) if data.heads else "none (pick heads to knock out)"
    fig.update_layout(title=f"Knocked out: {knocked}", barmode="group", height=height, legend=LEGEND_BELOW)
    return fig


def logit_lens_figure(data: LogitLens) -> go.Figure:
    """Layers (rows) × rank: each layer's top predictions as text on their probability; P(final answer) beside."""
    labels = data.layers
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.7, 0.3],
        shared_yaxes=True,
        horizontal_spacing=0.03,
        subplot_titles=["Top predictions per layer", f"P({data.answer}) per layer"],
    )
    ranks = [f"rank {r + 1}" for r in range(data.top_probs.shape[1])]
    fig.add_trace(
        go.Heatmap(
            z=data.top_probs,
            x=ranks,
            y=labels,
            text=data.top_tokens,
            texttemplate="%{text}",
            colorscale=SEQUENTIAL,
            textfont={"size": 13},  # plotly shrinks cell text to fit, to about 8 px on a 1024-px screen
            zmin=0,
            zmax=1,
            customdata=data.top_tokens,
            colorbar={"title": {"text": "P"}, "x": 1.02},
            hovertemplate="%{y}, %{x}: %{customdata} (%{z:.3f})<extra></extra>",
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Bar(
            x=data.answer_probs,
            y=labels,
            orientation="h",
            marker_color=AFTER,
            showlegend=False,
            text=[f"{p:.1%}" for p in data.answer_probs],
            textposition="auto",
            hovertemplate=f"%{{y}}: P({data.answer}) = %{{x:.4f}}<extra></extra>",
        ),
        row=1,
        col=2,
    )
    where = (
        "the NSP head on each layer's [CLS]"
        if data.position is None
        else f"the MLM head at position {data.position}"
    )
    fig.update_layout(title=f"Logit lens: {where}", height=max(300, 44 * len(labels) + 140))
    fig.update_yaxes(category_axis(reverse=True), row=1, col=1)
    fig.update_xaxes(category_axis(), row=1, col=1)
    fig.update_xaxes(range=[0, 1], tickformat=".0%", row=1, col=2)
    return fig
