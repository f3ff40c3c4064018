"""Figures of the training replay: one head and the model view on one fixed colour range, predictions and head
patterns over steps."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from bertviz_lite.figures._common import SEQUENTIAL
from bertviz_lite.figures.attention import _attention_heatmap
from bertviz_lite.figures.model_view import model_view_figure
from bertviz_lite.figures.predictions import _topk_bar
from bertviz_lite.inspection.views.attention import ModelView
from bertviz_lite.inspection.views.replay import HeadSpecialisation, PredictionSeries

ANSWER_COLOUR = "#2ca02c"
GUESS_COLOUR = "#1f77b4"


def _fix_colours(fig: go.Figure, zrange: tuple[float, float]) -> go.Figure:
    """Pin every heatmap of fig to zrange (no re-fit per step) and say so on the colour bar."""
    low, high = zrange
    fig.update_traces(
        zmin=low,
        zmax=high,
        zauto=False,
        colorbar={"title": {"text": f"weight<br>{low:g}–{high:.3g}"}},
        selector={"type": "heatmap"},
    )
    return fig


def replay_heatmap(weights, tokens: Sequence[str], zrange: tuple[float, float]) -> go.Figure:
    """One head's [T, T] map at one step, coloured on the fixed zrange (the top axis holds the keys)."""
    return _fix_colours(_attention_heatmap(weights, tokens, title=""), zrange)


def replay_model_view(model_view: ModelView, zrange: tuple[float, float]) -> go.Figure:
    """The clickable layers × heads model_view at one step, coloured on the fixed zrange."""
    return _fix_colours(model_view_figure(model_view), zrange)


def _step_marker(fig: go.Figure, step: int | None) -> go.Figure:
    if step is not None:
        fig.add_vline(x=step, line={"color": "#d62728", "width": 2, "dash": "dot"})
    return fig


def prediction_curves(series: PredictionSeries, step: int | None = None) -> go.Figure:
    """P(answer) at the masked probe word and P(IsNext) over the training steps, the current step marked."""
    fig = go.Figure(
        [
            go.Scatter(
                x=list(series.steps),
                y=series.answer_prob,
                name="P(answer)",
                mode="lines+markers",
                line={"color": ANSWER_COLOUR},
                hovertemplate="step %{x}: %{y:.3f}<extra>P(answer)</extra>",
            ),
            go.Scatter(
                x=list(series.steps),
                y=series.is_next_prob,
                name="P(IsNext)",
                mode="lines+markers",
                line={"color": "#9467bd"},
                hovertemplate="step %{x}: %{y:.3f}<extra>P(IsNext)</extra>",
            ),
        ]
    )
    fig.update_layout(
        title=f"The probe pair over training:<br>P(“{series.answer}”) at [MASK], P(B follows A)",
        xaxis={"title": {"text": "training step"}},
        yaxis={"title": {"text": "probability"}, "range": [0, 1.02]},
        height=350,
        margin={"t": 80, "b": 40},
        legend={"orientation": "h", "y": -0.25},
    )
    return _step_marker(fig, step)


def guesses_bar(series: PredictionSeries, step: int) -> go.Figure:
    """The MLM head's top guesses for the masked probe word at one step; the right answer in green."""
    index = series.at(step)
    if index is None:
        raise ValueError(f"step {step} has no saved predictions")
    tokens = series.top_tokens[index]
    probs = series.top_probs[index]
    fig = _topk_bar(tokens, probs, title=f"Step {step}: top guesses at [MASK]<br>(answer: “{series.answer}”)")
    order = np.argsort(-probs, kind="stable")  # _topk_bar draws the bars in this order
    fig.update_traces(
        marker_color=[ANSWER_COLOUR if tokens[i] == series.answer else GUESS_COLOUR for i in order]
    )
    fig.update_layout(xaxis_range=[0, 1], height=320, margin={"t": 80, "b": 40})
    return fig


def specialisation_heatmap(spec: HeadSpecialisation, pattern: str, step: int | None = None) -> go.Figure:
    """Heads (rows "L0 H0" …) × steps (columns): the share of attention each head sends to `pattern`, on 0-1."""
    values = spec.pattern(pattern)  # [S, L, H]
    num_layers, num_heads = values.shape[1:]
    labels = [f"L{layer} H{head}" for layer, head in np.ndindex(num_layers, num_heads)]
    fig = go.Figure(
        go.Heatmap(
            z=values.reshape(len(spec.steps), -1).T,
            x=[str(s) for s in spec.steps],
            y=labels,
            colorscale=SEQUENTIAL,
            zmin=0,
            zmax=1,
            colorbar={"title": {"text": "share<br>0–1"}},
            hovertemplate="%{y} at step %{x}: %{z:.3f}<extra></extra>",
        )
    )
    fig.update_layout(
        title=f"When heads specialise: share of each head's attention to {_pattern_words(pattern)}",
        xaxis={"type": "category", "title": {"text": "training step"}},
        yaxis={"type": "category", "autorange": "reversed", "nticks": min(len(labels), 48)},
        height=int(np.clip(14 * len(labels) + 170, 300, 1100)),
        margin={"t": 60, "b": 50},
    )
    if step is not None and step in spec.steps:
        index = spec.steps.index(step)
        fig.add_vrect(
            x0=index - 0.5, x1=index + 0.5, line={"color": "#d62728", "width": 2}, fillcolor="rgba(0,0,0,0)"
        )
    return fig


def _pattern_words(pattern: str) -> str:
    return {"previous": "the previous token", "next": "the next token", "self": "itself"}.get(
        pattern, pattern
    )
