"""Manage checkpoint folders: a summary table, rename, delete, zip download and HF export (upload: checkpoint_upload).

A checkpoint zip holds only the files of a checkpoint (model.safetensors, config.json, vocab.txt, optionally
train_args.json, metrics.jsonl and snapshots/*.safetensors|json); `bertviz_lite.runs.upload` reads one back.
"""

from __future__ import annotations

import functools
import io
import json
import os
import re
import shutil
import sys
import time
import zipfile
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from bertviz_lite.loading.pretrained import DEMO
from bertviz_lite.loading.run_folder import (
    CHECKPOINT_FILES,
    CONFIG_FILE,
    REPO_ROOT,
    SNAPSHOTS_DIR,
    TRAIN_ARGS_FILE,
    WEIGHTS_FILE,
    RunFolder,
    checkpoints_root,
    file_names,
    load_metrics,
    read_metrics,
    validate_run_name,
)
from bertviz_lite.runs.lifecycle import RunState, hyperparameters, is_run_folder, list_runs, run_state
from bertviz_lite.runs.run_options import labels
from bertviz_lite.server import access
from bertviz_lite.training.metrics import TABLE_METRICS

PROTECTED = frozenset({DEMO})
SHIPPED = "shipped"  # why a checkpoint cannot be changed now
NOT_YOURS = "not yours"
TRAINING = "training"
REQUIRED_FILES = CHECKPOINT_FILES
HF_FILES = REQUIRED_FILES
SNAPSHOT_MEMBER = re.compile(rf"{SNAPSHOTS_DIR}/[A-Za-z0-9][A-Za-z0-9_.-]*\.(safetensors|json)")


class CheckpointError(ValueError):
    """A refused checkpoint operation; the message is meant for the user."""


# ---- the table -----------------------------------------------------------------------------------


def folder_size(folder: Path) -> int:
    """Bytes of all files under `folder`."""
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file() and not path.is_symlink())


def final_metrics(records: list[dict[str, Any]]) -> dict[str, float]:
    """The last logged value of each metric in TABLE_METRICS (train and held-out) in metrics records."""
    last: dict[str, float] = {}
    for record in records:
        last.update({k: record[k] for k in TABLE_METRICS if isinstance(record.get(k), int | float)})
    return {k: last[k] for k in TABLE_METRICS if k in last}


def run_final_metrics(folder: Path) -> dict[str, float]:
    """final_metrics of a run folder's metrics, read again only when its metrics file changed: the Checkpoints table
    re-read and re-checked every run's metrics on each rerun of the page (a class's thirty runs of up to the read cap)."""
    try:
        stat = RunFolder(folder).metrics.stat()
    except OSError:
        return {}
    return dict(_final_metrics_of_version(str(folder), stat.st_ino, stat.st_size, stat.st_mtime_ns))


@functools.lru_cache(maxsize=1024)  # a few floats each
def _final_metrics_of_version(folder: str, inode: int, size: int, mtime_ns: int) -> dict[str, float]:
    """The file's identity, size and time are the key, so a run that logs a line more is read again."""
    return final_metrics(read_metrics(folder))


def summary(run: RunState) -> dict[str, Any]:
    """One row of the checkpoints table: name, state, steps, final metrics, size and date."""
    folder = run.path
    return {
        "name": run.name,
        "state": run.state,
        "steps": run.checkpoint_step if run.checkpoint_step is not None else run.step,
        **run_final_metrics(folder),
        "size_mb": round(folder_size(folder) / 1e6, 2),
        "date": datetime.fromtimestamp(folder.stat().st_mtime).strftime("%Y-%m-%d %H:%M"),
        "loadable": (folder / CONFIG_FILE).is_file() and (folder / WEIGHTS_FILE).is_file(),
    }


def checkpoint_table(root: Path | None = None) -> list[dict[str, Any]]:
    """Summaries of every run folder under the root, newest first; a folder that cannot be read is a bare row."""
    return [_summary_or_bare(run) for run in list_runs(root)]


