"""Training runs as processes: the command line, states read from the run folder, the limit, stop, crashes."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bertviz_lite.loading import checkpoints, pretrained, run_folder
from bertviz_lite.loading.run_folder import read_metrics, write_status
from bertviz_lite.runs import lifecycle, run_options
from bertviz_lite.server import access, settings
from bertviz_lite.training.cli import arguments_from_namespace, build_parser
from devtools.waiting import wait_until
from tests.server.app_processes import forkserver, in_another_app_process, launch_and_exit

REPO = Path(__file__).resolve().parents[2]
# Small enough to start in a few seconds on 2 cores; `steps` is set per test.
FAST = {
    "preset": "tiny",
    "num_documents": 200,
    "vocab_size": 200,
    "seq_len": 32,
    "batch_size": 8,
    "eval_pairs": 32,
    "log_every": 2,
    "eval_every": 10,
    "snapshot_every": 10,
    "threads": 1,
}

# A process that lives until its stdin closes: when the test kills it, or when pytest itself ends.
BLOCK = "import sys; sys.stdin.read()"


@pytest.fixture
def sleeper():
    """A live process whose command line names the training module: a stand-in for a run's process."""
    process = subprocess.Popen([sys.executable, "-c", BLOCK, lifecycle.TRAIN_MODULE], stdin=subprocess.PIPE)
    yield process
    process.kill()
    process.wait()


# ---- command line --------------------------------------------------------------------------------


def test_the_command_line_parses_back_to_the_same_arguments(tmp_path):
    options = {
        **run_options.preset_options("small"),
        "hidden_size": 96,
        "num_attention_heads": 3,
        "lr": 3e-4,
        "position_embedding_type": "sinusoidal",
        "steps": 7,
        "save_every": 0,
    }
    args = run_options.check_options(options, out=str(tmp_path / "r"))
    command = lifecycle.training_command(tmp_path / "r", run_options.command_options(args))
    assert command[:3] == [sys.executable, "-m", "bertviz_lite.train"]
    assert command[-2:] == ["--out", str(tmp_path / "r")]
    assert "--hidden-size" in command and "--position-embedding-type" in command
    parsed = arguments_from_namespace(build_parser().parse_args(command[3:]))
    assert parsed == args


def test_option_flags_skip_none_and_false_and_give_true_flags_alone():
    assert lifecycle.option_flags({"steps": 5, "lr": None, "corpus": "builtin"}) == [
        "--steps",
        "5",
        "--corpus",
        "builtin",
    ]
    assert lifecycle.option_flags({"whole_word_mask": True, "quiet": False, "steps": 2}) == [
        "--whole-word-mask",
        "--steps",
        "2",
    ]


# ---- states from the run folder ------------------------------------------------------------------


def test_a_running_status_whose_process_is_gone_reads_as_failed_with_the_log_tail(tmp_path):
    run = tmp_path / "r"
    run.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    write_status(run, state="running", message="Training: step 3 of 30", pid=dead.pid, step=3, total_steps=30)
    (run / run_folder.LOG_FILE).write_text("step 1/30\rstep 2/30\rstep 3/30\nKilled\n")
    state = lifecycle.run_state(run)
    assert state.state == "failed" and not state.active
    assert f"pid {dead.pid}" in state.message and state.message.endswith("step 3/30\nKilled")
    assert state.step == 3 and state.total_steps == 30 and state.progress == pytest.approx(0.1)


def test_a_running_status_with_a_live_training_process_reads_as_running(tmp_path, sleeper):
    run = tmp_path / "r"
    run.mkdir()
    write_status(
        run, state="running", message="Training", pid=sleeper.pid, step=5, total_steps=20, eta_s=12.5
    )
    state = lifecycle.run_state(run)
    assert (state.state, state.active, state.eta_s, state.progress) == ("running", True, 12.5, 0.25)
    write_status(
        run, state="running", pid=os.getpid(), step=5, total_steps=20
    )  # pytest is no training process
    assert lifecycle.run_state(run).state == "failed"


