"""The run folder: every file name in it, the snapshot pattern, the STOP file, atomic writes, readers, listing.

This is the one module that knows how a run is laid out on disk; everything else asks `RunFolder`
(or the readers and writers here) for a path. A run folder (e.g. `checkpoints/my-run/`) holds:

The checkpoint, a Hugging Face BERT folder (written by `bertviz_lite.loading.checkpoints`):
    model.safetensors   BertForPreTraining key names; metadata {"format": "pt", "step": "<step>"}
    config.json         BertConfig.to_hf_dict(): transformers' BertConfig reads it
    vocab.txt           the WordPiece vocabulary, one token per line

`snapshots/step_000100.safetensors`: the probe pair's attention after step 100 (see `bertviz_lite.loading.checkpoints`).

`train_args.json`, written once before training starts:
    {"args": {...TrainingArguments...}, "config": {...BertConfig...}, "command": "python -m ...",
     "world_size": 1, "started_at": 1700000000.0}

`metrics.jsonl`, one JSON object per line, appended and flushed as written:
    train lines: {"split": "train", "step", "loss", "mlm_loss", "nsp_loss", "mlm_acc", "nsp_acc",
                  "lr", "grad_norm", "tokens_per_s", "elapsed_s"}
        losses and accuracies are averaged over the steps since the previous train line (and over
        all processes); `tokens_per_s` counts non-padding tokens of all processes; `grad_norm` is the
        norm before clipping at `step`; `elapsed_s` is wall time since training began.
    eval lines:  {"split": "eval", "step", "eval_loss", "eval_mlm_loss", "eval_nsp_loss",
                  "eval_mlm_acc", "eval_nsp_acc", "eval_examples", "elapsed_s"}
        on the held-out pairs, masked once with a fixed seed so that evals compare.

`status.json`, replaced atomically on every logging step and at every change of state, and renewed at least every
HEARTBEAT_S seconds while the run trains (the trainer's heartbeat, training/heartbeat.py):
    {"state": "running" | "finished" | "stopped" | "diverged" | "failed", "message": str,
     "pid": int, "host": str, "step": int, "total_steps": int, "checkpoint_step": int | null,
     "started_at": float, "updated_at": float, "eta_s": float | null}
    times are Unix seconds; `checkpoint_step` is the step of the weights in model.safetensors; `host` is the machine
    the trainer runs on, where `pid` means something. A "running" status not renewed for STALE_AFTER_S is a dead run,
    seen alike from every machine that shares the checkpoints folder (`heartbeat_age`).

`optimizer.safetensors`, written after each checkpoint: AdamW's moments, tensors "<parameter>.exp_avg"
    and "<parameter>.exp_avg_sq"; metadata {"step": "<step>"}, the checkpoint step they belong to.
    `--resume` restores them; when the step differs (a kill between the two writes) the moments restart.

A learner's model trained with `--model-file` (see `bertviz_lite.check.learner_run`) has, instead of the checkpoint's
model.safetensors and config.json:
    learner.safetensors their parameters under their own names; metadata {"format": "pt", "step", "sha256"}
    learner.json        {"file", "class", "sha256": their file's content hash, "config": the sizes it was built at,
                         "mapping": their parameter -> ours, "unmapped", "nsp_head", "attention"}

Written by the app before the trainer starts (see `bertviz_lite.runs.lifecycle`): `launch.json` {"pid", "host",
"command", "launched_at"}, `train.log` (the process's output), `corpus.txt` (an uploaded or pasted corpus), `owner.json`
(see `bertviz_lite.server.access`). `STOP`, created by the app, asks the trainer to finish its step, save and stop.

Every file is written to a hidden temporary name and renamed into place, so a kill at any instant leaves
the previous version whole.
"""

from __future__ import annotations

import json
import math
import os
import re
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bertviz_lite.atomic import atomic_write_bytes, atomic_write_json, finite
from bertviz_lite.limits import (
    MAX_JSON_BYTES,
    MAX_METRICS_BYTES,
    MAX_METRICS_READ_BYTES,
    MAX_METRICS_READ_LINES,
    MAX_NAME_CHARS,
    MAX_VOCAB_BYTES,
)
from bertviz_lite.loading.run_records import Metrics, parse_metrics, read_tail, valid_status, valid_train_args

