"""The shared store, on both backends: a committed write is seen by another process and a failed transaction leaves
nothing; one SQL for both; schema versions migrate once; a thread's connection outlives the thread."""

import subprocess
import sys
import threading

import pytest

from bertviz_lite.server import database, postgresql_store, sqlite_store

NOTES_V1 = database.Migration(1, "CREATE TABLE IF NOT EXISTS notes (id {auto_id}, text TEXT NOT NULL)")
NOTES_V2 = database.Migration(
    2, added_columns={"notes": {"author": "TEXT NOT NULL DEFAULT ''", "stars": "INTEGER NOT NULL DEFAULT 0"}}
)
SEEN_ELSEWHERE = {  # another process reads the store with the driver alone (importing the package takes seconds)
    "sqlite": "import sqlite3 as driver, sys",
    "postgresql": "import psycopg as driver, sys",
}


def test_the_settings_choose_the_store(tmp_path):
    assert database.data_dir({database.DATA_DIR_SETTING: str(tmp_path)}) == tmp_path
    assert database.data_dir({}) == database.DEFAULT_DATA_DIR
    assert database.database_path({database.DATA_DIR_SETTING: str(tmp_path)}).parent == tmp_path
    url = "postgresql://app@db.example:5432/bertviz"
    both = {database.DATA_DIR_SETTING: str(tmp_path), database.DATABASE_URL_SETTING: url}
    assert database.location(None, both) == url  # the server, when one is named
    assert database.location(None, {database.DATA_DIR_SETTING: str(tmp_path)}) == str(
        tmp_path / database.DATABASE_FILE
    )
    assert database.location(tmp_path / "x.sqlite3", both) == str(
        tmp_path / "x.sqlite3"
    )  # a store handed over


def test_a_committed_write_is_read_by_another_process_and_a_failed_one_is_not(store):
    database.ensure_schema("notes", [NOTES_V1], store)
    with database.transaction(store) as db:
        db.execute("INSERT INTO notes (text) VALUES (?)", ("kept",))
    with pytest.raises(RuntimeError), database.transaction(store) as db:
        db.execute("INSERT INTO notes (text) VALUES (?)", ("lost",))
        raise RuntimeError("the caller failed before acknowledging")
    dialect = database.connection(store).dialect
    reader = f"{SEEN_ELSEWHERE[dialect]}\nprint([r[0] for r in driver.connect(sys.argv[1]).execute('SELECT text FROM notes')])"
    seen = subprocess.run(
        [sys.executable, "-c", reader, str(store)], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert seen == "['kept']"
    if dialect == "sqlite":
        assert database.connection(store).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_one_sql_for_both_ids_upserts_percent_signs_and_refused_duplicates(store):
    database.ensure_schema("notes", [NOTES_V1], store)
    with database.transaction(store) as db:
        first = db.execute("INSERT INTO notes (text) VALUES (?) RETURNING id", ("a:100%",)).fetchone()[0]
        second = db.execute("INSERT INTO notes (text) VALUES (?) RETURNING id", ("b: why?",)).fetchone()[0]
        db.execute("INSERT INTO notes (id, text) VALUES (?, ?) ON CONFLICT DO NOTHING", (first, "ignored"))
    assert second > first
    db = database.connection(store)
    like = db.execute("SELECT text FROM notes WHERE text LIKE 'a:%' AND text <> '?'").fetchall()
    assert [row["text"] for row in like] == ["a:100%"] and like[0][0] == "a:100%"
    with pytest.raises(database.IntegrityError), database.transaction(store) as db:
        db.execute("INSERT INTO notes (id, text) VALUES (?, ?)", (second, "a second row with the same id"))
    assert db.execute("SELECT COUNT(*) FROM notes").fetchone()[0] == 2  # the refused transaction left nothing


def test_a_store_made_by_an_older_version_is_migrated_once(store):
    database.ensure_schema("notes", [NOTES_V1], store)
    with database.transaction(store) as db:
        db.execute("INSERT INTO notes (text) VALUES (?)", ("from v1",))
    database.close_all()  # a newer app starts: its process has not seen the store yet
    database.ensure_schema("notes", [NOTES_V1, NOTES_V2], store)
    row = database.connection(store).execute("SELECT text, author, stars FROM notes").fetchone()
    assert tuple(row) == ("from v1", "", 0)
    database.close_all()  # a second app process: nothing left to apply, no error
    database.ensure_schema("notes", [NOTES_V1, NOTES_V2], store)
    versions = database.connection(store).execute(
        "SELECT version FROM schema_versions WHERE name = ? ORDER BY version", ("notes",)
    )
    assert [row[0] for row in versions] == [1, 2]


def test_many_threads_share_a_few_connections_and_a_transaction_keeps_its_own(store):
    database.ensure_schema("notes", [NOTES_V1], store)
    db = database.connection(store)
    start = threading.Barrier(16)
    seen = []

    def rerun(i: int) -> None:  # Streamlit runs each rerun of a page in a thread of its own, many at once
        start.wait()
        for _ in range(10):
            seen.append(db.execute("SELECT ? + 1", (i,)).fetchone()[0] - i)

    threads = [threading.Thread(target=rerun, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == [1] * 160 and 1 <= db.pool.opened <= database.POOL_SIZE
    with database.transaction(store) as writer:
        writer.execute("INSERT INTO notes (text) VALUES (?)", ("not yet committed",))
        elsewhere = threading.Thread(
            target=lambda: seen.append(db.execute("SELECT COUNT(*) FROM notes").fetchone()[0])
        )
        elsewhere.start()
        elsewhere.join()  # another thread reads on another connection: nothing uncommitted
        assert seen[-1] == 0 and writer.execute("SELECT COUNT(*) FROM notes").fetchone()[0] == 1
        with pytest.raises(RuntimeError, match="transaction open"), database.transaction(store):
            pass


def test_the_sql_is_translated_for_postgresql_only_where_it_must_be():
    shared = "SELECT 1 FROM t WHERE a = ? AND b LIKE 'x:%' AND c = '?'"
    assert sqlite_store.translate(shared) == shared
    assert postgresql_store.translate(shared) == "SELECT 1 FROM t WHERE a = %s AND b LIKE 'x:%%' AND c = '?'"
    assert postgresql_store.is_url("postgresql://h/db") and not postgresql_store.is_url("data/x.sqlite3")