def test_a_run_on_another_machine_is_alive_by_its_heartbeat_and_failed_once_it_stops(tmp_path):
    run = tmp_path / "r"
    run.mkdir()
    status = write_status(  # a pid of machine B means nothing here: only its renewals do
        run, state="running", pid=999_999_999, host="machine-b", step=7, total_steps=30, checkpoint_step=5
    )
    assert lifecycle.run_state(run).state == "running"
    renewed_in_time = status["updated_at"] + run_folder.STALE_AFTER_S - 1
    assert lifecycle.run_state(run, now=renewed_in_time).state == "running"
    state = lifecycle.run_state(run, now=status["updated_at"] + run_folder.STALE_AFTER_S + 1)
    assert (state.state, state.step, state.checkpoint_step, state.host) == ("failed", 7, 5, "machine-b")
    assert state.reason.startswith("The run's status was last renewed 61 s ago")
    assert "the checkpoint of step 5 is kept" in state.reason and "machine-b" not in state.reason


def test_stop_reaches_another_machines_run_by_its_stop_file_and_signals_no_pid_here(tmp_path, sleeper):
    run = tmp_path / "r"
    run.mkdir()
    write_status(run, state="running", pid=sleeper.pid, host="machine-b", step=2, total_steps=9)
    lifecycle.stop_run(run)  # the pid names a live training process here, by chance: not machine B's run
    assert (run / run_folder.STOP_FILE).is_file()
    assert sleeper.poll() is None and lifecycle.training_process_alive(sleeper.pid)


def test_a_run_launched_on_another_machine_is_starting_until_its_grace_ends(tmp_path):
    run = tmp_path / "r"
    run.mkdir()
    launched = {"pid": 999_999_999, "host": "machine-b", "launched_at": 1000.0}
    (run / run_folder.LAUNCH_FILE).write_text(json.dumps(launched))
    assert lifecycle.run_state(run, now=1000.0 + lifecycle.STARTING_GRACE_S).state == "starting"
    assert lifecycle.run_state(run, now=1001.0 + lifecycle.STARTING_GRACE_S).state == "failed"


@pytest.mark.slow
def test_a_killed_run_seen_from_another_machine_fails_after_the_interval_and_its_checkpoint_loads(
    tmp_path, monkeypatch
):
    run_dir = lifecycle.launch_run({**FAST, "steps": 5000}, root=tmp_path, name="far")
    pid = json.loads((run_dir / run_folder.LAUNCH_FILE).read_text())["pid"]
    wait_until(lambda: lifecycle.run_state(run_dir).checkpoint_step is not None, 60, "the first checkpoint")
    monkeypatch.setattr(run_folder, "this_host", lambda: "machine-b")  # this test now looks from machine B
    os.kill(pid, 9)  # machine A dies with its trainer
    wait_until(lambda: lifecycle.reap_children() or not lifecycle.training_process_alive(pid), 10, "the kill")
    last = run_folder.read_status(run_dir)
    assert lifecycle.run_state(run_dir).state == "running"  # B cannot see a pid of A: it waits for the beats
    state = lifecycle.run_state(run_dir, now=last["updated_at"] + run_folder.STALE_AFTER_S + 1)
    assert state.state == "failed"
    assert f"the checkpoint of step {state.checkpoint_step} is kept" in state.reason
    model, tokenizer = pretrained.load_folder(run_dir)
    assert checkpoints.checkpoint_step(run_dir) == state.checkpoint_step
    assert tokenizer.vocab_size == model.config.vocab_size


def test_process_checks_see_through_exec_zombies_and_reused_pids(sleeper):
    assert lifecycle.training_process_alive(
        sleeper.pid
    )  # also in the instant after exec, with no cmdline yet
    other = subprocess.Popen([sys.executable, "-c", BLOCK], stdin=subprocess.PIPE)
    try:
        wait_until(lambda: Path(f"/proc/{other.pid}/cmdline").read_bytes(), 10, "the other process to start")
        assert not lifecycle.training_process_alive(other.pid)  # a pid now used by another program
    finally:
        other.kill()
        other.wait()
    sleeper.kill()  # not reaped yet (no wait): a zombie, which os.kill(pid, 0) still finds
    wait_until(lambda: not lifecycle.training_process_alive(sleeper.pid), 10, "the zombie to read as dead")
    assert sleeper.poll() is not None


def test_launched_runs_without_status_are_starting_or_failed_and_checkpoints_are_ready(tmp_path, sleeper):
    run = tmp_path / "r"
    run.mkdir()
    (run / run_folder.LAUNCH_FILE).write_text(json.dumps({"pid": sleeper.pid}))
    assert lifecycle.run_state(run).state == "starting"
    assert [r.name for r in lifecycle.active_runs(tmp_path)] == ["r"]
    sleeper.kill()
    sleeper.wait()
    (run / run_folder.LOG_FILE).write_text("error: --steps (0) must be a whole number greater than 0\n")
    state = lifecycle.run_state(run)
    assert state.state == "failed" and "--steps (0) must be" in state.message
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_text("{}")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / "empty").mkdir()
    assert {r.name: r.state for r in lifecycle.list_runs(tmp_path)} == {"r": "failed", "ckpt": "ready"}


