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
POOL_SIZE = 8  # connections one app process keeps to a store (PostgreSQL's default max_connections is 100)
LEND_TIMEOUT_S = 10.0  # a statement waits this long for one of them before it fails
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


class Result:
    """A statement's rows, read at once, so that its connection goes back to the pool before the caller reads them;
    `fetchone`, `fetchall`, iteration and `description` as a DB-API cursor has them."""

    def __init__(self, rows: list[Row], description: Sequence[Sequence[Any]] | None):
        self.description = description
        self._rows = rows
        self._next = 0

    def fetchone(self) -> Row | None:
        row = self._rows[self._next] if self._next < len(self._rows) else None
        self._next += row is not None
        return row

    def fetchall(self) -> list[Row]:
        rows = self._rows[self._next :]
        self._next = len(self._rows)
        return rows

    def __iter__(self) -> Iterator[Row]:
        return iter(self.fetchall())


class Pool:
    """A process's connections to one store: at most POOL_SIZE, each lent to one thread at a time, for one statement
    or one transaction. Streamlit runs every page rerun in a thread of its own and a hall of students reruns every
    second: a connection per thread would ask a PostgreSQL server for hundreds (each a server process)."""

    def __init__(self, where: str, backend, translated):
        self.where = where
        self.backend = backend
        self._translated = translated
        self._idle: list[Any] = []
        self.opened = 0  # connections open now, idle or lent
        self._changed = threading.Condition()

    def lend(self):
        """An idle connection, or a new one while fewer than POOL_SIZE are open; else wait up to LEND_TIMEOUT_S."""
        with self._changed:
            if not self._changed.wait_for(lambda: self._idle or self.opened < POOL_SIZE, LEND_TIMEOUT_S):
                raise DatabaseError(
                    f"All {POOL_SIZE} connections to the store stayed busy for {LEND_TIMEOUT_S} s."
                )
            if self._idle:
                return self._idle.pop()
            self.opened += 1
        try:
            return self._translated(self.backend.open_connection, self.where)
        except BaseException:
            self._forget(None)
            raise

    def give_back(self, raw) -> None:
        """Back to the idle connections, or closed if it is broken or still in a transaction."""
        if self.backend.idle(raw):
            with self._changed:
                self._idle.append(raw)
                self._changed.notify()
        else:
            self._forget(raw)

    def _forget(self, raw) -> None:
        if raw is not None:
            with contextlib.suppress(Exception):
                raw.close()
        with self._changed:
            self.opened -= 1
            self._changed.notify()

    def close_idle(self) -> None:
        with self._changed:
            idle = self._idle
            self._idle = []
        for raw in idle:
            self._forget(raw)


class Connection:
    """The store as every thread of this process uses it, in the words both backends share: a statement borrows a
    connection of the pool; a transaction holds one for its thread until COMMIT or ROLLBACK."""

    def __init__(self, where: str):
        self.backend = postgresql_store if postgresql_store.is_url(where) else sqlite_store
        self._error, self._integrity_error = self.backend.errors()
        self.words = self.backend.WORDS
        self.pool = Pool(where, self.backend, self._translated)
        self._held = threading.local()  # .raw: the connection this thread's transaction holds

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

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Result:
        """Run one statement of the shared SQL (`?` placeholders); its rows, read at once."""
        with self._lent() as raw:
            cursor = self._translated(raw.execute, self.backend.translate(sql), tuple(params))
            rows = self._translated(cursor.fetchall) if cursor.description else []
            return Result(rows, cursor.description)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self._lent() as raw:
            self._translated(raw.cursor().executemany, self.backend.translate(sql), list(rows))

    def columns(self, table: str) -> set[str]:
        return {column[0] for column in self.execute(f"SELECT * FROM {table} LIMIT 0").description}

    @contextmanager
    def _lent(self) -> Iterator[Any]:
        """This thread's transaction's connection, or one lent by the pool for this statement."""
        held = getattr(self._held, "raw", None)
        if held is not None:
            yield held
            return
        raw = self.pool.lend()
        try:
            yield raw
        finally:
            self.pool.give_back(raw)

    @contextmanager
    def held(self) -> Iterator[None]:
        """A connection held by this thread for one transaction (begun by the caller), given back after it."""
        if getattr(self._held, "raw", None) is not None:
            raise RuntimeError("This thread has a transaction open on this store already.")
        self._held.raw = self.pool.lend()
        try:
            self._translated(self.backend.begin, self._held.raw)
            yield
        finally:
            raw = self._held.raw
            self._held.raw = None
            self.pool.give_back(raw)


_lock = threading.Lock()
_stores: dict[str, Connection] = {}
_schemas_done: set[tuple[str, str]] = set()


def connection(store: Store = None) -> Connection:
    """The store's connection for this process (every thread's; made on first use, opening nothing yet)."""
    where = location(store)
    with _lock:
        if where not in _stores:
            _stores[where] = Connection(where)
        return _stores[where]


@contextmanager
def transaction(store: Store = None) -> Iterator[Connection]:
    """BEGIN … COMMIT, one writer at a time across processes (SQLite's BEGIN IMMEDIATE, PostgreSQL's advisory
    lock); ROLLBACK on an exception. The caller acknowledges only after the block: COMMIT has then returned."""
    db = connection(store)
    with db.held():
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
    """Close every idle connection and forget the stores (tests that delete a store call it first)."""
    with _lock:
        for db in _stores.values():
            db.pool.close_idle()
        _stores.clear()
        _schemas_done.clear()