REPO_ROOT = Path(__file__).resolve().parents[2]
CHECKPOINTS_DIR = REPO_ROOT / "checkpoints"  # shipped checkpoints and every run the app starts
WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
VOCAB_FILE = "vocab.txt"
METRICS_FILE = "metrics.jsonl"
STATUS_FILE = "status.json"
TRAIN_ARGS_FILE = "train_args.json"
OPTIMIZER_FILE = "optimizer.safetensors"
LAUNCH_FILE = "launch.json"
OWNER_FILE = "owner.json"  # who started the run in the app (bertviz_lite.server.access)
LOG_FILE = "train.log"
CORPUS_FILE = "corpus.txt"
STOP_FILE = "STOP"
LEARNER_FILE = (
    "learner.json"  # a learner's model: their file, its hash, the mapping (bertviz_lite.check.learner_run)
)
LEARNER_WEIGHTS_FILE = "learner.safetensors"  # their weights under their own names
SNAPSHOTS_DIR = "snapshots"
SNAPSHOT_PATTERN = re.compile(r"step_(\d+)\.safetensors")
STATES = ("running", "finished", "stopped", "diverged", "failed")
HEARTBEAT_S = 5.0  # a training process renews its "running" status.json at least this often …
STALE_AFTER_S = (
    60.0  # … so one not renewed for this long is a dead run, on every machine (clocks kept by NTP)
)


@dataclass(frozen=True)
class RunFile:
    """One file of a run folder, and what the app does with it."""

    name: str
    checkpoint: bool = False  # part of the Hugging Face checkpoint: every zip holds it, and the HF export
    zipped: bool = False  # also carried by a zip download, and accepted back by an upload
    upload_limit: int | None = (
        None  # the most bytes an upload may unpack for it (model.safetensors: its config's)
    )
    listed: bool = False  # its presence lists the folder as a run (or checkpoint) in the app
    marks_run: bool = (
        False  # its presence means the folder already holds a run: a new one may not start there
    )
    by_app: bool = False  # written by the app to launch a run, before the trainer starts


# Every file, once, under RunFolder's attribute for it: run.weights is <run>/model.safetensors.
FILES = {
    "weights": RunFile(WEIGHTS_FILE, checkpoint=True, marks_run=True),
    "config": RunFile(CONFIG_FILE, checkpoint=True, upload_limit=MAX_JSON_BYTES, listed=True, marks_run=True),
    "vocab": RunFile(VOCAB_FILE, checkpoint=True, upload_limit=MAX_VOCAB_BYTES),
    "train_args": RunFile(TRAIN_ARGS_FILE, zipped=True, upload_limit=MAX_JSON_BYTES, listed=True),
    "metrics": RunFile(METRICS_FILE, zipped=True, upload_limit=MAX_METRICS_BYTES, marks_run=True),
    "status": RunFile(STATUS_FILE, listed=True, marks_run=True),
    "optimizer": RunFile(OPTIMIZER_FILE),
    "launch": RunFile(LAUNCH_FILE, listed=True, by_app=True),
    "owner": RunFile(OWNER_FILE, by_app=True),
    "log": RunFile(LOG_FILE, by_app=True),
    "corpus": RunFile(CORPUS_FILE, by_app=True),
    "stop": RunFile(STOP_FILE, by_app=True),
    "snapshots": RunFile(SNAPSHOTS_DIR),
    "learner": RunFile(LEARNER_FILE, listed=True, marks_run=True),
    "learner_weights": RunFile(LEARNER_WEIGHTS_FILE, marks_run=True),
}


def file_names(role: str) -> tuple[str, ...]:
    """The names of the files with this role (a RunFile flag: "checkpoint", "zipped", "listed", …), in FILES order."""
    return tuple(file.name for file in FILES.values() if getattr(file, role))


def upload_limits() -> dict[str, int]:
    """The most bytes an upload may unpack, by file name, for the files that declare a limit."""
    return {file.name: file.upload_limit for file in FILES.values() if file.upload_limit is not None}


CHECKPOINT_FILES = file_names("checkpoint")  # model.safetensors, config.json, vocab.txt: what HF loads
MAX_NAME_LENGTH = MAX_NAME_CHARS
_NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def checkpoints_root() -> Path:
    """The folder that holds run folders: the checkpoints/ folder the model picker lists."""
    return CHECKPOINTS_DIR  # read at call time, so tests can point it at a temporary folder


