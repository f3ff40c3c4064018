"""Issue 22: run folders are read defensively (an upload can hold anything): bad lines are skipped with a note,
reads are capped, curves are downsampled before they are drawn."""

from __future__ import annotations

import json

from bertviz_lite import limits
from bertviz_lite.figures.training import compare_runs, downsample
from bertviz_lite.loading import run_folder
from bertviz_lite.loading.run_folder import load_metrics, read_status, read_train_args
from bertviz_lite.runs import lifecycle
from devtools.waiting import wait_until

HUGE = "9" * 400


def test_a_400_digit_loss_or_step_is_skipped_with_a_note(tmp_path):
    (tmp_path / "metrics.jsonl").write_text(
        '{"split": "train", "step": 1, "mlm_loss": 2.5}\n'
        f'{{"split": "train", "step": 2, "mlm_loss": {HUGE}}}\n'
        f'{{"split": "train", "step": {HUGE}, "mlm_loss": 1.0}}\n'
        '{"split": "train", "step": 3, "mlm_loss": [1]}\n'
        '{"split": "train", "step": true, "mlm_loss": 1.0}\n'
        '{"split": "train", "step": 4, "mlm_loss": 1e308, "lr": 1e400}\n'  # 1e400 parses as inf
    )
    metrics = load_metrics(tmp_path)
    assert metrics.records == [{"split": "train", "step": 1, "mlm_loss": 2.5}]
    assert metrics.skipped == 5 and "5 lines skipped" in metrics.note
    figure = compare_runs({"poisoned": metrics.records}, "mlm_loss")  # drew nothing it could not draw
    assert list(figure.data[0].x) == [1]


def test_a_half_written_last_line_is_skipped_silently(tmp_path):
    (tmp_path / "metrics.jsonl").write_text('{"step": 1, "loss": 2.0}\n{"step": 2, "lo')
    metrics = load_metrics(tmp_path)
    assert len(metrics.records) == 1 and metrics.note == ""


def test_reads_are_capped_to_the_files_tail(tmp_path, monkeypatch):
    monkeypatch.setattr(run_folder, "MAX_METRICS_READ_LINES", 100)
    (tmp_path / "metrics.jsonl").write_text("".join(f'{{"step": {i}, "loss": 1.0}}\n' for i in range(1000)))
    metrics = load_metrics(tmp_path)
    assert [r["step"] for r in metrics.records] == list(range(900, 1000)) and metrics.truncated
    assert "only its last" in metrics.note
    assert len(load_metrics(tmp_path, capped=False).records) == 1000  # the trainer's resume reads all of it
    monkeypatch.setattr(run_folder, "MAX_METRICS_READ_BYTES", 1000)
    steps = [r["step"] for r in load_metrics(tmp_path).records]
    assert steps[-1] == 999 and len(steps) < 60  # starts at a whole line


def test_long_curves_are_downsampled_keeping_both_ends():
    xs = list(range(372_933))
    small_x, small_y = downsample(xs, xs)
    assert len(small_x) == limits.MAX_POINTS_DRAWN and small_x[0] == 0 and small_x[-1] == 372_932
    assert downsample([1, 2], [3, 4]) == ([1, 2], [3, 4])


def test_status_fields_of_the_wrong_type_or_size_read_as_none(tmp_path):
    (tmp_path / "status.json").write_text(
        f'{{"state": "finished", "step": {HUGE}, "total_steps": "x", "pid": [1], "eta_s": {HUGE}, "message": 5}}'
    )
    status = read_status(tmp_path)
    assert status["step"] is None and status["total_steps"] is None and status["pid"] is None
    assert status["eta_s"] is None and status["message"] == ""
    state = lifecycle.run_state(tmp_path)
    assert (state.state, state.step, state.total_steps) == ("finished", 0, None)
    (tmp_path / "status.json").write_text('{"state": "owned", "step": 1}')
    assert read_status(tmp_path) is None


def test_train_args_of_the_wrong_types_read_as_empty(tmp_path):
    (tmp_path / "train_args.json").write_text('{"config": [1, 2], "args": "x"}')
    assert read_train_args(tmp_path) == {"config": {}, "args": {}}
    assert lifecycle.hyperparameters(tmp_path) == {}
    (tmp_path / "train_args.json").write_text(
        json.dumps({"config": {"hidden_size": int(HUGE)}, "args": {"x": [1]}})
    )
    assert lifecycle.hyperparameters(tmp_path) == {"hidden_size": "a 400-digit number", "x": "[1]"}


def test_json_files_past_the_limit_are_not_read(tmp_path):
    (tmp_path / "status.json").write_text(
        '{"state": "finished", "message": "' + "x" * limits.MAX_JSON_BYTES + '"}'
    )
    assert read_status(tmp_path) is None


def test_a_checkpoint_named_like_a_folder_of_the_working_directory_loads_the_checkpoint(
    tmp_path, monkeypatch
):
    from bertviz_lite.loading import pretrained

    (tmp_path / "cwd" / "bench").mkdir(parents=True)  # the server's own ./bench
    (tmp_path / "checkpoints" / "bench").mkdir(parents=True)  # an upload named "bench"
    monkeypatch.chdir(tmp_path / "cwd")
    monkeypatch.setattr(run_folder, "CHECKPOINTS_DIR", tmp_path / "checkpoints")
    assert pretrained.resolve_source("bench") == tmp_path / "checkpoints" / "bench"


def test_finished_training_processes_are_reaped(monkeypatch):
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    monkeypatch.setitem(lifecycle._CHILDREN, child.pid, child)
    state = lambda: open(f"/proc/{child.pid}/stat").read().rsplit(")", 1)[-1].split()[0]  # noqa: E731
    wait_until(lambda: state() == "Z", 10, "the finished child to become a zombie")
    assert child.pid in lifecycle.reap_children()
    assert child.returncode == 0 and child.pid not in lifecycle._CHILDREN
