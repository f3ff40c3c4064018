"""Training runs as separate processes: launch, list, watch and stop them through their run folder.

The app never trains in its own process. `launch_run` starts `python -m bertviz_lite.train` in a new
session (so it outlives page reruns, closed tabs and app restarts) with its output captured in
`<run>/train.log`; everything else is read back from the files the trainer writes (see
`bertviz_lite.loading.run_folder`, which also names the files the app writes: launch.json, train.log, corpus.txt, STOP).

A run is alive while its trainer renews status.json (its heartbeat, every HEARTBEAT_S seconds): every machine that
shares the checkpoints folder sees it alike, and one not renewed for STALE_AFTER_S is failed there, its last
checkpoint kept. On the run's own machine its process id says so sooner (a killed trainer is failed at once). Stop
writes the STOP file, which the trainer checks every step, from any machine; SIGTERM is added on the run's own.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bertviz_lite.atomic import atomic_write_json, exclusive_lock, remove_temporary_files
from bertviz_lite.limits import clamp
from bertviz_lite.loading.checkpoints import checkpoint_step
from bertviz_lite.loading.run_folder import (
    REPO_ROOT,
    STALE_AFTER_S,
    RunFolder,
    checkpoints_root,
    heartbeat_age,
    new_run_folder,
    on_this_host,
    process_alive,
    read_json_object,
    read_status,
    read_train_args,
    run_folders,
    this_host,
    validate_run_name,
)
from bertviz_lite.loading.run_records import MAX_TEXT_FIELD
from bertviz_lite.runs import quota, run_options
from bertviz_lite.runs.run_log import died_message, log_tail, silent_message, without_paths
from bertviz_lite.server import access, settings
from bertviz_lite.training.cli import MAX_THREADS

MAX_RUNS_ENV = "BERTVIZ_LITE_MAX_RUNS"
DEFAULT_MAX_RUNS = 1
TRAIN_MODULE = "bertviz_lite.train"
ACTIVE_STATES = ("starting", "running")
LAUNCH_LOCK = ".launch.lock"  # in the checkpoints root: one launch at a time among every app process
MAX_HYPERPARAMETERS = 200  # rows a run's train_args.json may bring to the comparison table
STALE_TMP_S = 60.0  # a hidden .tmp file this old in a run that no longer trains is a killed write's leftover
STARTING_GRACE_S = (
    600.0  # seen from another machine, a launched run may prepare this long before its first status
)
# Popen objects of the runs this process launched, so that finished children are reaped (not zombies).
_CHILDREN: dict[int, subprocess.Popen] = {}


class RunLimitError(RuntimeError):
    """Raised when starting one more run would exceed the number of runs allowed at once."""


@dataclass
class RunState:
    """What a run folder says about its run, with a dead "running" process shown as failed."""

    name: str
    path: Path
    state: (
        str  # starting | running | finished | stopped | diverged | failed | ready (a checkpoint, no status)
    )
    message: str = ""
    step: int = 0
    total_steps: int | None = None
    eta_s: float | None = None
    pid: int | None = None
    checkpoint_step: int | None = None
    updated_at: float | None = None
    started_at: float | None = None  # when its trainer began (None before its first status)
    host: str | None = None  # the machine it trains on (None: this one, or a run from before heartbeats)

    @property
    def active(self) -> bool:
        return self.state in ACTIVE_STATES

    @property
    def reason(self) -> str:
        """The message's first line: why a run failed or diverged comes first (the log's tail follows)."""
        return self.message.partition("\n")[0]

    @property
    def details(self) -> str:
        """The message after its first line (a failed run's log tail), "" when there is none."""
        return self.message.partition("\n")[2]

    def report_for(self, may_see_log: bool) -> tuple[str, str]:
        """(reason, details) as a visitor may see them: the owner and the admin (`may_see_log`) get the reason and
        the log's tail; anyone else the reason line alone, with the server's paths removed."""
        return (self.reason, self.details) if may_see_log else (without_paths(self.reason), "")

    @property
    def eta_text(self) -> str | None:
        """ "about 2 min 05 s left" while it trains and the trainer gave an estimate, else None."""
        if self.eta_s is None or not self.active:
            return None
        minutes, seconds = divmod(int(self.eta_s), 60)
        return f"about {minutes} min {seconds:02d} s left" if minutes else f"about {seconds} s left"

    @property
    def progress(self) -> float:
        """Fraction of the steps done, in [0, 1]."""
        if not self.total_steps:
            return 1.0 if self.state == "finished" else 0.0
        return clamp(self.step / self.total_steps, 0.0, 1.0)


def max_concurrent_runs() -> int:
    """How many runs may train at once: $BERTVIZ_LITE_MAX_RUNS, default 1."""
    try:
        return max(1, int(os.environ.get(MAX_RUNS_ENV, DEFAULT_MAX_RUNS)))
    except ValueError:
        return DEFAULT_MAX_RUNS


def option_flags(options: Mapping[str, Any]) -> list[str]:
    """`{"hidden_size": 64, "preset": "tiny", "whole_word_mask": True}` -> `["--hidden-size", "64", "--preset",
    "tiny", "--whole-word-mask"]`; None and False are skipped (a flag is given only when set)."""
    flags = []
    for key, value in options.items():
        if value is None or value is False:
            continue
        flags += [f"--{key.replace('_', '-')}"] + ([] if value is True else [str(value)])
    return flags


def training_threads(cpus: int | None = None) -> int:
    """Threads for a run started in the app: the machine's cores less the server's own (at least one).

    On 2 cores a classroom run with one thread beside 30 visitors reached its goal in 33.6 s while their p95 stayed
    at 1.3 s (bench/live_class_load.py); with torch's default of every core the two fought over both.
    """
    return max(1, (cpus or os.cpu_count() or 1) - settings.app_threads())


def threads_allowed(owner: access.Visitor | None) -> int:
    """The most CPU threads a run may ask for: a visitor's `training_threads()` (the cores the server does not keep
    for its pages); the admin's and a terminal's, the CLI's bound."""
    return MAX_THREADS if owner is None or owner.admin else training_threads()


def check_threads(options: Mapping[str, Any], owner: access.Visitor | None) -> None:
    """ValueError in words when the options ask for more threads than `threads_allowed(owner)`."""
    threads = options.get("threads") or 0
    most = threads_allowed(owner)
    if threads > most:
        raise ValueError(
            f"CPU threads ({threads}): a run started here may use at most {most}, the cores this server "
            "does not keep for its visitors' pages. Choose fewer, or 0 for that many."
        )


def training_command(run_dir: Path, options: Mapping[str, Any]) -> list[str]:
    """The exact command line of a run: this Python, the training module, the options, `--out`."""
    return [sys.executable, "-m", TRAIN_MODULE, *option_flags(options), "--out", str(run_dir)]


def launch_run(
    options: Mapping[str, Any],
    *,
    root: Path | None = None,
    name: str | None = None,
    corpus_text: str | None = None,
    max_runs: int | None = None,
    owner: access.Visitor | None = None,
    allow_code: bool = False,
) -> Path:
    """Start a training process on a new run folder and return the folder.

    Args:
        options: CLI options without dashes (`{"preset": "tiny", "steps": 30}`); `corpus_text`, when
            given, is written to `<run>/corpus.txt` and passed as `--corpus`.
        max_runs: runs allowed at once (default `max_concurrent_runs()`); RunLimitError beyond it, and when the
            visitor already has a run training. The admin always gets a slot: the runs in the way are stopped.
        owner: the app's visitor who starts it: only they (or the admin) may stop, rename or delete it; a run
            with an owner must fit run_options.check_budget (memory, steps × batch); terminal runs need not.
        allow_code: whether this server may run a visitor's own file (server/code_gate.py's `code_allowed`): a run
            started in the app that trains a learner's model (`model_file`) is refused without it.
    """
    root = root or checkpoints_root()
    if owner is not None and options.get("model_file") and not allow_code:
        raise ValueError(
            "Training your own BERT is off on this server: it would run your file's code here (the Build pages "
            "say when it is allowed)."
        )
    if owner is not None:  # a run started in the app: within the server's memory and steps × batch budget
        args = run_options.check_options(run_options.declared_options(options))
        run_options.check_budget(args)
        check_threads(options, owner)
        quota.check_disk(owner, run_options.disk_estimate(args), "this run", root)
    root.mkdir(parents=True, exist_ok=True)
    limit = max_runs or max_concurrent_runs()
    # Check-then-launch as one step, so two tabs (or two app workers) pressing Start at once cannot pass the limit.
    with exclusive_lock(root / LAUNCH_LOCK):
        _check_run_limit(root, limit, owner)
        run_dir = root / validate_run_name(name) if name else new_run_folder(root).path
        run_dir.mkdir()  # FileExistsError on a clash: never reuse a folder
        try:
            access.record_owner(run_dir, owner)
            options = dict(options)
            if owner is not None and not options.get("threads"):  # the server keeps its own core for visitors
                options["threads"] = training_threads()
            if corpus_text is not None:
                RunFolder(run_dir).corpus.write_text(corpus_text, encoding="utf-8")
                options["corpus"] = str(RunFolder(run_dir).corpus)
            _start_process(run_dir, training_command(run_dir, options))
        except BaseException:
            shutil.rmtree(run_dir, ignore_errors=True)  # no half-made run folder stays behind
            raise
    return run_dir


def check_new_run_name(name: str, root: Path | None = None) -> str:
    """`name` if a new run may take it (a safe folder name, not taken under root), else ValueError."""
    if ((root or checkpoints_root()) / validate_run_name(name)).exists():
        raise ValueError(f"A run named {name!r} already exists: choose another name")
    return name


def just_launched(name: str, visitor: access.Visitor, within_s: float = 10.0) -> Path | None:
    """The run `name` if `visitor` launched it under `within_s` ago and it trains: a Start handled again (a script run
    that a rerun interrupts, or a reconnecting browser's new session, runs the press once more)."""
    run_dir = checkpoints_root() / name
    launched = RunFolder(run_dir).launch
    if not name or not launched.is_file() or not access.is_owner(run_dir, visitor):
        return None
    return (
        run_dir if time.time() - launched.stat().st_mtime < within_s and run_state(run_dir).active else None
    )


def _check_run_limit(root: Path, limit: int, owner: access.Visitor | None = None) -> None:
    active = active_runs(root)
    if owner is not None and owner.admin:
        for run in active[limit - 1 :]:  # the lecturer preempts: these save and stop while the new run starts
            stop_run(run.path)
        return
    if len(active) >= limit:
        names = ", ".join(run.name for run in active)
        raise RunLimitError(
            f"{len(active)} run{'s' if len(active) > 1 else ''} already training ({names}); at most {limit} "
            f"at once. Stop it or wait until it finishes (the limit is the {MAX_RUNS_ENV} setting)."
        )
    own = [run.name for run in active if owner is not None and access.is_owner(run.path, owner)]
    if own:
        raise RunLimitError(
            f"You already have a run training ({own[0]}): one run per visitor at a time. "
            "Stop it or wait until it finishes."
        )


def _start_process(run_dir: Path, command: list[str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    with open(RunFolder(run_dir).log, "ab") as log:
        process = subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    _CHILDREN[process.pid] = process
    atomic_write_json(
        RunFolder(run_dir).launch,
        {"pid": process.pid, "host": this_host(), "command": command, "launched_at": time.time()},
    )
    return process


def training_process_alive(pid: int | None) -> bool:
    """Whether `pid` is a live training process (reaps our own finished children; a reused pid is not)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    child = _CHILDREN.get(pid)
    if child is not None and child.poll() is not None:
        del _CHILDREN[pid]
        return False
    if not process_alive(pid):
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True  # no /proc (macOS): trust the pid
    if stat.rsplit(")", 1)[-1].split()[:1] in (["Z"], ["X"]):
        return False  # exited, not yet reaped by its parent
    # Another command line: the pid was reused. Empty: the process is being exec'd right now.
    return not cmdline or TRAIN_MODULE.encode() in cmdline


def run_state(run_dir: str | os.PathLike, now: float | None = None) -> RunState:
    """The state of a run folder, from status.json; a "running" status whose heartbeat stopped (or, on its own
    machine, whose process is gone) is "failed" with its log's tail. `now`: the clock's time (tests pass one)."""
    run_dir = Path(run_dir)
    status = read_status(run_dir)
    if status is None:
        return _state_without_status(run_dir, now)
    if status.get("state") == "running" and _silent(status, now):
        status = read_status(run_dir) or status  # it may have written its last status while exiting
        if status.get("state") == "running" and _silent(status, now):
            return _from_status(run_dir, status, "failed", _why_silent(run_dir, status, now))
    state = str(status.get("state"))
    message = str(status.get("message") or "")
    if state == "failed" and not message:
        message = log_tail(run_dir)
    return _from_status(run_dir, status, state, message)


def _silent(status: dict[str, Any], now: float | None) -> bool:
    """Whether a "running" status is a dead run's: not renewed within STALE_AFTER_S (a status from before
    heartbeats has no host: its process alone says), or, on this machine, its process is gone."""
    age = heartbeat_age(status, now)
    stale = bool(status.get("host")) and (age is None or age > STALE_AFTER_S)
    return stale or (on_this_host(status) and not training_process_alive(status.get("pid")))


def _why_silent(run_dir: Path, status: dict[str, Any], now: float | None) -> str:
    if on_this_host(status) and not training_process_alive(status.get("pid")):
        return died_message(run_dir, status.get("pid"))
    return silent_message(run_dir, status, heartbeat_age(status, now))


def _from_status(run_dir: Path, status: dict[str, Any], state: str, message: str) -> RunState:
    return RunState(
        name=run_dir.name,
        path=run_dir,
        state=state,
        message=message,
        step=int(status.get("step") or 0),
        total_steps=status.get("total_steps"),
        eta_s=status.get("eta_s") if state == "running" else None,
        pid=status.get("pid"),
        checkpoint_step=status.get("checkpoint_step"),
        updated_at=status.get("updated_at"),
        started_at=status.get("started_at"),
        host=status.get("host") or None,
    )


def _state_without_status(run_dir: Path, now: float | None) -> RunState:
    """Launched but not yet training (or never launched: an uploaded checkpoint). Launched on another machine: starting
    for up to STARTING_GRACE_S after its launch (its pid is that machine's)."""
    launch = read_json_object(RunFolder(run_dir).launch)
    if launch is None:
        return RunState(run_dir.name, run_dir, "ready", checkpoint_step=checkpoint_step(run_dir))
    pid = launch.get("pid")
    host = launch.get("host") if isinstance(launch.get("host"), str) else None
    if on_this_host(launch):
        starting = training_process_alive(pid)
    else:
        launched_at = launch.get("launched_at")
        age = (
            (time.time() if now is None else now) - launched_at
            if isinstance(launched_at, int | float)
            else None
        )
        starting = age is not None and age <= STARTING_GRACE_S
    if starting:
        return RunState(
            run_dir.name, run_dir, "starting", "Preparing the data and the model…", pid=pid, host=host
        )
    if read_status(run_dir) is not None:  # it wrote its first status in the meantime
        return run_state(run_dir, now)
    return RunState(run_dir.name, run_dir, "failed", died_message(run_dir, pid), pid=pid, host=host)


def is_run_folder(path: Path) -> bool:
    """A visible folder holding a checkpoint or the files of a launched run."""
    return RunFolder(path).is_listed()


def reap_children() -> list[int]:
    """Collect the exit status of this server's finished training processes (else they stay zombies)."""
    done = [pid for pid, child in list(_CHILDREN.items()) if child.poll() is not None]
    for pid in done:
        _CHILDREN.pop(pid, None)
    return done


def list_runs(root: Path | None = None) -> list[RunState]:
    """Every run folder under the root, newest first; stale .tmp files of runs that no longer train are removed,
    and finished training processes of this server are reaped."""
    reap_children()
    states = [run_state(folder.path) for folder in run_folders(root)]
    for state in states:
        if not state.active:
            _remove_stale_files(state.path)
    return states


def _remove_stale_files(run_dir: Path) -> None:
    """Remove a killed run's half-written files, keeping the folder's time (the listing's order)."""
    try:
        before = run_dir.stat()
        if remove_temporary_files(run_dir, older_than_s=STALE_TMP_S):
            os.utime(run_dir, ns=(before.st_atime_ns, before.st_mtime_ns))
    except OSError:
        pass  # a read-only folder: leave it as it is


def active_runs(root: Path | None = None) -> list[RunState]:
    """Runs that are starting or training now."""
    return [run for run in list_runs(root) if run.active]


def stop_run(run_dir: str | os.PathLike, visitor: access.Visitor | None = None) -> RunState:
    """Ask a run to finish its current step, save and stop: a STOP file, and SIGTERM once it trains on this machine.

    `visitor`: the app's visitor pressing Stop (PermissionError unless it is theirs); None: the server.
    """
    run_dir = Path(run_dir)
    access.check_may_change(run_dir, visitor, "stop")
    state = run_state(run_dir)
    if not state.active:
        return state
    RunFolder(run_dir).request_stop()  # seen by the trainer at its next step, on whichever machine it trains
    # Before its first status the trainer may not handle SIGTERM yet: it sees the STOP file instead. A pid of
    # another machine is not this one's to signal.
    if state.state == "running" and on_this_host({"host": state.host}) and training_process_alive(state.pid):
        try:
            os.kill(state.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    return state


def wait_until_ended(run_dir: str | os.PathLike, timeout_s: float, poll_s: float = 0.05) -> RunState:
    """The run's state once it no longer trains, or after `timeout_s` seconds (a stop of a small run ends in a
    fraction of a second: its step, a save, the final status)."""
    deadline = time.monotonic() + timeout_s
    state = run_state(run_dir)
    while state.active and time.monotonic() < deadline:
        time.sleep(poll_s)
        state = run_state(run_dir)
    return state


def snapshot_steps(run_dir: str | os.PathLike) -> list[int]:
    """Steps of the run's saved attention snapshots, ascending (files are only listed, not read)."""
    return RunFolder(run_dir).snapshot_steps()


def hyperparameters(run_dir: str | os.PathLike) -> dict[str, Any]:
    """A run's model sizes and training options from train_args.json, flat (config first), or {}."""
    train_args = read_train_args(run_dir) or {}  # "config" and "args" are dicts (run_folder checks them)
    config = train_args.get("config") or {}
    args = train_args.get("args") or {}
    merged = {**config, **{k: v for k, v in args.items() if k not in config}}
    return {str(k)[:MAX_TEXT_FIELD]: _shown(v) for k, v in list(merged.items())[:MAX_HYPERPARAMETERS]}


def _shown(value: Any) -> Any:
    """A hyperparameter as read, or as short text when it is not a plain value (a list, a 400-digit number)."""
    if _small(value):
        return value
    text = (
        value
        if isinstance(value, str)
        else json.dumps(value)[:MAX_TEXT_FIELD]
        if isinstance(value, list | dict)
        else f"a {len(str(value))}-digit number"
    )
    return text if len(text) <= MAX_TEXT_FIELD else text[: MAX_TEXT_FIELD - 1] + "…"


def _small(value: Any) -> bool:
    return (
        value is None or isinstance(value, bool | float) or (isinstance(value, int) and abs(value) < 10**30)
    )
