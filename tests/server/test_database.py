"""The shared SQLite file: a committed write is seen by another process; a failed transaction leaves nothing."""

import subprocess
import sys

import pytest

from bertviz_lite.server import database

SCHEMA = "CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL);"


def test_data_dir_follows_the_setting(tmp_path):
    assert database.data_dir({database.DATA_DIR_SETTING: str(tmp_path)}) == tmp_path
    assert database.data_dir({}) == database.DEFAULT_DATA_DIR
    assert database.database_path({database.DATA_DIR_SETTING: str(tmp_path)}).parent == tmp_path


def test_a_committed_write_is_read_by_another_process_and_a_failed_one_is_not(tmp_path):
    path = tmp_path / "shared.sqlite3"
    database.ensure_schema("notes", SCHEMA, path)
    with database.transaction(path) as db:
        db.execute("INSERT INTO notes (text) VALUES (?)", ("kept",))
    with pytest.raises(RuntimeError), database.transaction(path) as db:
        db.execute("INSERT INTO notes (text) VALUES (?)", ("lost",))
        raise RuntimeError("the caller failed before acknowledging")
    code = f"import sqlite3; print([r[0] for r in sqlite3.connect({str(path)!r}).execute('SELECT text FROM notes')])"
    seen = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert seen == "['kept']"
    assert database.connection(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    database.close_all()


def test_a_file_made_by_an_older_version_gets_the_columns_added_since(tmp_path):
    path = tmp_path / "old.sqlite3"
    database.ensure_schema("notes-v1", SCHEMA, path)
    with database.transaction(path) as db:
        db.execute("INSERT INTO notes (text) VALUES (?)", ("from v1",))
    added = {"notes": {"author": "TEXT NOT NULL DEFAULT ''", "stars": "INTEGER NOT NULL DEFAULT 0"}}
    database.ensure_schema("notes-v2", SCHEMA, path, added)
    database.ensure_schema("notes-v2b", SCHEMA, path, added)  # a second process: nothing to add, no error
    row = database.connection(path).execute("SELECT text, author, stars FROM notes").fetchone()
    assert tuple(row) == ("from v1", "", 0)
    database.close_all()
