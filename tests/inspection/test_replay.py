"""The training replay: pattern shares on hand-made maps, a fixed colour range, predictions over steps."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bertviz_lite.figures.replay import (
    guesses_bar,
    prediction_curves,
    replay_heatmap,
    replay_model_view,
    specialisation_heatmap,
)
from bertviz_lite.inspection.views import model_view_tiles
from bertviz_lite.inspection.views.replay import (
    COLOUR_SCALES,
    PATTERNS,
    colour_range,
    next_step,
    pattern_shares,
    read_summary,
    replay,
    replay_frame,
    summarise_snapshot,
)
from bertviz_lite.loading.checkpoints import (
    file_version,
    load_snapshot,
    load_snapshot_predictions,
    save_snapshot,
    snapshot_path,
)
from bertviz_lite.loading.pretrained import DEMO
from bertviz_lite.loading.run_folder import CHECKPOINTS_DIR

TOKENS = ["[CLS]", "a", "b", "[SEP]", "c", "[SEP]"]  # T = 6, no padding
SHARE = {name: i for i, name in enumerate(PATTERNS)}


def shifted(length: int, offset: int) -> np.ndarray:
    """A head that sends row i wholly to key i + offset (clipped to the sequence)."""
    att = np.zeros((length, length))
    for i in range(length):
        att[i, min(max(i + offset, 0), length - 1)] = 1.0
    return att


def stack(*heads: np.ndarray) -> np.ndarray:
    return np.stack(heads)[None]  # [1, H, T, T]


def test_a_previous_token_head_scores_one_on_previous_and_exactly_its_share_elsewhere():
    shares = pattern_shares(stack(shifted(6, -1)), TOKENS)[0, 0]
    # row 0 goes to itself ([CLS]); rows 1-5 to their previous token: [CLS] gets row 0 and row 1 = 2/6;
    # [SEP] (positions 3 and 5) gets rows 4 and 6 (none) -> row 4 only = 1/6; previous over rows 1-5 = 1; self: row 0 = 1/6
    assert shares.tolist() == pytest.approx([2 / 6, 1 / 6, 1.0, 0.0, 1 / 6])


def test_next_self_cls_and_uniform_heads():
    uniform = np.full((6, 6), 1 / 6)
    cls_head = np.zeros((6, 6))
    cls_head[:, 0] = 1.0
    shares = pattern_shares(stack(shifted(6, 1), shifted(6, 0), cls_head, uniform), TOKENS)[0]
    next_head, self_head, cls_only, flat = shares
    assert next_head[SHARE["next"]] == 1.0 and next_head[SHARE["self"]] == pytest.approx(
        1 / 6
    )  # the last row keeps itself
    assert next_head[SHARE["[SEP]"]] == pytest.approx(3 / 6)  # rows 2, 4 and 5 land on a [SEP]
    assert self_head.tolist() == pytest.approx([1 / 6, 2 / 6, 0.0, 0.0, 1.0])
    assert cls_only.tolist() == pytest.approx(
        [1.0, 0.0, 1 / 5, 0.0, 1 / 6]
    )  # previous: only row 1's key is [CLS]
    assert flat.tolist() == pytest.approx([1 / 6, 2 / 6, 1 / 6, 1 / 6, 1 / 6])


def test_padding_rows_are_left_out_of_every_average():
    tokens = ["[CLS]", "a", "[SEP]", "[PAD]", "[PAD]"]
    att = shifted(5, -1)
    att[3:] = 0.5  # padding rows: any numbers, they must not count
    shares = pattern_shares(stack(att), tokens)[0, 0]
    # real rows 0-2: row 0 -> itself, rows 1-2 -> previous; "next" exists for rows 0-1 only
    assert shares.tolist() == pytest.approx([2 / 3, 0.0, 1.0, 0.0, 1 / 3])


def test_shapes_are_checked():
    with pytest.raises(ValueError, match=r"T = 5"):
        pattern_shares(np.zeros((1, 1, 6, 6)), TOKENS[:5])


def test_the_colour_range_is_the_same_on_every_steps_figures():
    rng = np.random.default_rng(0)
    steps = [np.full((2, 2, 6, 6), 1 / 6)]  # an untrained model: every weight about 1/T
    steps += [rng.dirichlet(np.full(6, alpha), size=(2, 2, 6)) for alpha in (1.0, 0.1)]
    lapse = replay([summarise_snapshot(i * 10, att, TOKENS) for i, att in enumerate(steps)])
    assert lapse.largest_weight == pytest.approx(max(float(att.max()) for att in steps))
    for scale in COLOUR_SCALES:
        zrange = colour_range(scale, lapse.largest_weight)
        ranges = set()
        for att in steps:
            heat = replay_heatmap(att[1, 0], TOKENS, zrange).data[0]
            mosaic = replay_model_view(model_view_tiles(att, TOKENS), zrange).data[0]
            ranges |= {(heat.zmin, heat.zmax), (mosaic.zmin, mosaic.zmax)}
            assert heat.zauto is False and mosaic.zauto is False
        assert ranges == {zrange}
    assert colour_range(COLOUR_SCALES[0], 0.3) == (0.0, 1.0)
    assert colour_range(COLOUR_SCALES[1], 0.3) == (0.0, 0.3)


def prediction(step: int) -> dict:
    p = step / 100
    return {
        "position": 2,
        "answer": "b",
        "top_tokens": ["b", "a", "c"] if step else ["a", "c", "b"],
        "top_probs": [0.5 + p / 4, 0.3, 0.1],
        "answer_prob": 0.1 + p / 2,
        "is_next_prob": 0.5 + p / 3,
    }


def test_predictions_over_steps_from_saved_snapshots(tmp_path):
    attention = torch.softmax(torch.randn(2, 2, 6, 6), -1)
    save_snapshot(tmp_path, 0, attention, TOKENS)  # a run that saved no predictions at step 0
    for step in (50, 100):
        save_snapshot(tmp_path, step, attention, TOKENS, predictions=prediction(step))
    summaries = []
    for step in (100, 0, 50):
        path = snapshot_path(tmp_path, step)
        summaries.append(summarise_snapshot(*load_snapshot(path), load_snapshot_predictions(path)))
    series = replay(summaries).predictions
    assert series.steps == (50, 100) and series.missing_steps == (0,) and series.answer == "b"
    frame = series.to_frame()
    assert list(frame.columns) == [
        "step",
        "answer",
        "answer_prob",
        "is_next_prob",
        "guess_1",
        "prob_1",
        "guess_2",
        "prob_2",
        "guess_3",
        "prob_3",
    ]
    assert frame["step"].tolist() == [50, 100]
    assert frame["answer_prob"].tolist() == pytest.approx([0.35, 0.6])
    assert frame["is_next_prob"].tolist() == pytest.approx([0.5 + 0.5 / 3, 0.5 + 1 / 3])
    assert frame["guess_1"].tolist() == ["b", "b"] and frame["prob_1"].tolist() == pytest.approx(
        [0.625, 0.75]
    )
    curves = prediction_curves(series, step=50)
    assert [trace.name for trace in curves.data] == ["P(answer)", "P(IsNext)"]
    assert list(curves.data[0].y) == pytest.approx([0.35, 0.6]) and curves.layout.shapes[0].x0 == 50
    bar = guesses_bar(series, 100)
    assert list(bar.data[0].y) == ["b", "a", "c"] and list(bar.data[0].marker.color)[0] == "#2ca02c"
    with pytest.raises(ValueError, match="step 0 has no saved predictions"):
        guesses_bar(series, 0)


def test_a_run_without_predictions_gives_an_empty_series():
    lapse = replay([summarise_snapshot(0, np.full((1, 1, 6, 6), 1 / 6), TOKENS)])
    assert lapse.predictions.steps == () and lapse.predictions.missing_steps == (0,)
    assert lapse.predictions.to_frame().empty


def test_specialisation_over_steps_frame_and_figure():
    heads = [stack(shifted(6, 0), shifted(6, -1)), stack(shifted(6, -1), shifted(6, -1))]
    lapse = replay([summarise_snapshot(step, att, TOKENS) for step, att in zip((0, 20), heads, strict=True)])
    spec = lapse.specialisation
    assert spec.steps == (0, 20) and spec.shares.shape == (2, 1, 2, len(PATTERNS))
    frame = spec.to_frame()
    assert len(frame) == 2 * 2 * len(PATTERNS)
    row = frame[
        (frame["step"] == 20)
        & (frame["layer"] == 0)
        & (frame["head"] == 0)
        & (frame["pattern"] == "previous")
    ]
    assert row["share"].tolist() == [1.0]
    fig = specialisation_heatmap(spec, "previous", step=20)
    assert list(fig.data[0].y) == ["L0 H0", "L0 H1"] and list(fig.data[0].x) == ["0", "20"]
    assert np.asarray(fig.data[0].z).tolist() == [[0.0, 1.0], [1.0, 1.0]]
    assert (fig.data[0].zmin, fig.data[0].zmax) == (0, 1)
    with pytest.raises(ValueError, match="pattern"):
        spec.pattern("middle")


def test_snapshot_files_read_back_as_summaries_and_frames_and_unreadable_ones_say_so(tmp_path):
    attention = torch.softmax(torch.randn(2, 3, 6, 6), -1)
    path = save_snapshot(tmp_path, 40, attention, TOKENS, predictions=prediction(40))
    summary = read_summary(path)
    assert summary.step == 40 and summary.shares.shape == (2, 3, len(PATTERNS))
    assert summary.predictions["answer"] == "b" and summary.largest_weight == pytest.approx(
        float(attention.half().max()), abs=1e-3
    )
    frame = replay_frame(path)
    assert frame.attentions.shape == (2, 3, 6, 6) and frame.tokens == TOKENS
    assert frame.overview.tiles.shape[:2] == (2, 3)
    assert file_version(path) == path.stat().st_mtime_ns and file_version(tmp_path / "gone") == 0
    broken = tmp_path / "snapshots" / "step_000050.safetensors"
    broken.write_bytes(b"half written")
    assert read_summary(broken) is None
    with pytest.raises(ValueError, match="not a readable attention snapshot"):
        replay_frame(broken)


def test_play_moves_to_the_next_saved_step_and_ends_after_the_last():
    steps = [0, 50, 100]
    assert [next_step(steps, step) for step in (None, 0, 50, 100, 70)] == [0, 50, 100, None, 100]


@pytest.mark.skipif(
    not (CHECKPOINTS_DIR / DEMO / "snapshots").is_dir(), reason="checkpoints/demo-tiny is not installed"
)
def test_the_shipped_demo_run_replays_its_predictions_at_every_snapshot():
    snapshots = sorted((CHECKPOINTS_DIR / DEMO / "snapshots").glob("step_*.safetensors"))
    assert len(snapshots) > 10
    for path in snapshots:
        predictions = load_snapshot_predictions(path)
        assert predictions is not None, path.name
        assert len(predictions["top_tokens"]) == 5 and 0.0 <= predictions["is_next_prob"] <= 1.0