def _summary_or_bare(run: RunState) -> dict[str, Any]:
    """One bad folder (deleted meanwhile, unreadable) keeps its row, so that its owner can still delete it."""
    try:
        return summary(run)
    except (OSError, ValueError, OverflowError, TypeError):
        return {
            "name": run.name,
            "state": run.state,
            "steps": None,
            "size_mb": None,
            "date": "",
            "loadable": False,
        }


def hyperparameter_table(names: list[str], root: Path | None = None) -> pd.DataFrame:
    """Runs' hyperparameters side by side as text: a column per run, a row per option named by its form label.

    The output folder (`out`) is left out: the column names say it. Empty when no run has a train_args.json.
    """
    root = root or checkpoints_root()
    table = pd.DataFrame({name: _as_shown(hyperparameters(root / name)) for name in names})
    table = table.drop(index="out", errors="ignore")
    label_of = labels()
    table.index = [label_of.get(name, name) for name in table.index]
    return table.astype(str)


def _as_shown(options: dict) -> dict:
    """A run's options as the table shows them: a run that continued from a model names it as its preset.

    The CLI records the preset it started from ("tiny"), but such a run's sizes and weights come from the model
    (MiniLM's 384 × 6 × 12, say): "tiny" beside them would mislead.
    """
    if options.get("init") and options.get("preset"):
        return {
            **options,
            "preset": f"continued from {options['init']} (options based on {options['preset']})",
        }
    return options


def compared_metrics(names: list[str], root: Path | None = None) -> tuple[dict[str, list[dict]], list[str]]:
    """The valid metrics records of the named runs that logged any, and one sentence per run on lines left out."""
    root = root or checkpoints_root()
    records = {}
    notes = []
    for name in names:
        metrics = load_metrics(root / name)
        if metrics.records:
            records[name] = metrics.records
        if metrics.note:
            notes.append(f"{name}: {metrics.note}.")
    return records, notes


def differing_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of a hyperparameter table whose values are not all the same (all of them for one run)."""
    return table[table.nunique(axis=1) > 1] if table.shape[1] > 1 else table


# ---- rename and delete ---------------------------------------------------------------------------


def change_refusal(name: str, visitor: access.Visitor | None, root: Path | None = None) -> str | None:
    """Why `visitor` may not rename or delete checkpoint `name` (SHIPPED, NOT_YOURS, TRAINING); None: it may.

    The rules rename_checkpoint and delete_checkpoint enforce: access.may_change, then the run's state.
    """
    folder = (root or checkpoints_root()) / name
    if name in PROTECTED or access.is_shipped(folder):
        return SHIPPED
    if not access.may_change(folder, visitor):
        return NOT_YOURS
    return TRAINING if run_state(folder).active else None


def _existing_folder(root: Path, name: str) -> Path:
    folder = root / validate_run_name(name)
    if not is_run_folder(folder):
        raise CheckpointError(f"There is no checkpoint named {name!r}")
    return folder


def _check_changeable(root: Path, name: str, action: str, visitor: access.Visitor | None) -> Path:
    if name in PROTECTED:
        raise CheckpointError(f"{name!r} ships with bertviz-lite and cannot be {action}")
    folder = _existing_folder(root, name)
    access.check_may_change(folder, visitor, {"renamed": "rename", "deleted": "delete"}[action])
    if run_state(folder).active:
        raise CheckpointError(f"{name!r} is still training: stop it before it can be {action}")
    return folder


def rename_checkpoint(
    old: str, new: str, root: Path | None = None, visitor: access.Visitor | None = None
) -> Path:
    """Rename a checkpoint folder; the new name must be safe and free; `visitor` must own it (None: the server)."""
    root = root or checkpoints_root()
    folder = _check_changeable(root, old, "renamed", visitor)
    target = root / validate_run_name(new)
    if new in PROTECTED or target.exists():
        raise CheckpointError(f"A checkpoint named {new!r} already exists: choose another name")
    _move(folder, target, "rename")
    return target


def delete_checkpoint(name: str, root: Path | None = None, visitor: access.Visitor | None = None) -> None:
    """Delete a checkpoint folder (gone from listings at once, then its files); `visitor` must own it."""
    root = root or checkpoints_root()
    folder = _check_changeable(root, name, "deleted", visitor)
    doomed = root / f".deleting-{name}-{time.time_ns()}"
    _move(folder, doomed, "delete")  # hidden names are never listed: no half-deleted checkpoint shows up
    shutil.rmtree(doomed, ignore_errors=True)


def _move(folder: Path, target: Path, verb: str) -> None:
    """os.rename with a sentence instead of errno text and server paths (another visitor may have been first)."""
    try:
        os.rename(folder, target)
    except FileNotFoundError:
        raise CheckpointError(
            f"{folder.name!r} was just renamed or deleted in another window: the list is reloaded"
        ) from None
    except OSError as err:
        raise CheckpointError(
            f"Could not {verb} {folder.name!r}: {err.strerror or 'the file system refused'}"
        ) from None


# ---- zip download and Hugging Face export --------------------------------------------------------


def optional_files() -> tuple[str, ...]:
    """The run's files a zip carries besides the checkpoint (train_args.json, metrics.jsonl): run_folder.FILES."""
    return file_names("zipped")


