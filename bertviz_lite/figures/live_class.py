"""The projector's figures in a live class: the class's answers beside the model's answer."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from bertviz_lite.figures._common import category_axis, check_length
from bertviz_lite.text.display import plain_label

__all__ = ["class_answers_figure", "class_cloze_figure"]

MODEL_COLOUR = "#2ca02c"
CLASS_COLOUR = "#1f77b4"
OTHER_COLOUR = "#9aa5b1"
MAX_WORDS = 12  # the class's most frequent words shown; the rest are counted in the title


def _student_ticks(largest: int) -> dict:
    """Whole students on the axis (no 0.5 of a student): at most about five ticks."""
    return {"dtick": max(1, -(-int(largest) // 5)), "tick0": 0}


def _share_labels(counts: np.ndarray) -> list[str]:
    total = max(int(counts.sum()), 1)
    return [f"{int(c)} ({c / total:.0%})" for c in counts]


def class_answers_figure(
    answers: Sequence[str], counts: Sequence[int], model_answer: str, title: str = "The class's answers"
) -> go.Figure:
    """Horizontal bars: how many students gave each answer; the model's answer in green and marked."""
    counts = np.asarray(counts, dtype=np.int64).reshape(-1)
    check_length(answers, counts.size, "answers")
    labels = [plain_label(a) + (" ← model" if a == model_answer else "") for a in answers]
    fig = go.Figure(
        go.Bar(
            x=counts,
            y=labels,
            orientation="h",
            text=_share_labels(counts),
            textposition="outside",
            cliponaxis=False,
            marker_color=[MODEL_COLOUR if a == model_answer else CLASS_COLOUR for a in answers],
            hovertemplate="%{y}: %{x} students<extra></extra>",
        )
    )
    fig.update_layout(
        title=f"{plain_label(title)}: {int(counts.sum())} students",
        xaxis={
            "title": {"text": "students"},
            "range": [0, max(1, int(counts.max(initial=0))) * 1.3],
            **_student_ticks(counts.max(initial=0)),
        },
        yaxis={**category_axis(reverse=True), "automargin": True},
        height=max(240, 34 * counts.size + 120),
        margin={"t": 50, "b": 50, "r": 60, "l": 10},
        showlegend=False,
    )
    return fig


def _class_bars(words: Sequence[str], counts: np.ndarray, model_words: Sequence[str]) -> go.Bar:
    """The class's first MAX_WORDS words, green where the model has the word in its top 5."""
    shown = slice(0, MAX_WORDS)
    return go.Bar(
        x=counts[shown],
        y=[plain_label(w) for w in words[shown]],
        orientation="h",
        text=_share_labels(counts)[shown],
        textposition="outside",
        cliponaxis=False,
        hovertemplate="%{y}: %{x} students<extra></extra>",
        marker_color=[MODEL_COLOUR if w in model_words else CLASS_COLOUR for w in words[shown]],
    )


def _model_bars(model_words: Sequence[str], probs: np.ndarray) -> go.Bar:
    """The model's top 5 words with their probabilities."""
    return go.Bar(
        x=probs,
        y=[plain_label(w) for w in model_words],
        orientation="h",
        text=[f"{p:.0%}" for p in probs],
        textposition="outside",
        cliponaxis=False,
        marker_color=OTHER_COLOUR,
        hovertemplate="%{y}: %{x:.3f}<extra></extra>",
    )


def class_cloze_figure(
    words: Sequence[str],
    counts: Sequence[int],
    model_words: Sequence[str],
    model_probs: Sequence[float],
    stacked: bool = False,
) -> go.Figure:
    """The class's words (bars, green where the model has the word in its top 5) beside the model's top 5.

    `stacked` puts the model's chart under the class's (a phone) instead of beside it (a projector).
    """
    counts = np.asarray(counts, dtype=np.int64).reshape(-1)
    probs = np.asarray(model_probs, dtype=np.float64).reshape(-1)
    check_length(words, counts.size, "words")
    check_length(model_words, probs.size, "model words")
    rest = int(counts[MAX_WORDS:].sum())
    rows, cols = (2, 1) if stacked else (1, 2)
    others = f" (+{rest} more)" if rest else ""
    total = int(counts.sum())
    fig = make_subplots(
        rows=rows,
        cols=cols,
        horizontal_spacing=0.18,
        vertical_spacing=0.3,
        subplot_titles=(f"The class: {total} answer{'' if total == 1 else 's'}{others}", "BERT's top 5"),
    )
    fig.add_trace(_class_bars(words, counts, model_words), row=1, col=1)
    fig.add_trace(_model_bars(model_words, probs), row=rows, col=cols)
    fig.update_yaxes(**category_axis(reverse=True), automargin=True)
    fig.update_xaxes(
        range=[0, max(1, int(counts.max(initial=0))) * 1.35],
        title_text="students",
        row=1,
        col=1,
        **_student_ticks(counts.max(initial=0)),
    )
    fig.update_xaxes(
        range=[0, max(1e-9, float(probs.max(initial=0))) * 1.35], title_text="probability", row=rows, col=cols
    )
    bars = max(min(counts.size, MAX_WORDS), probs.size)
    fig.update_layout(
        height=(2 if stacked else 1) * max(220, 30 * bars + 100) + 40,
        showlegend=False,
        margin={"t": 50, "b": 50, "r": 50, "l": 10},
    )
    return fig