class _FilePath:
    """A RunFolder attribute named like a FILES key: `run.weights` is <run>/model.safetensors."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.key = name

    def __get__(self, run: RunFolder | None, owner: type | None = None) -> Path:
        return self if run is None else run.path / FILES[self.key].name  # the class itself: the descriptor


@dataclass(frozen=True)
class RunFolder:
    """One run (or checkpoint) folder: where each of its files lives, and what the folder says as a whole."""

    path: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))

    @property
    def name(self) -> str:
        return self.path.name

    def file(self, name: str) -> Path:
        """The path of one of the run's files, by its name (one of the *_FILE constants)."""
        return self.path / name

    # The path of each file FILES names, one attribute per key (go-to-definition lands here, FILES says the name).
    weights = _FilePath()
    config = _FilePath()
    vocab = _FilePath()
    train_args = _FilePath()
    metrics = _FilePath()
    status = _FilePath()
    optimizer = _FilePath()
    launch = _FilePath()
    owner = _FilePath()
    log = _FilePath()
    corpus = _FilePath()
    stop = _FilePath()
    snapshots = _FilePath()
    learner = _FilePath()
    learner_weights = _FilePath()

    def snapshot(self, step: int) -> Path:
        """`<run>/snapshots/step_000100.safetensors` for step 100."""
        return self.snapshots / f"step_{int(step):06d}.safetensors"

    def snapshot_files(self) -> Iterator[tuple[int, Path]]:
        """(step, path) of every file named like a snapshot, unsorted (files are only listed, not read)."""
        if self.snapshots.is_dir():
            for path in self.snapshots.iterdir():
                if match := SNAPSHOT_PATTERN.fullmatch(path.name):
                    yield int(match.group(1)), path

    def snapshot_steps(self) -> list[int]:
        """Steps of the saved attention snapshots, ascending."""
        return sorted(step for step, _ in self.snapshot_files())

    def request_stop(self) -> None:
        """Ask the trainer to finish its step, save and stop."""
        self.stop.touch()

    def stop_requested(self) -> bool:
        return self.stop.exists()

    def clear_stop(self) -> None:
        self.stop.unlink(missing_ok=True)

    def is_listed(self) -> bool:
        """A visible folder holding a checkpoint or the files of a launched run."""
        return (
            self.path.is_dir()
            and not self.name.startswith(".")
            and any(self.file(name).is_file() for name in file_names("listed"))
        )

    def run_markers(self) -> list[str]:
        """The files present that show the folder already holds a run or a checkpoint."""
        return [name for name in file_names("marks_run") if self.file(name).exists()]

    def foreign_files(self) -> list[str]:
        """Names in the folder that neither a run nor the app's launch wrote (temporary files aside)."""
        names = sorted(
            p.name for p in self.path.iterdir() if not (p.name.startswith(".") and p.name.endswith(".tmp"))
        )
        return [name for name in names if name not in (*file_names("marks_run"), *file_names("by_app"))]


def run_folders(root: Path | None = None) -> list[RunFolder]:
    """Every listed run folder under the root (default: checkpoints_root()), newest first."""
    root = root or checkpoints_root()
    if not root.is_dir():
        return []
    folders = [RunFolder(path) for path in root.iterdir() if RunFolder(path).is_listed()]
    return sorted(folders, key=lambda folder: folder.path.stat().st_mtime, reverse=True)


def new_run_folder(root: Path | None = None) -> RunFolder:
    """`<root>/run-YYYYmmdd-HHMMSS` (with -2, -3 … if taken), not created."""
    root = root or checkpoints_root()
    base = f"run-{time.strftime('%Y%m%d-%H%M%S')}"
    path = root / base
    n = 1
    while path.exists():
        n += 1
        path = root / f"{base}-{n}"
    return RunFolder(path)


