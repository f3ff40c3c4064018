"""A learner's own BERT on the training pages: Your BERT offered only where code may run, a run started from the Train
page that learns and replays its attention, its place on Compare runs and Checkpoints, and what a model that hides its
attention says instead."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bertviz_lite.loading.run_folder import RunFolder, read_metrics
from bertviz_lite.runs import lifecycle
from bertviz_lite.server import access
from bertviz_lite.server.balancer import WORKER_SETTING
from bertviz_lite.server.code_gate import ALLOW_CODE_SETTING
from bertviz_lite.text.display import plain_markdown
from tests.app.training_helpers import (
    VISITOR_A,
    array,
    chart,
    checkpoints_folder_for_runs,
    fill_form,
    open_app,
    open_replay,
    rerun_when_ended,
    state_shown,
)

REPO = Path(__file__).resolve().parents[2]
LEARNERS = REPO / "tests" / "check" / "learners"
TRAIN = "pages_app/train/8_Train.py"
COMPARE = "pages_app/train/9_Compare_runs.py"
CHECKPOINTS = "pages_app/train/10_Checkpoints.py"
SMALL = {"hidden_size": 32, "num_attention_heads": 4, "intermediate_size": 64}


@pytest.fixture
def root(monkeypatch, tmp_path):
    monkeypatch.delenv(ALLOW_CODE_SETTING, raising=False)
    monkeypatch.delenv(WORKER_SETTING, raising=False)
    with checkpoints_folder_for_runs(monkeypatch, tmp_path / "checkpoints") as folder:
        yield folder


def start_choices(at) -> list[str]:
    return list(at.selectbox(key="opt_init").options)


def test_your_bert_is_offered_only_where_code_may_run(root, monkeypatch):
    at = open_app(TRAIN)  # AppTest's server has no address: it would listen on every interface
    assert not at.exception and "Your BERT" not in start_choices(at)
    monkeypatch.setenv(ALLOW_CODE_SETTING, "1")
    assert "Your BERT" in start_choices(open_app(TRAIN))
    monkeypatch.delenv(ALLOW_CODE_SETTING)
    monkeypatch.setenv(WORKER_SETTING, "1")  # a worker of `serve`
    assert "Your BERT" not in start_choices(open_app(TRAIN))
    options = {"preset": "tiny", "model_file": str(LEARNERS / "hf_style.py")}
    with pytest.raises(ValueError, match="Training your own BERT is off on this server"):
        lifecycle.launch_run(options, root=root, owner=access.Visitor(VISITOR_A))
    assert not [path for path in root.iterdir() if not path.name.startswith(".")]


@pytest.mark.slow
def test_a_learners_model_trains_from_the_train_page_replays_and_opens_on_the_explore_pages(
    root, monkeypatch
):
    monkeypatch.setenv(ALLOW_CODE_SETTING, "1")
    at = open_app(TRAIN)
    at.selectbox(key="opt_init").set_value("Your BERT").run()
    assert at.button(key="train_start").disabled  # no file yet: said, and Start waits for it
    assert "Give the .py file of your model (FILE or FILE:CLASS)." in [e.value for e in at.error]
    at.text_input(key="train_model_file").set_value(str(LEARNERS / "hf_style.py")).run()
    at = fill_form(at, steps=40, **SMALL)
    at.text_input(key="train_run_name").set_value("mine").run()
    assert not at.error and any("Your BERT (hf_style.py) at these sizes" in c.value for c in at.caption)
    at.button(key="train_start").click().run()
    assert state_shown(rerun_when_ended(at, root / "mine", 120)) == "finished"
    assert not at.exception
    losses = [r["loss"] for r in read_metrics(root / "mine", "train")]
    assert np.mean(losses[-3:]) < np.mean(losses[:3]), losses
    assert RunFolder(root / "mine").learner_weights.is_file()
    note = plain_markdown("This run trains your own BERT, Bert in hf_style.py (MLM and NSP).")
    assert note in [caption.value for caption in at.caption]
    at = open_replay(at)
    z = array(chart(at, "replay_heatmap").data[0].z)  # the replay: the last snapshot, rows summing to 1
    assert z.shape[0] == z.shape[1] > 4 and np.allclose(z.sum(axis=1), 1, atol=1e-2)
    assert at.select_slider(key="replay_step").options == ["0", "10", "20", "30", "40"]
    compare = open_app(COMPARE)
    assert not compare.exception and "mine" in compare.multiselect[0].options
    checkpoints = open_app(CHECKPOINTS)
    assert not checkpoints.exception and "mine" in list(checkpoints.dataframe[0].value["name"])
    checkpoints.selectbox(key="ckpt_selected").set_value("mine").run()
    assert any("need your file to run" in info.value for info in checkpoints.info)
    checkpoints.button(
        key="ckpt_use"
    ).click().run()  # its run opens on the explore pages, with its own weights
    assert checkpoints.session_state["model_picker"] == "Your BERT: Bert in hf_style.py with mine's weights"
    checkpoints.switch_page("pages_app/explore/3_Attention.py").run()
    assert not checkpoints.exception and not checkpoints.error
    z = array(chart(checkpoints, "attention_heatmap").data[0].z)
    assert np.allclose(z.sum(axis=1), 1, atol=1e-3)


@pytest.mark.slow
def test_a_model_that_hides_its_attention_says_so_where_the_replay_would_be(root):
    done = subprocess.run(
        [
            *(
                sys.executable,
                "-m",
                "bertviz_lite.train",
                "--model-file",
                str(LEARNERS / "solution" / "bert.py"),
            ),
            *("--preset", "tiny", "--num-documents", "150", "--vocab-size", "300", "--seq-len", "32"),
            *("--batch-size", "8", "--eval-pairs", "32", "--threads", "1", "--quiet", "--steps", "10"),
            *("--hidden-size", "32", "--num-attention-heads", "4", "--intermediate-size", "64"),
            *("--out", str(root / "hidden")),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    at = open_replay(open_app(TRAIN, query={"run": "hidden"}))
    assert not at.exception and state_shown(at) == "finished"
    assert any("(MLM only: it has no NSP head)" in c.value for c in at.caption)
    gap = plain_markdown(
        "Bert in bert.py does not expose its attention probabilities (a softmax written inline"
    )
    assert [info.value for info in at.info][-1].startswith(gap)
