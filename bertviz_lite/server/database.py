"""The store every app process shares, in one small interface over two backends: the state visitors see in common.

    BERTVIZ_LITE_DATABASE_URL   postgresql://user:password@host:port/database: a PostgreSQL server every app
                                machine reaches (server/postgresql_store.py), for app processes on several machines
    BERTVIZ_LITE_DATA_DIR       otherwise, the folder of the embedded default: one SQLite file every app process on
                                this machine shares (server/sqlite_store.py; default data/ beside checkpoints/)

Callers speak one SQL to both (`?` placeholders, `INSERT … ON CONFLICT DO NOTHING`, `INSERT … RETURNING id`) through
`connection` and `transaction` (one writer at a time across processes; committed before the caller acknowledges
anything, so a write survives `kill -9` of the app), and catch this module's `IntegrityError` and `DatabaseError`.
A function may be handed a store of its own (`store=`: a SQLite file's path or a `postgresql://` URL; tests do).

Each module that keeps state declares its tables as numbered `Migration`s and calls `ensure_schema` before it reads:
the steps a store lacks run at start, in one transaction, and are recorded in its `schema_versions` table, so every
app process, on either store, brings an older store up to date once. Where the stores' DDL must differ, the SQL
names the word in braces (`{auto_id}`) and each backend's `WORDS` says it.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bertviz_lite.loading.run_folder import REPO_ROOT
from bertviz_lite.server import postgresql_store, sqlite_store

DATABASE_URL_SETTING = "BERTVIZ_LITE_DATABASE_URL"
DATA_DIR_SETTING = "BERTVIZ_LITE_DATA_DIR"
DEFAULT_DATA_DIR = REPO_ROOT / "data"
DATABASE_FILE = "bertviz_lite.sqlite3"
Store = Path | str | None  # a SQLite file, a postgresql:// URL, or None: the settings above
Row = Any  # sqlite3.Row or postgresql_store.Row: `row[0]` and `row["code"]` alike
VERSIONS_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS schema_versions (name TEXT NOT NULL, version INTEGER NOT NULL, "
    "applied_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (name, version))"
)


class DatabaseError(RuntimeError):
    """The store failed (busy past its timeout, the server unreachable, …): nothing of the transaction was kept."""


class IntegrityError(DatabaseError):
    """A UNIQUE or PRIMARY KEY constraint refused a row (a second answer, a join code already drawn)."""


def data_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """The folder for the embedded database (BERTVIZ_LITE_DATA_DIR, or data/ beside checkpoints/)."""
    value = environ.get(DATA_DIR_SETTING, "").strip()
    return Path(value).expanduser() if value else DEFAULT_DATA_DIR


def database_path(environ: Mapping[str, str] = os.environ) -> Path:
    """The embedded SQLite file."""
    return data_dir(environ) / DATABASE_FILE


def location(store: Store = None, environ: Mapping[str, str] = os.environ) -> str:
    """Where a store is, as text: `store` itself, else BERTVIZ_LITE_DATABASE_URL, else the SQLite file."""
    if store is not None:
        return str(store)
    return environ.get(DATABASE_URL_SETTING, "").strip() or str(database_path(environ))


def is_shared_across_machines(store: Store = None) -> bool:
    """Whether the store is a database server (PostgreSQL) rather than this machine's SQLite file."""
    return postgresql_store.is_url(location(store))


class Connection:
    """One connection to a store, in the words both backends share; rows read by position or column name."""

    def __init__(self, where: str):
        self.backend = postgresql_store if postgresql_store.is_url(where) else sqlite_store
        self._error, self._integrity_error = self.backend.errors()
        self.words = self.backend.WORDS
        self.raw = self._translated(self.backend.open_connection, where)

    @property
    def dialect(self) -> str:
        return self.backend.DIALECT

    def _translated(self, call, *args):
        try:
            return call(*args)
        except self._integrity_error as err:
            raise IntegrityError(str(err)) from err
        except self._error as err:
            raise DatabaseError(str(err)) from err

    def execute(self, sql: str, params: Sequence[Any] = ()):
        """Run one statement of the shared SQL (`?` placeholders); returns the driver's cursor."""
        return self._translated(self.raw.execute, self.backend.translate(sql), tuple(params))

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._translated(self.raw.cursor().executemany, self.backend.translate(sql), list(rows))

    def columns(self, table: str) -> set[str]:
        return {column[0] for column in self.execute(f"SELECT * FROM {table} LIMIT 0").description}

    def begin(self) -> None:
        self._translated(self.backend.begin, self.raw)

    def idle(self) -> bool:
        return self.backend.idle(self.raw)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.raw.close()