def validate_run_name(name: str) -> str:
    """Return `name` if it is a safe folder name (letters, digits, . _ -), else raise ValueError."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError("The run name is empty: give a name such as 'my-run'")
    if len(name) > MAX_NAME_LENGTH:  # first: the messages below quote the name
        raise ValueError(f"The run name is {len(name):,} characters long; use at most {MAX_NAME_LENGTH}")
    if "/" in name or "\\" in name or os.sep in name:
        raise ValueError(f"The run name {name!r} must not contain a path separator")
    if ".." in name:
        raise ValueError(f"The run name {name!r} must not contain '..'")
    if name.startswith("."):
        raise ValueError(f"The run name {name!r} must not start with '.' (hidden names are not allowed)")
    if not _NAME_PATTERN.fullmatch(name):
        raise ValueError(
            f"The run name {name!r} may only use letters, digits, '.', '_' and '-', and must start "
            "with a letter or digit"
        )
    return name


class MetricsWriter:
    """Appends one JSON object per line to `<run>/metrics.jsonl`, flushing each line."""

    def __init__(self, run_dir: str | os.PathLike):
        self.path = RunFolder(run_dir).metrics
        self._file = open(self.path, "a", encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(finite(record)) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def load_metrics(run_dir: str | os.PathLike, split: str | None = None, capped: bool = True) -> Metrics:
    """The valid records of `<run>/metrics.jsonl` (optionally one split), counting the lines skipped.

    A run folder may be an upload: a line is kept only when it is a JSON object whose numbers are finite and
    plausible (limits.recorded_number, a step by limits.recorded_count) and whose texts are short. `capped`:
    read only the file's tail (MAX_METRICS_READ_BYTES, MAX_METRICS_READ_LINES), as every page does.
    The last line may be half-written while a run trains: it is skipped without counting.
    """
    try:
        text, truncated = read_tail(RunFolder(run_dir).metrics, MAX_METRICS_READ_BYTES if capped else None)
    except OSError:
        return Metrics([])
    return parse_metrics(
        text, split, max_lines=MAX_METRICS_READ_LINES if capped else None, truncated=truncated
    )


def read_metrics(run_dir: str | os.PathLike, split: str | None = None) -> list[dict[str, Any]]:
    """The valid records of `<run>/metrics.jsonl`, optionally only one split ("train" or "eval"): see load_metrics."""
    return load_metrics(run_dir, split).records


def write_status(run_dir: str | os.PathLike, **fields: Any) -> dict[str, Any]:
    """Replace `<run>/status.json`; `state` must be one of STATES. Adds pid, host and updated_at."""
    if fields.get("state") not in STATES:
        raise ValueError(f"state ({fields.get('state')!r}) must be one of {', '.join(STATES)}")
    status = {"pid": os.getpid(), "host": this_host(), **fields, "updated_at": time.time()}
    atomic_write_json(RunFolder(run_dir).status, status)
    return status


def read_status(run_dir: str | os.PathLike) -> dict[str, Any] | None:
    """`<run>/status.json` as a dict, or None when it is absent, unreadable or its state is not one of STATES.

    Fields of the wrong type or size (a 400-digit step, a list for a pid) read as None; the message is cut short.
    """
    status = read_json_object(RunFolder(run_dir).status)
    return valid_status(status) if status is not None and status.get("state") in STATES else None


def this_host() -> str:
    """This machine's name, as a run's status and launch record give it (where their pid means something)."""
    return socket.gethostname()


def on_this_host(record: dict[str, Any]) -> bool:
    """Whether a status or launch record was written on this machine (one without a host: before heartbeats,
    when every run was local)."""
    return record.get("host") in (None, "", this_host())


def heartbeat_age(status: dict[str, Any], now: float | None = None) -> float | None:
    """Seconds since the status was last written (None without a time); past STALE_AFTER_S its run is dead."""
    updated_at = status.get("updated_at")
    if not isinstance(updated_at, int | float):
        return None
    return max(0.0, (time.time() if now is None else now) - updated_at)


def process_alive(pid: int | None) -> bool:
    """Whether a process with this id exists (a "running" status whose process is gone was killed)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_train_args(run_dir: str | os.PathLike) -> dict[str, Any] | None:
    """`<run>/train_args.json` as a dict, or None when it is absent or unreadable.

    "args" and "config", when present, are objects: another type (an upload's `"config": [1, 2]`) reads as {}.
    """
    train_args = read_json_object(RunFolder(run_dir).train_args)
    return valid_train_args(train_args) if train_args is not None else None


def read_json_object(path: Path) -> dict[str, Any] | None:
    """A JSON file holding an object, as a dict; None when it is absent, unreadable, past MAX_JSON_BYTES or not
    an object."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_JSON_BYTES + 1)
        if len(data) > MAX_JSON_BYTES:
            return None
        value = json.loads(data.decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def keep_metrics_until(run_dir: str | os.PathLike, step: int) -> list[dict[str, Any]]:
    """Rewrite `<run>/metrics.jsonl` without the records after `step` (a resumed run redoes those steps).

    Returns the records kept.
    """
    kept = [record for record in load_metrics(run_dir, capped=False).records if _record_step(record) <= step]
    text = "".join(json.dumps(finite(record)) + "\n" for record in kept)
    atomic_write_bytes(RunFolder(run_dir).metrics, text.encode("utf-8"))
    return kept


def _record_step(record: dict[str, Any]) -> float:
    step = record.get("step")
    return step if isinstance(step, (int, float)) else math.inf
