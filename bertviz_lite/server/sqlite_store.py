"""The embedded store: one SQLite file (in data/) that every app process on one machine shares.

SQLite from the standard library, in WAL mode with `synchronous=FULL`, so that several `streamlit run` processes
read and write one file and a committed write survives `kill -9` (and a power cut). `BEGIN IMMEDIATE` takes the
file's one write lock when a transaction starts, so a count-then-insert is one step across processes. The file
must sit on a local disk: WAL's index is shared memory on one host (a network file system breaks its locks).
server/database.py chooses this store or server/postgresql_store.py and speaks to both in the same words.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

BUSY_TIMEOUT_MS = 5_000  # a writer waits this long for another process's write before giving up
OLDEST_SQLITE = (3, 35, 0)  # RETURNING (3.35) and ON CONFLICT DO NOTHING (3.24): the SQL both stores share
DIALECT = "sqlite"
WORDS = {"auto_id": "INTEGER PRIMARY KEY"}  # SQLite's rowid: an id given by the store on INSERT


def errors() -> tuple[type[Exception], type[Exception]]:
    """The driver's (any database error, a violated UNIQUE or PRIMARY KEY), for server/database.py to translate."""
    return sqlite3.Error, sqlite3.IntegrityError


def open_connection(location: str) -> sqlite3.Connection:
    """A connection to the file at `location` (made with its folder if missing), in autocommit mode: a statement
    outside `begin` commits on its own."""
    if sqlite3.sqlite_version_info < OLDEST_SQLITE:
        raise RuntimeError(
            f"SQLite {sqlite3.sqlite_version} is too old for bertviz-lite's shared database: it needs "
            f"{'.'.join(map(str, OLDEST_SQLITE))} or newer (Python's sqlite3 uses the system's libsqlite3)."
        )
    path = Path(location)
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(
        path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
    )  # lent to one thread at a time by server/database.py's Pool
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute(
        "PRAGMA synchronous=FULL"
    )  # an acknowledged write survives a power cut, not only kill -9
    connection.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    connection.row_factory = sqlite3.Row
    return connection


def begin(connection: sqlite3.Connection) -> None:
    """Start a transaction holding the file's write lock: one writer at a time across processes."""
    connection.execute("BEGIN IMMEDIATE")


def translate(sql: str) -> str:
    """The shared SQL as SQLite takes it: unchanged (`?` is SQLite's own placeholder)."""
    return sql


def idle(connection: sqlite3.Connection) -> bool:
    """Whether the connection is open and outside a transaction (fit to hand to another thread)."""
    try:
        return not connection.in_transaction
    except sqlite3.ProgrammingError:  # closed
        return False