# One connection per thread and store (neither driver shares one between threads at once). Streamlit runs each
# rerun in a new thread: a thread that ended hands its idle connection to the next thread, so a PostgreSQL server
# is not asked for a new connection (a server process) per page rerun.
_lock = threading.Lock()
_connections: dict[tuple[str, threading.Thread], Connection] = {}
_schemas_done: set[tuple[str, str]] = set()


def connection(store: Store = None) -> Connection:
    """This thread's connection to the store (opened once per thread and store, or taken over from an ended thread)."""
    where, me = location(store), threading.current_thread()
    with _lock:
        mine = _connections.get((where, me))
        if mine is not None and _open(mine):
            return mine
        mine = _from_ended_threads(where)
    if mine is None:
        mine = Connection(where)
    with _lock:
        _connections[(where, me)] = mine
    return mine


def _open(db: Connection) -> bool:
    """Whether a connection in its thread's use is still open (a server that restarted breaks it)."""
    return not getattr(db.raw, "broken", False) and not getattr(db.raw, "closed", False)


def _from_ended_threads(where: str) -> Connection | None:
    """An idle connection to `where` that an ended thread left (the others such threads left are closed)."""
    found = None
    for key in [key for key in _connections if not key[1].is_alive()]:
        db = _connections.pop(key)
        if found is None and key[0] == where and db.idle():
            found = db
        else:
            db.close()
    return found


@contextmanager
def transaction(store: Store = None) -> Iterator[Connection]:
    """BEGIN … COMMIT, one writer at a time across processes (SQLite's BEGIN IMMEDIATE, PostgreSQL's advisory
    lock); ROLLBACK on an exception. The caller acknowledges only after the block: COMMIT has then returned."""
    db = connection(store)
    db.begin()
    try:
        yield db
    except BaseException:
        with contextlib.suppress(DatabaseError):
            db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


@dataclass(frozen=True)
class Migration:
    """One numbered step of a module's tables, applied once per store and recorded in `schema_versions`: SQL
    statements separated by `;` (a store's own word in braces, e.g. `{auto_id}`), and columns added where a table
    made by an earlier step lacks them ({table: {column: "TYPE …"}}; a file older than the versions table may have
    some already)."""

    version: int
    sql: str = ""
    added_columns: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


def ensure_schema(name: str, migrations: Sequence[Migration], store: Store = None) -> None:
    """Bring the module `name`'s tables up to date in this store: the steps not yet recorded run in one
    transaction, in version order (once per process and store; a second process finds them recorded)."""
    where = location(store)
    if (where, name) in _schemas_done:
        return
    with transaction(where) as db:
        db.execute(VERSIONS_SCHEMA)
        applied = {
            row[0] for row in db.execute("SELECT version FROM schema_versions WHERE name = ?", (name,))
        }
        for step in sorted(migrations, key=lambda step: step.version):
            if step.version not in applied:
                _apply(db, step)
                db.execute(
                    "INSERT INTO schema_versions (name, version, applied_at) VALUES (?, ?, ?)",
                    (name, step.version, time.time()),
                )
    _schemas_done.add((where, name))


def _apply(db: Connection, step: Migration) -> None:
    for statement in step.sql.format_map(db.words).split(";"):
        if statement.strip():
            db.execute(statement)
    for table, columns in step.added_columns.items():
        have = db.columns(table)
        for column, declaration in columns.items():
            if column not in have:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")


def close_all() -> None:
    """Close this thread's connections and those of ended threads (tests that delete a store call it first)."""
    me = threading.current_thread()
    with _lock:
        closed = [key for key in _connections if key[1] is me or not key[1].is_alive()]
        for key in closed:
            _connections.pop(key).close()
        _schemas_done.difference_update({done for done in _schemas_done if done[0] in {k[0] for k in closed}})
