"""The Your BERT page's stage ladder: each stage's max abs difference from BERT on a log scale, the tolerance line."""

from __future__ import annotations

from typing import Protocol

import plotly.graph_objects as go

OK_COLOUR, DIFFERS_COLOUR = "#2ca02c", "#d62728"
__all__ = ["LadderData", "stage_ladder_figure"]

FLOOR = 1e-12  # a difference of exactly 0 drawn here: a log axis has no 0


class LadderData(Protocol):
    """check/ladder.py's StageLadder (figures import nothing from check/, which sits above them)."""

    stages: list[str]
    max_abs_diff: list[float | None]
    ok: list[bool]
    tolerance: float

    @property
    def first_failing(self) -> int | None: ...


def stage_ladder_figure(ladder: LadderData) -> go.Figure:
    """Stages top to bottom as the model computes them; a stage that cannot be compared is drawn at the right edge."""
    known = [d for d in ladder.max_abs_diff if d is not None]
    ceiling = max([ladder.tolerance * 10, *known]) * 10
    x = [ceiling if d is None else max(d, FLOOR) for d in ladder.max_abs_diff]
    text = ["not comparable" if d is None else f"{d:.2e}" for d in ladder.max_abs_diff]
    colours = [OK_COLOUR if ok else DIFFERS_COLOUR for ok in ladder.ok]
    fig = go.Figure(go.Scatter(
        x=x, y=ladder.stages, mode="markers+lines", marker={"color": colours, "size": 11},
        line={"color": "#bbbbbb"}, text=text, hovertemplate="%{y}: max |diff| %{text}<extra></extra>", name="stages"))
    fig.add_vline(x=ladder.tolerance, line_dash="dash", line_color="#555555",
                  annotation_text=f"tolerance {ladder.tolerance:g}", annotation_position="top")
    first = ladder.first_failing
    if first is not None:
        fig.add_annotation(x=x[first], y=ladder.stages[first], text="first difference", showarrow=True, arrowhead=2,
                           ax=-80, ay=0, font={"color": DIFFERS_COLOUR})
    fig.update_xaxes(type="log", title="max |theirs − ours| (log scale)")
    fig.update_yaxes(autorange="reversed", title=None, type="category")
    fig.update_layout(title="Your stages against BERT's", height=140 + 26 * len(ladder.stages), showlegend=False,
                      margin={"l": 10, "r": 20, "t": 70, "b": 50})
    return fig