def test_a_dead_run_whose_cli_refused_its_options_shows_the_reason_first(tmp_path):
    run = tmp_path / "r"
    run.mkdir()
    (run / run_folder.LAUNCH_FILE).write_text(json.dumps({"pid": 999_999_999}))
    reason = (
        "--batch-size (20000) is more than the 17143 training pairs of the corpus: use a smaller batch or a "
        "bigger corpus"
    )
    (run / run_folder.LOG_FILE).write_text(f"Loading…\nerror: {reason}\n")
    state = lifecycle.run_state(run)
    assert state.state == "failed" and state.message.startswith(
        f"{reason} (the training process, pid 999999999"
    )
    assert state.message.endswith(f"Last lines of its log:\nLoading…\nerror: {reason}")


def _age(path: Path, seconds: float) -> None:
    os.utime(path, (time.time() - seconds, time.time() - seconds))


def test_listing_removes_stale_temporary_files_of_runs_that_no_longer_train(tmp_path, sleeper):
    killed = tmp_path / "killed"
    live = tmp_path / "live"
    (killed / "snapshots").mkdir(parents=True)
    live.mkdir()
    write_status(killed, state="stopped", step=4, total_steps=9)
    write_status(live, state="running", pid=sleeper.pid, step=4, total_steps=9)
    stale = [killed / ".model.safetensors.a1.tmp", killed / "snapshots" / ".step_000004.safetensors.b2.tmp"]
    fresh = killed / ".status.json.c3.tmp"
    busy = live / ".model.safetensors.d4.tmp"
    for path in (*stale, fresh, busy):
        path.write_bytes(b"half")
        _age(path, 0 if path == fresh else 3600)
    _age(killed, 7200)  # the older run is listed second
    assert [r.name for r in lifecycle.list_runs(tmp_path)] == ["live", "killed"]
    assert not any(path.exists() for path in stale)
    assert fresh.exists() and busy.exists()  # a write that may be under way; a run still training
    assert (killed / "status.json").is_file() and [r.name for r in lifecycle.list_runs(tmp_path)] == [
        "live",
        "killed",
    ]


def test_the_run_limit_refuses_a_second_run_and_creates_nothing(tmp_path, sleeper):
    busy = tmp_path / "busy"
    busy.mkdir()
    write_status(busy, state="running", pid=sleeper.pid, step=1, total_steps=9)
    with pytest.raises(lifecycle.RunLimitError, match=r"1 run already training \(busy\); at most 1 at once"):
        lifecycle.launch_run({"preset": "tiny"}, root=tmp_path, max_runs=1)
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == ["busy"]


def test_a_run_this_visitor_launched_moments_ago_is_the_same_start_again(tmp_path, sleeper, monkeypatch):
    monkeypatch.setattr(run_folder, "CHECKPOINTS_DIR", tmp_path)
    run = tmp_path / "mine"
    owner = access.Visitor("visitor-owner-0123456789")
    run.mkdir()
    (run / run_folder.LAUNCH_FILE).write_text(json.dumps({"pid": sleeper.pid}))
    access.record_owner(run, owner)
    assert lifecycle.just_launched("mine", owner) == run
    assert lifecycle.just_launched("mine", access.Visitor("visitor-other-0123456789")) is None  # not theirs
    assert lifecycle.just_launched("mine", owner, within_s=0) is None  # not moments ago: a second press
    assert lifecycle.just_launched("", owner) is None and lifecycle.just_launched("other", owner) is None
    sleeper.kill()
    sleeper.wait()
    assert lifecycle.just_launched("mine", owner) is None  # no longer training


def test_snapshot_steps_and_hyperparameters_are_read_from_files(tmp_path):
    (tmp_path / "snapshots").mkdir()
    for name in ("step_000010.safetensors", "step_000000.safetensors", "notes.txt", "step_5.safetensors"):
        (tmp_path / "snapshots" / name).write_bytes(b"")
    assert lifecycle.snapshot_steps(tmp_path) == [0, 5, 10]
    (tmp_path / "train_args.json").write_text(
        json.dumps({"args": {"steps": 30, "lr": 0.01}, "config": {"hidden_size": 64}})
    )
    assert lifecycle.hyperparameters(tmp_path) == {"hidden_size": 64, "steps": 30, "lr": 0.01}
    assert lifecycle.hyperparameters(tmp_path / "missing") == {}


