"""Figures for the model's predictions: masked-token top-k and next-sentence probability."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from bertviz_lite.figures._common import category_axis
from bertviz_lite.inspection.views.predictions import NextSentence, TopPredictions
from bertviz_lite.text.display import plain_label

# What `bertviz_lite.figures` offers at its top (its __init__ lists them by name).
__all__ = ["next_sentence_figure", "top_predictions_figure"]


def _topk_bar(tokens: Sequence[str], probs: Sequence[float], title: str = "Top predictions") -> go.Figure:
    """Horizontal bars of candidate tokens and their probabilities, highest on top."""
    probs = np.asarray(probs, dtype=np.float64).reshape(-1)
    if len(tokens) != probs.size:
        raise ValueError(f"got {len(tokens)} tokens but {probs.size} probabilities")
    order = np.argsort(-probs, kind="stable")
    labels = [plain_label(tokens[i]) for i in order]  # a vocab token may hold <a href=…>: shown as text
    fig = go.Figure(
        go.Bar(
            x=probs[order],
            y=labels,
            orientation="h",
            marker_color="#1f77b4",
            text=[f"{p:.1%}" for p in probs[order]],
            textposition="outside",  # beside the bar, at the figure's font size ("auto" shrank it inside long bars)
            cliponaxis=False,
            hovertemplate="%{y}: %{x:.4f}<extra></extra>",
        )
    )
    fig.update_layout(
        title=plain_label(title),
        xaxis={"title": {"text": "probability"}, "range": [0, max(1e-9, float(probs.max(initial=0)) * 1.18)]},
        yaxis={**category_axis(reverse=True), "title": {"text": "token"}},
        height=max(250, 28 * probs.size + 110),
        margin={"t": 50, "b": 50, "r": 70},  # plotly's default 100 px on top left a gap under the title
    )
    return fig


def _nsp_bar(
    p_is_next: float, title: str = "Next-sentence prediction: does sentence B follow A?"
) -> go.Figure:
    """Two horizontal bars: probability that sentence B follows A (IsNext) and that it does not.

    The question is in the title: a rotated axis title does not fit the chart's height.
    """
    p_is_next = float(p_is_next)
    if not 0.0 <= p_is_next <= 1.0:
        raise ValueError(f"p_is_next must be a probability in [0, 1], got {p_is_next}")
    labels = ["IsNext", "NotNext"]
    probs = [p_is_next, 1.0 - p_is_next]
    fig = go.Figure(
        go.Bar(
            x=probs,
            y=labels,
            orientation="h",
            marker_color=["#2ca02c", "#d62728"],
            text=[f"{p:.1%}" for p in probs],
            textposition="outside",
            cliponaxis=False,
            hovertemplate="%{y}: %{x:.4f}<extra></extra>",
        )
    )
    # Room right of 1 for the text of a bar near 100%; the ticks stop at 1, which stays visible. Three ticks:
    # five were rotated and stacked on each other in a narrow column (1024 px, beside the MLM chart).
    ticks = [0, 0.5, 1]
    fig.update_layout(
        title=plain_label(title),
        xaxis={
            "title": {"text": "probability"},
            "range": [0, 1.2],
            "tickvals": ticks,
            "ticktext": [f"{t:g}" for t in ticks],
            "tickangle": 0,
        },
        yaxis={
            **category_axis(reverse=True),
            "title": {"text": ""},
        },  # empty, yet it keeps the labels' left margin
        height=240,
        margin={"t": 50, "b": 50, "r": 70},  # room for the text beside a bar near 100%
    )
    return fig


def top_predictions_figure(data: TopPredictions, title: str | None = None) -> go.Figure:
    """The top guesses at one masked position (views.top_predictions); title: instead of the data's own."""
    return _topk_bar(data.tokens, data.probabilities, title=data.title if title is None else title)


def next_sentence_figure(data: NextSentence, title: str = "Does sentence B follow A?") -> go.Figure:
    """IsNext against NotNext (views.next_sentence)."""
    return _nsp_bar(data.p_is_next, title=title)
