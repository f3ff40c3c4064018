"""Figures for "Why this word": the contrast layer by layer, activation patching grids, minimal pairs.

Builders only draw: they take a view's data (bertviz_lite.inspection.views.why_this_word) and return a `go.Figure`.
The contrast's attribution is drawn by figures.beyond_attention.token_attribution_figure, as on Beyond attention.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from bertviz_lite.figures._common import UNIT_DIVERGING, category_axis

if TYPE_CHECKING:
    from bertviz_lite.inspection.views.why_this_word import ContrastLens, PairLikelihood, Patching

# What `bertviz_lite.figures` offers at its top (its __init__ lists them by name).
__all__ = ["contrast_lens_figure", "pair_likelihood_figure", "activation_patching_figure"]
TARGET = "#1f77b4"  # the two candidates, in every figure of the page
FOIL = "#d62728"
SAME = "#9aa5b1"  # tokens the two sentences share / where they differ
DIFFERENT = "#ff7f0e"
SITE_TITLES = {
    "residual": "Residual stream: the hidden state after each layer, restored at one position",
    "attention": "Attention block output, restored at one position",
    "feed-forward": "Feed-forward block output, restored at one position",
    "head": "One attention head's output, restored at every position",
}
MAX_CELL_TEXT = 24  # columns up to which every cell prints its share


def contrast_lens_figure(data: ContrastLens) -> go.Figure:
    """Per layer (rows), logit(target) − logit(foil) as a bar coloured by the candidate it favours; both
    probabilities beside."""
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.6, 0.4],
        shared_yaxes=True,
        horizontal_spacing=0.04,
        subplot_titles=[f"logit({data.target}) − logit({data.foil})", "P per layer"],
    )
    difference = data.difference
    fig.add_trace(
        go.Bar(
            x=difference,
            y=data.layers,
            orientation="h",
            marker_color=[TARGET if d >= 0 else FOIL for d in difference],
            text=[f"{d:+.2f}" for d in difference],
            textposition="outside",
            cliponaxis=False,
            showlegend=False,
            hovertemplate="%{y}: %{x:+.3f}<extra></extra>",
        ),
        row=1,
        col=1,
    )
    for name, probs, colour in ((data.target, data.target_probs, TARGET), (data.foil, data.foil_probs, FOIL)):
        fig.add_trace(
            go.Bar(
                x=probs,
                y=data.layers,
                orientation="h",
                name=f"P({name})",
                marker_color=colour,
                hovertemplate=f"%{{y}}: P({name}) = %{{x:.4f}}<extra></extra>",
            ),
            row=1,
            col=2,
        )
    largest = max(float(np.abs(difference).max()), 1e-6) * 1.4  # room for the numbers outside the bars
    fig.update_xaxes(range=[-largest, largest], zeroline=True, zerolinewidth=2, row=1, col=1)
    fig.update_xaxes(range=[0, 1], tickformat=".0%", row=1, col=2)
    fig.update_yaxes(category_axis(reverse=True), row=1, col=1)
    fig.update_layout(
        title=f"Layer by layer at position {data.position}: right of 0 the model prefers “{data.target}”, "
        f"left of 0 “{data.foil}”",
        barmode="group",
        height=max(320, 48 * len(data.layers) + 150),
        legend={"orientation": "h", "y": -0.12},
    )
    return fig


def _emphasise(labels: list[str], chosen: list[int]) -> list[str]:
    return [f"<b>{label}</b>" if i in chosen else label for i, label in enumerate(labels)]


def activation_patching_figure(data: Patching) -> go.Figure:
    """Layers (rows) × positions or heads (columns), the recovered share of the contrast; shares print in the cells.

    The colour range is fixed at −100 % … 100 % (the clean answer fully back is 100 %); bold columns are the
    tokens that differ, and the [MASK] where the candidates compete is outlined.
    """
    share = np.asarray(data.share, dtype=float)
    columns = data.columns if data.site == "head" else _emphasise(data.columns, data.differing)
    text = [
        ["" if not np.isfinite(s) else f"{s + 0.0:.0%}".replace("-0%", "0%") for s in row] for row in share
    ]
    fig = go.Figure(
        go.Heatmap(
            z=share,
            x=columns,
            y=data.rows,
            customdata=data.metric,
            **UNIT_DIVERGING,
            text=text,
            texttemplate="%{text}" if share.shape[1] <= MAX_CELL_TEXT else None,
            colorbar={"title": {"text": "recovered"}, "tickformat": ".0%"},
            xgap=1,
            ygap=1,
            hovertemplate="%{y}, %{x}: %{z:.1%} recovered (metric %{customdata:.3f})<extra></extra>",
        )
    )
    if data.site != "head":
        fig.add_shape(
            type="rect",
            x0=data.position - 0.5,
            x1=data.position + 0.5,
            y0=-0.5,
            y1=len(data.rows) - 0.5,
            line={"color": "#111111", "width": 2},
        )
    fig.update_layout(
        title=f"{SITE_TITLES[data.site]}<br><sup>share of {data.label} recovered: clean {data.clean_metric:+.2f}, "
        f"corrupted {data.corrupted_metric:+.2f}; 0 % = nothing back, 100 % = the clean answer</sup>",
        height=max(300, 44 * len(data.rows) + 190),
        margin={"t": 110},
        xaxis={**category_axis(), "tickangle": -40 if data.site != "head" else 0},
        yaxis={**category_axis(reverse=True)},
    )
    return fig


def pair_likelihood_figure(data: PairLikelihood) -> go.Figure:
    """A above B: each token's surprisal −log P (masked alone) as a bar, orange where the sentences differ.

    The bars of a sentence add up to −PLL, so the taller total is the sentence the model finds less natural.
    """
    titles = [
        f"{name}: PLL = {pll:.2f}" + ("  (preferred)" if name == data.preferred else "")
        for name, pll in zip("AB", data.pll, strict=True)
    ]
    fig = make_subplots(rows=2, cols=1, subplot_titles=titles, vertical_spacing=0.28)
    top = max(float(-np.min(np.concatenate([lp for lp in data.log_probs if lp.size] or [np.zeros(1)]))), 1e-3)
    for row, (tokens, log_probs, differs) in enumerate(
        zip(data.tokens, data.log_probs, data.differs, strict=True), 1
    ):
        positions = [f"{token} ({i + 1})" for i, token in enumerate(tokens)]  # as in "[CLS] sentence [SEP]"
        labels = _emphasise(positions, [i for i, d in enumerate(differs) if d])
        fig.add_trace(
            go.Bar(
                x=labels,
                y=-log_probs,
                marker_color=[DIFFERENT if d else SAME for d in differs],
                showlegend=False,
                text=[f"{-v:.1f}" for v in log_probs],
                textposition="outside",
                cliponaxis=False,
                customdata=np.exp(log_probs),
                hovertemplate="%{x}: −log P = %{y:.3f} (P = %{customdata:.3%})<extra></extra>",
            ),
            row=row,
            col=1,
        )
        fig.update_xaxes(category_axis(), row=row, col=1)
        fig.update_yaxes(range=[0, top * 1.25], title_text="−log P", row=row, col=1)
    gap = abs(data.pll[0] - data.pll[1])
    fig.update_layout(
        title=f"The model prefers {data.preferred} by {gap:.2f} nats<br><sup>each bar: how surprised the model is by a "
        "token with only that token masked; orange and bold: where the sentences differ</sup>",
        height=520,
        margin={"t": 110},
    )
    return fig
