"""One SQLite file shared by every app process on a machine: the state that visitors must see in common.

    BERTVIZ_LITE_DATA_DIR   the folder that holds it (default: data/ beside checkpoints/)

SQLite from the standard library, in WAL mode, so several `streamlit run` processes (behind a load
balancer) read and write one file: a write is committed before the caller acknowledges it, and survives
`kill -9` of the server. Each module that keeps state declares its own tables (`SCHEMA` strings run
with `ensure_schema`) and the columns a later version added to them (`added_columns`: ALTER TABLE … ADD
COLUMN on a file an earlier version made); this module only opens connections and runs transactions.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from bertviz_lite.loading.run_folder import REPO_ROOT

DATA_DIR_SETTING = "BERTVIZ_LITE_DATA_DIR"
DEFAULT_DATA_DIR = REPO_ROOT / "data"
DATABASE_FILE = "bertviz_lite.sqlite3"
BUSY_TIMEOUT_MS = 5_000  # a writer waits this long for another process's write before giving up
_local = (
    threading.local()
)  # one connection per thread and file: sqlite3 connections are not shared by threads
_schemas_done: set[tuple[str, str]] = set()


def data_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """The folder for the shared database (BERTVIZ_LITE_DATA_DIR, or data/ beside checkpoints/)."""
    value = environ.get(DATA_DIR_SETTING, "").strip()
    return Path(value).expanduser() if value else DEFAULT_DATA_DIR


def database_path(environ: Mapping[str, str] = os.environ) -> Path:
    """The shared SQLite file."""
    return data_dir(environ) / DATABASE_FILE


def _open(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute(
        "PRAGMA synchronous=FULL"
    )  # an acknowledged write survives a power cut, not only kill -9
    connection.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    connection.row_factory = sqlite3.Row
    return connection


def connection(path: Path | None = None) -> sqlite3.Connection:
    """This thread's connection to the shared database (opened once per thread and file)."""
    path = Path(path) if path is not None else database_path()
    connections = _local.__dict__.setdefault("connections", {})
    key = str(path)
    if key not in connections:
        connections[key] = _open(path)
    return connections[key]


@contextmanager
def transaction(path: Path | None = None) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE … COMMIT (ROLLBACK on an exception): one writer at a time across processes."""
    db = connection(path)
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def ensure_schema(
    name: str,
    schema: str,
    path: Path | None = None,
    added_columns: Mapping[str, Mapping[str, str]] | None = None,
) -> None:
    """Run a module's `CREATE TABLE IF NOT EXISTS …` script once per process and file, then add the columns
    `added_columns` declares ({table: {column: "TYPE …"}}) that an older file's tables lack."""
    path = Path(path) if path is not None else database_path()
    if (str(path), name) in _schemas_done:
        return
    connection(path).executescript(schema)
    for table, columns in (added_columns or {}).items():
        _add_columns(path, table, columns)
    _schemas_done.add((str(path), name))


def _add_columns(path: Path, table: str, columns: Mapping[str, str]) -> None:
    """ALTER TABLE … ADD COLUMN for each column the table lacks, in one transaction (processes may race)."""
    with transaction(path) as db:
        have = {column[0] for column in db.execute(f"SELECT * FROM {table} LIMIT 0").description}
        for column, declaration in columns.items():
            if column not in have:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")


def close_all() -> None:
    """Close this thread's connections (tests that delete the file call it first)."""
    for db in _local.__dict__.pop("connections", {}).values():
        db.close()