def _zip_files(members: list[tuple[Path, str]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, arcname in members:
            # Weights barely compress: store them, deflate the text files.
            method = zipfile.ZIP_STORED if path.suffix == ".safetensors" else zipfile.ZIP_DEFLATED
            if path.name == TRAIN_ARGS_FILE:
                archive.writestr(
                    arcname, _without_server_paths(path.read_text(encoding="utf-8")), compress_type=method
                )
            else:
                archive.write(path, arcname, compress_type=method)
    return buffer.getvalue()


def _without_server_paths(text: str) -> str:
    """train_args.json as a download carries it: the server's folders and Python left out of paths and commands."""
    for prefix, short in (
        (sys.executable, "python"),
        (f"{checkpoints_root()}{os.sep}", "checkpoints/"),
        (f"{REPO_ROOT}{os.sep}", ""),
        (str(Path.home()), "~"),
    ):
        text = text.replace(json.dumps(prefix)[1:-1], short)
    return text


def checkpoint_files(folder: Path) -> list[Path]:
    """The files of a checkpoint that a download carries (exactly what an upload accepts)."""
    names = [*REQUIRED_FILES, *optional_files()]
    files = [folder / name for name in names if (folder / name).is_file()]
    snapshots = folder / SNAPSHOTS_DIR
    if snapshots.is_dir():
        files += sorted(
            p for p in snapshots.iterdir() if SNAPSHOT_MEMBER.fullmatch(f"{SNAPSHOTS_DIR}/{p.name}")
        )
    return files


def checkpoint_zip(folder: str | os.PathLike) -> bytes:
    """A zip of the checkpoint under a top folder named after it (re-uploadable as is)."""
    folder = Path(folder)
    files = checkpoint_files(folder)
    return _zip_files([(path, f"{folder.name}/{path.relative_to(folder).as_posix()}") for path in files])


def hf_export_zip(folder: str | os.PathLike) -> bytes:
    """A zip of the Hugging Face folder `<name>-hf/` (model.safetensors, config.json, vocab.txt).

    `transformers.BertForPreTraining.from_pretrained` and `BertTokenizer.from_pretrained` load it.
    """
    folder = Path(folder)
    missing = [name for name in HF_FILES if not (folder / name).is_file()]
    if missing:
        raise CheckpointError(f"{folder.name!r} has no saved weights yet ({', '.join(missing)} missing)")
    return _zip_files([(folder / name, f"{folder.name}-hf/{name}") for name in HF_FILES])
