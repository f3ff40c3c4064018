"""The stage ladder, one stage side by side, their figures and each finding's sentence with what to change; from Reports
built by hand."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest
import torch

from bertviz_lite.check.advice import CHANGE, what_to_change
from bertviz_lite.check.compare import TOLERANCE, Finding, Stage
from bertviz_lite.check.ladder import stage_ladder
from bertviz_lite.check.mistakes import CODES
from bertviz_lite.check.report import Report
from bertviz_lite.check.side_by_side import stage_shape, stage_sides
from bertviz_lite.figures.check import FLOOR, stage_ladder_figure, stage_sides_figure

STAGES = [
    Stage("embeddings.sum", [4, 9, 32], [4, 9, 32], 0.0, True),
    Stage("layer.0.attention.probs", [4, 4, 9, 9], [4, 4, 9, 9], 0.31, False),
    Stage("layer.0.output", [4, 9, 32], [4, 9, 32], None, False),
]
REPORT = Report(
    "differs",
    STAGES,
    [
        Finding(
            "scale-dk",
            "layer.0.attention.probs",
            "Your attention divides the scores by d_k instead of sqrt(d_k).",
        )
    ],
)


def test_the_ladder_keeps_every_stage_in_order_and_names_the_first_failing():
    ladder = stage_ladder(REPORT)
    assert ladder.stages == ["embeddings.sum", "layer.0.attention.probs", "layer.0.output"]
    assert ladder.first_failing == 1 and ladder.tolerance == TOLERANCE
    frame = ladder.to_frame()
    assert list(frame.columns) == ["stage", "max_abs_diff", "tolerance", "ok"]
    assert frame["max_abs_diff"].tolist()[:2] == [0.0, 0.31] and frame["ok"].tolist() == [True, False, False]
    assert stage_ladder(Report("match", STAGES[:1])).first_failing is None
    assert stage_ladder(Report("error")).stages == []


def test_the_figure_is_on_a_log_scale_with_the_tolerance_line_and_the_first_difference_marked():
    fig = stage_ladder_figure(stage_ladder(REPORT))
    assert isinstance(fig, go.Figure) and fig.layout.xaxis.type == "log"
    points = fig.data[0]
    assert list(points.y) == [s.name for s in STAGES]
    assert (
        points.x[0] == FLOOR and points.x[1] == 0.31 and points.x[2] > 0.31
    )  # 0 on the floor, n/a at the edge
    assert list(points.marker.color) == ["#2ca02c", "#d62728", "#d62728"]
    assert fig.layout.shapes[0].x0 == TOLERANCE
    notes = {a.text: a.y for a in fig.layout.annotations}
    assert notes["first difference"] == "layer.0.attention.probs" and f"tolerance {TOLERANCE:g}" in notes


def test_each_finding_says_what_to_change():
    assert set(CHANGE) <= set(CODES)
    sentence = what_to_change(REPORT.findings[0])
    assert sentence.startswith("Your attention divides") and "math.sqrt(head_size)" in sentence
    leftover = Finding(
        "unexplained", "layer.0.output", "layer.0.output differs from BERT: compare this step."
    )
    assert what_to_change(leftover) == leftover.message


def test_one_stage_side_by_side_per_pair_and_head():
    ours = {
        "layer.0.attention.probs": torch.rand(4, 2, 5, 5),
        "layer.0.output": torch.rand(4, 5, 8),
        "nsp_logits": torch.rand(4, 2),
    }
    theirs = {
        "layer.0.attention.probs": ours["layer.0.attention.probs"] * 2,
        "layer.0.output": ours["layer.0.output"].transpose(0, 1),  # (T, B, H): turned as compare does
        "nsp_logits": ours["nsp_logits"],
        "embeddings.sum": torch.rand(3),
    }
    report = Report("differs", STAGES, tensors={"theirs": theirs, "ours": ours})
    assert stage_shape(report, "layer.0.attention.probs") == (4, 2) and stage_shape(report, "nsp_logits") == (
        1,
        1,
    )
    sides = stage_sides(report, "layer.0.attention.probs", pair=3, head=1)
    assert sides.which == "pair 4, head 2" and (sides.rows, sides.columns) == ("query token", "key token")
    assert torch.allclose(torch.from_numpy(sides.difference), ours["layer.0.attention.probs"][3, 1].double())
    hidden = stage_sides(report, "layer.0.output", pair=9)  # clamped to the last pair
    assert hidden.which == "pair 4" and hidden.theirs.shape == (5, 8) and abs(hidden.difference).max() < 1e-6
    frame = hidden.to_frame()
    assert list(frame.columns) == ["token", "unit", "theirs", "ours", "difference"] and len(frame) == 40
    assert stage_sides(report, "nsp_logits").theirs.shape == (4, 2)
    with pytest.raises(ValueError, match="kept no numbers"):
        stage_sides(report, "pooler")
    fig = stage_sides_figure(sides)
    assert [t.type for t in fig.data] == ["heatmap"] * 3
    assert fig.data[2].zmin == -fig.data[2].zmax  # the difference: centred on 0
    assert fig.data[0].zmax == fig.data[1].zmax  # yours and BERT's on one colour range
    assert fig.data[0].zmin == 0 and fig.data[0].colorscale != fig.data[2].colorscale  # probabilities: from 0
