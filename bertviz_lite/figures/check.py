"""The Your BERT page: the stage ladder (max abs differences on a log scale, the tolerance line) and one stage side by side."""

from __future__ import annotations

from typing import Protocol

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

OK_COLOUR = "#2ca02c"
DIFFERS_COLOUR = "#d62728"
__all__ = ["stage_ladder_figure", "stage_sides_figure"]

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
    fig = go.Figure(
        go.Scatter(
            x=x,
            y=ladder.stages,
            mode="markers+lines",
            marker={"color": colours, "size": 11},
            line={"color": "#bbbbbb"},
            text=text,
            hovertemplate="%{y}: max |diff| %{text}<extra></extra>",
            name="stages",
        )
    )
    fig.add_vline(
        x=ladder.tolerance,
        line_dash="dash",
        line_color="#555555",
        annotation_text=f"tolerance {ladder.tolerance:g}",
        annotation_position="top",
    )
    first = ladder.first_failing
    if first is not None:
        fig.add_annotation(
            x=x[first],
            y=ladder.stages[first],
            text="first difference",
            showarrow=True,
            arrowhead=2,
            ax=-110,
            ay=0,
            font={"color": DIFFERS_COLOUR},
        )
    fig.update_xaxes(type="log", title="max |theirs − ours| (log scale)")
    fig.update_yaxes(autorange="reversed", title=None, type="category")
    fig.update_layout(
        title="Your stages against BERT's",
        height=140 + 26 * len(ladder.stages),
        showlegend=False,
        margin={"l": 10, "r": 20, "t": 70, "b": 50},
    )
    return fig


class SidesData(Protocol):
    """check/side_by_side.py's StageSides."""

    stage: str
    which: str
    theirs: np.ndarray
    ours: np.ndarray
    rows: str
    columns: str

    @property
    def difference(self) -> np.ndarray: ...


def stage_sides_figure(sides: SidesData) -> go.Figure:
    """Theirs, ours (one colour range) and their difference (its own, centred on 0), side by side."""
    fig = make_subplots(
        rows=1, cols=3, subplot_titles=("yours", "BERT's", "yours − BERT's"), horizontal_spacing=0.1
    )
    reach = float(max(np.abs(sides.theirs).max(), np.abs(sides.ours).max(), 1e-12))
    gap = float(max(np.abs(sides.difference).max(), 1e-12))
    # Probabilities (nothing below 0) on the attention heatmaps' sequential scale; other tensors diverge around 0.
    signed = bool(min(sides.theirs.min(), sides.ours.min()) < 0)
    both = (
        {"colorscale": "RdBu_r", "zmin": -reach, "zmax": reach}
        if signed
        else {"colorscale": "Blues", "zmin": 0, "zmax": reach}
    )
    difference = {"colorscale": "RdBu_r", "zmin": -gap, "zmax": gap}
    for col, (matrix, scale, bar_x) in enumerate(
        ((sides.theirs, both, None), (sides.ours, both, 0.64), (sides.difference, difference, 1.0)), start=1
    ):
        fig.add_trace(
            go.Heatmap(
                z=matrix,
                **scale,
                showscale=bar_x is not None,
                colorbar={"x": bar_x, "len": 0.8, "thickness": 10} if bar_x else None,
                hovertemplate=f"{sides.rows} %{{y}}, {sides.columns} %{{x}}: %{{z:.4g}}<extra></extra>",
            ),
            row=1,
            col=col,
        )
        fig.update_xaxes(title=sides.columns, row=1, col=col)
        fig.update_yaxes(autorange="reversed", title=sides.rows if col == 1 else None, row=1, col=col)
    fig.update_layout(
        title=f"{sides.stage}, {sides.which}", height=380, margin={"l": 10, "r": 10, "t": 80, "b": 40}
    )
    return fig
