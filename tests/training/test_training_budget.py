"""Issue 22: training budgets: memory and steps × batch checked before an app run starts, one running run per
visitor, and the admin (the lecturer) always gets the slot."""

from __future__ import annotations

import os

import pytest

from bertviz_lite import limits
from bertviz_lite.loading.run_folder import RunFolder
from bertviz_lite.runs import lifecycle, run_options
from bertviz_lite.server import access
from bertviz_lite.training.training_args import OptionError

A = access.Visitor("visitor-a-0123456789abcdef")
B = access.Visitor("visitor-b-0123456789abcdef")
ADMIN = access.Visitor("lecturer-0123456789abcdef", admin=True)


def test_base_at_batch_682_and_512_tokens_is_refused_before_it_starts():
    options = {**run_options.preset_options("base"), "seq_len": 512, "batch_size": 682}
    with pytest.raises(OptionError, match=r"would need about .* MB of memory .* batch 682 × 512 tokens"):
        run_options.check_form(options)
    run_options.check_form(run_options.preset_options("base"))  # the preset itself fits the default limit


def test_a_billion_steps_is_refused_for_app_runs(tmp_path):
    with pytest.raises(OptionError, match="steps × batch 32 .* at most"):
        run_options.check_form(
            {**run_options.preset_options("tiny"), "steps": 10**7}
        )  # 10**9: past steps' bound
    with pytest.raises(ValueError, match="at most"):
        lifecycle.launch_run({"preset": "tiny", "steps": 10**9}, root=tmp_path, owner=A)
    assert list(tmp_path.iterdir()) == []


def test_the_memory_limit_is_a_setting(monkeypatch):
    config = run_options.check_options(run_options.preset_options("tiny"))
    need = limits.training_memory_bytes(config.bert_config(config.vocab_size), 32, 64)
    monkeypatch.setenv(limits.TRAIN_MEMORY_SETTING, str(need / limits.MB / 2))
    with pytest.raises(OptionError, match=limits.TRAIN_MEMORY_SETTING):
        run_options.check_form(run_options.preset_options("tiny"))


@pytest.fixture
def fake_processes(monkeypatch):
    """launch_run without a training process: a launch.json and a run that counts as starting."""

    def start(run_dir, command):
        lifecycle.atomic_write_json(RunFolder(run_dir).launch, {"pid": os.getpid(), "command": command})

    monkeypatch.setattr(lifecycle, "_start_process", start)
    monkeypatch.setattr(lifecycle, "training_process_alive", lambda pid: pid == os.getpid())


def test_one_running_run_per_visitor(tmp_path, fake_processes):
    lifecycle.launch_run({"preset": "tiny", "steps": 20}, root=tmp_path, name="a1", max_runs=3, owner=A)
    with pytest.raises(lifecycle.RunLimitError, match="You already have a run training \\(a1\\)"):
        lifecycle.launch_run({"preset": "tiny", "steps": 20}, root=tmp_path, name="a2", max_runs=3, owner=A)
    lifecycle.launch_run({"preset": "tiny", "steps": 20}, root=tmp_path, name="b1", max_runs=3, owner=B)
    assert sorted(run.name for run in lifecycle.active_runs(tmp_path)) == ["a1", "b1"]


def test_the_admin_gets_the_slot_and_stops_any_run(tmp_path, fake_processes):
    lifecycle.launch_run({"preset": "tiny", "steps": 20}, root=tmp_path, name="a1", owner=A)
    with pytest.raises(lifecycle.RunLimitError):
        lifecycle.launch_run({"preset": "tiny", "steps": 20}, root=tmp_path, name="b1", owner=B)
    lifecycle.launch_run({"preset": "tiny", "steps": 20}, root=tmp_path, name="lecture", owner=ADMIN)
    assert RunFolder(tmp_path / "a1").stop_requested()  # preempted: it saves and stops
    assert not RunFolder(tmp_path / "lecture").stop_requested()
    with pytest.raises(PermissionError):
        lifecycle.stop_run(tmp_path / "lecture", visitor=B)
    lifecycle.stop_run(tmp_path / "lecture", visitor=ADMIN)
    assert RunFolder(tmp_path / "lecture").stop_requested()