# ---- real training processes ---------------------------------------------------------------------


@pytest.mark.slow
def test_bad_options_end_the_process_and_the_run_shows_failed_with_the_cli_message(tmp_path):
    run_dir = lifecycle.launch_run({**FAST, "steps": 0}, root=tmp_path, name="bad")
    state = wait_until(
        lambda: (s := lifecycle.run_state(run_dir)).state == "failed" and s, 60, "the run to fail"
    )
    assert "--steps (0) must be a whole number greater than 0" in state.message
    assert json.loads((run_dir / run_folder.LAUNCH_FILE).read_text())["command"][-1] == str(run_dir)


@pytest.mark.slow
def test_a_run_outlives_its_launcher_obeys_the_limit_and_stops_gracefully_from_another_machine(
    tmp_path, monkeypatch
):
    # The launcher process exits right away, as an app that is restarted mid-run would.
    launch = {"root": tmp_path, "name": "long"}
    assert (
        in_another_app_process(
            forkserver(), launch_and_exit, dict(os.environ), dict(FAST, steps=5000), launch
        )
        == "long"
    )
    run_dir = tmp_path / "long"
    wait_until(
        lambda: lifecycle.run_state(run_dir).state == "running" and len(read_metrics(run_dir, "train")) >= 2,
        60,
        "two metrics lines",
    )
    with pytest.raises(lifecycle.RunLimitError, match="long"):
        lifecycle.launch_run({**FAST, "steps": 5}, root=tmp_path, max_runs=1)
    monkeypatch.setattr(run_folder, "this_host", lambda: "machine-b")  # Stop pressed on another machine:
    assert lifecycle.run_state(run_dir).state == "running"  # alive by its heartbeat, and stopped through
    lifecycle.stop_run(run_dir)  # the STOP file alone (no SIGTERM to a pid of another machine)
    state = lifecycle.wait_until_ended(run_dir, 60)  # as the Train page's Stop waits before its rerun
    assert state.state == "stopped", state.message
    assert 0 < state.checkpoint_step == state.step < 5000
    assert (run_dir / "model.safetensors").is_file() and (run_dir / run_folder.STOP_FILE).is_file()
    assert lifecycle.active_runs(tmp_path) == []


def test_a_new_run_name_must_be_safe_and_free(tmp_path):
    assert lifecycle.check_new_run_name("fresh", tmp_path) == "fresh"
    (tmp_path / "taken").mkdir()
    with pytest.raises(ValueError, match="A run named 'taken' already exists"):
        lifecycle.check_new_run_name("taken", tmp_path)
    with pytest.raises(ValueError, match="path separator"):
        lifecycle.check_new_run_name("../up", tmp_path)


def test_run_state_splits_its_message_and_says_the_time_left_while_it_trains(tmp_path):
    failed = lifecycle.RunState("r", tmp_path, "failed", message="CUDA out of memory\nline 1\nline 2")
    assert failed.reason == "CUDA out of memory" and failed.details == "line 1\nline 2"
    assert lifecycle.RunState("r", tmp_path, "finished", message="Done").details == ""
    running = lifecycle.RunState("r", tmp_path, "running", step=5, total_steps=10, eta_s=125.9)
    assert running.eta_text == "about 2 min 05 s left" and running.progress == 0.5
    assert lifecycle.RunState("r", tmp_path, "running", eta_s=42.0).eta_text == "about 42 s left"
    assert lifecycle.RunState("r", tmp_path, "stopped", eta_s=42.0).eta_text is None
    assert lifecycle.RunState("r", tmp_path, "running", step=30, total_steps=10).progress == 1.0


def test_a_run_started_in_the_app_leaves_the_server_its_own_core(monkeypatch):
    monkeypatch.delenv(settings.THREADS_SETTING, raising=False)  # the server's default: one thread
    assert lifecycle.training_threads(cpus=2) == 1
    assert lifecycle.training_threads(cpus=8) == 7
    assert lifecycle.training_threads(cpus=1) == 1
    monkeypatch.setenv(settings.THREADS_SETTING, "3")
    assert lifecycle.training_threads(cpus=8) == 5
