"""The live files of a training run folder, written atomically and read tolerantly.

A run folder (e.g. `checkpoints/my-run/`) holds, besides the checkpoint itself:

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

`status.json`, replaced atomically on every logging step and at every change of state:
    {"state": "running" | "finished" | "stopped" | "diverged" | "failed", "message": str,
     "pid": int, "step": int, "total_steps": int, "checkpoint_step": int | null,
     "started_at": float, "updated_at": float, "eta_s": float | null}
    times are Unix seconds; `checkpoint_step` is the step of the weights in model.safetensors.

`optimizer.safetensors`, written after each checkpoint: AdamW's moments, tensors "<parameter>.exp_avg"
    and "<parameter>.exp_avg_sq"; metadata {"step": "<step>"}, the checkpoint step they belong to.
    `--resume` restores them; when the step differs (a kill between the two writes) the moments restart.

Written by the app before the trainer starts: `launch.json`, `train.log`, `corpus.txt` (see `bertviz_lite.runs`),
`owner.json` (see `bertviz_lite.access`).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save
from torch import nn

METRICS_FILE = "metrics.jsonl"
STATUS_FILE = "status.json"
TRAIN_ARGS_FILE = "train_args.json"
OPTIMIZER_FILE = "optimizer.safetensors"
LAUNCH_FILE = "launch.json"
OWNER_FILE = "owner.json"  # who started the run in the app (bertviz_lite.access)
LOG_FILE = "train.log"
CORPUS_FILE = "corpus.txt"
STATES = ("running", "finished", "stopped", "diverged", "failed")


def _default_file_mode() -> int:
    umask = os.umask(0o022)  # read the umask (this sets it, so put it back)
    os.umask(umask)
    return 0o666 & ~umask


_FILE_MODE = _default_file_mode()


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write `data` to a hidden temporary file beside `path`, fsync it, then rename it over `path`."""
    path = Path(path)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as tmp:
            os.chmod(tmp.fileno(), _FILE_MODE)  # mkstemp makes 0600; give the mode open() would
            tmp.write(data)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    _fsync_folder(path.parent)
    return path


def _fsync_folder(folder: Path) -> None:
    """Make the rename itself durable (no-op where folders cannot be opened, e.g. Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_json(path: str | os.PathLike, data: Any) -> Path:
    """Write `data` as indented JSON, atomically."""
    return atomic_write_bytes(path, (json.dumps(_finite(data), indent=2) + "\n").encode("utf-8"))


def _finite(value: Any) -> Any:
    """NaN and inf are not JSON: write them as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def remove_temporary_files(folder: str | os.PathLike, older_than_s: float = 0.0) -> list[Path]:
    """Delete leftovers of atomic writes that were killed half-way (`.NAME.*.tmp`, also in subfolders).

    `older_than_s`: keep files modified more recently (a write that may still be under way). Returns the removed.
    """
    folder, now = Path(folder), time.time()
    leftovers = []
    for path in sorted([*folder.glob(".*.tmp"), *folder.glob("*/.*.tmp")]):
        try:
            if now - path.stat().st_mtime >= older_than_s:
                path.unlink()
                leftovers.append(path)
        except FileNotFoundError:
            pass  # renamed into place or removed meanwhile
    return leftovers


class MetricsWriter:
    """Appends one JSON object per line to `<run>/metrics.jsonl`, flushing each line."""

    def __init__(self, run_dir: str | os.PathLike):
        self.path = Path(run_dir) / METRICS_FILE
        self._file = open(self.path, "a", encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(_finite(record)) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def read_metrics(run_dir: str | os.PathLike, split: str | None = None) -> list[dict[str, Any]]:
    """The records of `<run>/metrics.jsonl`, optionally only one split ("train" or "eval").

    Lines that do not parse (the last one, while it is being written) are skipped.
    """
    path = Path(run_dir) / METRICS_FILE
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    records = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and (split is None or record.get("split") == split):
            records.append(record)
    return records


def write_status(run_dir: str | os.PathLike, **fields: Any) -> dict[str, Any]:
    """Replace `<run>/status.json`; `state` must be one of STATES. Adds pid and updated_at."""
    if fields.get("state") not in STATES:
        raise ValueError(f"state ({fields.get('state')!r}) must be one of {', '.join(STATES)}")
    status = {"pid": os.getpid(), **fields, "updated_at": time.time()}
    atomic_write_json(Path(run_dir) / STATUS_FILE, status)
    return status


def read_status(run_dir: str | os.PathLike) -> dict[str, Any] | None:
    """`<run>/status.json` as a dict, or None when it is absent or unreadable."""
    return read_json_object(Path(run_dir) / STATUS_FILE)


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
    """`<run>/train_args.json` as a dict, or None when it is absent or unreadable."""
    return read_json_object(Path(run_dir) / TRAIN_ARGS_FILE)


def read_json_object(path: Path) -> dict[str, Any] | None:
    """A JSON file holding an object, as a dict; None when it is absent, unreadable or not an object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def keep_metrics_until(run_dir: str | os.PathLike, step: int) -> list[dict[str, Any]]:
    """Rewrite `<run>/metrics.jsonl` without the records after `step` (a resumed run redoes those steps).

    Returns the records kept.
    """
    kept = [record for record in read_metrics(run_dir) if _record_step(record) <= step]
    text = "".join(json.dumps(_finite(record)) + "\n" for record in kept)
    atomic_write_bytes(Path(run_dir) / METRICS_FILE, text.encode("utf-8"))
    return kept


def _record_step(record: dict[str, Any]) -> float:
    step = record.get("step")
    return step if isinstance(step, (int, float)) else math.inf


# ---- optimizer state -----------------------------------------------------------------------------


def save_optimizer_state(run_dir: str | os.PathLike, model: nn.Module, optimizer: torch.optim.Optimizer,
                         step: int) -> Path:  # fmt: skip
    """Write AdamW's moments of every parameter to `<run>/optimizer.safetensors` (no pickle)."""
    names = {id(param): name for name, param in model.named_parameters()}
    tensors = {
        f"{names[id(param)]}.{key}": value.detach().cpu().contiguous()
        for param, state in optimizer.state.items() if id(param) in names
        for key, value in state.items() if key != "step" and torch.is_tensor(value)
    }  # fmt: skip
    return atomic_write_bytes(Path(run_dir) / OPTIMIZER_FILE, save(tensors, metadata={"step": str(step)}))


def load_optimizer_state(run_dir: str | os.PathLike, model: nn.Module, optimizer: torch.optim.Optimizer,
                         step: int) -> bool:  # fmt: skip
    """Restore the moments saved at `step`; False (optimizer untouched) if absent, damaged or of another step."""
    tensors = _read_optimizer_file(Path(run_dir) / OPTIMIZER_FILE, step)
    params = dict(model.named_parameters())
    moments = []
    for key, value in (tensors or {}).items():
        name, _, kind = key.rpartition(".")
        if name not in params or params[name].shape != value.shape:
            return False
        moments.append((params[name], kind, value))
    for param, kind, value in moments:
        state = optimizer.state[param]
        state[kind] = value.to(param.device, param.dtype)
        state["step"] = torch.tensor(float(step), dtype=torch.float32, device=param.device)
    return bool(moments)


def _read_optimizer_file(path: Path, step: int) -> dict[str, torch.Tensor] | None:
    """The tensors of an optimizer file saved at `step`, or None."""
    try:
        with safe_open(str(path), framework="pt") as handle:
            if (handle.metadata() or {}).get("step") != str(step):
                return None
        return load_file(str(path))
    except (OSError, SafetensorError):
        return None
