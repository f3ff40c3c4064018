"""The Train page's attention replay in AppTest, on run folders whose snapshots are written directly (no training)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bertviz_lite.inspection.views.replay import COLOUR_SCALES, pattern_shares
from bertviz_lite.loading.checkpoints import save_snapshot
from bertviz_lite.loading.run_folder import write_status
from tests.app.training_helpers import array, chart, open_app, open_replay, traces, use_checkpoints_folder

TRAIN = "pages_app/train/8_Train.py"
TOKENS = ["[CLS]", "the", "cat", "sat", "[SEP]", "it", "slept", "[SEP]"]
STEPS = (0, 20, 40, 60)


@pytest.fixture
def root(monkeypatch, tmp_path):
    return use_checkpoints_folder(monkeypatch, tmp_path / "checkpoints")


def attention_at(step: int, seed: int = 0) -> torch.Tensor:
    """[2 layers, 3 heads, T, T]: flat at step 0, sharper with every step."""
    logits = torch.randn(2, 3, len(TOKENS), len(TOKENS), generator=torch.Generator().manual_seed(seed + step))
    return torch.softmax(logits * step / 10, dim=-1)


def prediction(step: int) -> dict:
    return {
        "position": 2,
        "answer": "cat",
        "top_tokens": ["cat", "dog", "the", "sat", "it"],
        "top_probs": [0.2 + step / 100, 0.1, 0.05, 0.04, 0.03],
        "answer_prob": 0.2 + step / 100,
        "is_next_prob": 0.4 + step / 200,
    }


def make_run(root, name: str, with_predictions: bool = True) -> None:
    """A finished run folder with a snapshot at every step of STEPS."""
    (root / name).mkdir()
    for step in STEPS:
        save_snapshot(
            root / name,
            step,
            attention_at(step),
            TOKENS,
            texts=("The cat sat.", "It slept."),
            predictions=prediction(step) if with_predictions else None,
        )
    write_status(root / name, state="finished", message="Finished", step=STEPS[-1], total_steps=STEPS[-1])


def shown_step(at) -> int:
    return int(at.select_slider(key="replay_step").value)


def colour_ranges(at) -> set[tuple]:
    heat = chart(at, "replay_heatmap").data[0]
    mosaic = chart(at, "replay_mosaic").data[0]
    return {(heat.zmin, heat.zmax), (mosaic.zmin, mosaic.zmax)}


def test_the_replay_keeps_one_colour_range_and_shows_predictions_and_patterns(root):
    make_run(root, "lapse")
    at = open_app(TRAIN, query={"run": "lapse"})
    assert at.toggle(key="replay_open").value is False, "the replay is closed until a visitor opens it"
    assert not [element for element in at.get("plotly_chart") if "-replay_" in element.proto.id], (
        "closed: no chart"
    )
    at = open_replay(at)
    assert not at.exception and shown_step(at) == STEPS[-1]
    assert at.button(key="replay_play").label == "Play"
    for scale, top in (
        (COLOUR_SCALES[0], 1.0),
        (COLOUR_SCALES[1], max(float(attention_at(s).max()) for s in STEPS)),
    ):
        at.radio(key="replay_scale").set_value(scale).run()
        ranges = set()
        for step in STEPS:
            at.select_slider(key="replay_step").set_value(step).run()
            assert not at.exception and shown_step(at) == step
            ranges |= colour_ranges(at)
        assert len(ranges) == 1 and ranges.pop() == pytest.approx((0.0, top), abs=1e-3)  # float16 snapshots
        assert any(f"to {top:.3g} (dark blue) at every step" in caption.value for caption in at.caption)
    shown = traces(at, "replay_predictions")
    assert shown["P(answer)"] == (list(STEPS), pytest.approx([prediction(s)["answer_prob"] for s in STEPS]))
    assert shown["P(IsNext)"][1] == pytest.approx([prediction(s)["is_next_prob"] for s in STEPS])
    assert list(chart(at, "replay_guesses").data[0].y) == prediction(60)["top_tokens"]
    assert "NSP head at step 60: B follows A with probability **70.0%**" in [m.value for m in at.markdown]
    at.radio(key="replay_pattern").set_value("previous").run()
    spec = chart(at, "replay_specialisation").data[0]
    expected = np.stack(
        [pattern_shares(attention_at(s).half().numpy(), TOKENS)[..., 2].ravel() for s in STEPS], 1
    )
    assert list(spec.y)[:4] == ["L0 H0", "L0 H1", "L0 H2", "L1 H0"] and list(spec.x) == [
        str(s) for s in STEPS
    ]
    assert np.allclose(array(spec.z), expected, atol=1e-6)


def test_play_steps_through_the_snapshots_and_stops_at_the_last(root):
    make_run(root, "lapse")
    at = open_replay(open_app(TRAIN, query={"run": "lapse"}))
    at.selectbox(key="replay_layer").set_value(1).run()
    at.button(key="replay_play").click().run()  # Play at the last snapshot starts again from the first
    assert not at.exception and shown_step(at) == 0 and at.button(key="replay_play").label == "Pause"
    seen = [shown_step(at)]
    for _ in STEPS[1:]:
        at.run()  # what the fragment's timer does every PLAY_S seconds while playing
        seen.append(shown_step(at))
    assert seen == list(STEPS) and at.selectbox(key="replay_layer").value == 1
    assert at.button(key="replay_play").label == "Pause"
    at.run()  # past the last snapshot: Play ends there
    assert shown_step(at) == STEPS[-1] and at.button(key="replay_play").label == "Play"
    at.run()
    assert shown_step(at) == STEPS[-1]


def test_pause_and_the_slider_stop_playing(root):
    make_run(root, "lapse")
    at = open_replay(open_app(TRAIN, query={"run": "lapse"}))
    at.button(key="replay_play").click().run()
    at.run()
    assert shown_step(at) == 20
    at.selectbox(key="replay_head").set_value(2).run()  # a picker changed while playing: the step stays
    assert shown_step(at) == 20 and at.selectbox(key="replay_head").value == 2
    at.button(key="replay_play").click().run()  # Pause
    at.run()
    assert shown_step(at) == 20 and at.button(key="replay_play").label == "Play"
    at.button(key="replay_play").click().run()
    at.select_slider(key="replay_step").set_value(0).run()  # moving the slider stops playing
    at.run()
    assert shown_step(at) == 0 and at.button(key="replay_play").label == "Play"


def test_old_snapshots_without_predictions_say_so(root):
    make_run(root, "old", with_predictions=False)
    at = open_replay(open_app(TRAIN, query={"run": "old"}))
    assert not at.exception and not at.error
    assert any("hold no MLM/NSP predictions" in info.value for info in at.info)
    keys = {element.proto.id.rsplit("-", 1)[-1] for element in at.get("plotly_chart")}
    assert {"replay_heatmap", "replay_mosaic", "replay_specialisation"} <= keys
    assert not {"replay_guesses", "replay_predictions"} & keys
