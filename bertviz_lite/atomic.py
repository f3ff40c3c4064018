"""Atomic writes: a file on disk is the old version or the new one, never half of either.

Each write goes to a hidden temporary file beside the target, is fsynced, then renamed over it; a process
killed half-way leaves only a `.NAME.*.tmp` leftover, which `remove_temporary_files` clears. Used by every
room that writes (the tokenizer's vocab.txt, checkpoints, run folders, owner files). `exclusive_lock` makes a
check-then-write one step among the threads and the processes of a machine (several app workers).
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


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
    return atomic_write_bytes(path, (json.dumps(finite(data), indent=2) + "\n").encode("utf-8"))


def finite(value: Any) -> Any:
    """NaN and inf are not JSON: write them as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def remove_temporary_files(folder: str | os.PathLike, older_than_s: float = 0.0) -> list[Path]:
    """Delete leftovers of atomic writes that were killed half-way (`.NAME.*.tmp`, also in subfolders).

    `older_than_s`: keep files modified more recently (a write that may still be under way). Returns the removed.
    """
    folder = Path(folder)
    now = time.time()
    leftovers = []
    for path in sorted([*folder.glob(".*.tmp"), *folder.glob("*/.*.tmp")]):
        try:
            if now - path.stat().st_mtime >= older_than_s:
                path.unlink()
                leftovers.append(path)
        except FileNotFoundError:
            pass  # renamed into place or removed meanwhile
    return leftovers


@contextmanager
def exclusive_lock(path: str | os.PathLike) -> Iterator[None]:
    """Hold an exclusive flock on `path`, a folder (nothing is written into it) or a file (created if missing):
    one holder at a time among the threads and the processes of a machine.

    Each call opens the path anew, so two threads of one process exclude each other too; the kernel drops the
    lock when its holder dies, so a killed process never leaves it held."""
    path = Path(path)
    fd = os.open(path, os.O_RDONLY) if path.is_dir() else os.open(path, os.O_RDWR | os.O_CREAT, _FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the last descriptor releases the lock
