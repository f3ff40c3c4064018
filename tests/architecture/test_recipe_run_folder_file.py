"""Recipe "a new file in the run folder": its name and one RunFile entry in run_folder.FILES, saying what the app
does with it, and its attribute on RunFolder; RunFolder(path).<name> finds it, a folder holding it is listed, the zip
download carries it and an upload accepts it within its limit (here: a temporary notes.md)."""

from __future__ import annotations

import io
import zipfile

import pytest

from bertviz_lite.loading import run_folder
from bertviz_lite.loading.run_folder import RunFile, RunFolder, run_folders
from bertviz_lite.runs import lifecycle, store, upload
from bertviz_lite.runs.store import CheckpointError
from tests.app.tiny_checkpoint import save_tiny, zip_of

NOTES = RunFile("notes.md", zipped=True, listed=True, upload_limit=1000)
TEXT = "# Notes\nLearning rate halved after step 40.\n"


@pytest.fixture
def declared(monkeypatch):
    monkeypatch.setitem(run_folder.FILES, "notes", NOTES)
    attribute = run_folder._FilePath()  # what `notes = _FilePath()` in RunFolder's body makes
    attribute.__set_name__(RunFolder, "notes")
    monkeypatch.setattr(RunFolder, "notes", attribute, raising=False)


@pytest.fixture
def checkpoint(tmp_path):
    """A tiny checkpoint with notes, in a checkpoints folder of its own."""
    folder = save_tiny(tmp_path / "root" / "tiny")
    (folder / "notes.md").write_text(TEXT, encoding="utf-8")
    return folder


def test_the_file_has_a_path_and_lists_a_folder(declared, tmp_path):
    folder = RunFolder(tmp_path / "only-notes")
    folder.path.mkdir()
    folder.notes.write_text(TEXT, encoding="utf-8")
    assert folder.notes == tmp_path / "only-notes" / "notes.md"
    assert [run.name for run in run_folders(tmp_path)] == ["only-notes"]
    assert [run.name for run in lifecycle.list_runs(tmp_path)] == ["only-notes"]


def test_the_zip_download_carries_it_and_an_upload_takes_it_back(declared, checkpoint):
    data = store.checkpoint_zip(checkpoint)
    assert "tiny/notes.md" in zipfile.ZipFile(io.BytesIO(data)).namelist()
    copy = upload.import_zip(data, "copy", root=checkpoint.parent)
    assert (copy / "notes.md").read_text(encoding="utf-8") == TEXT


def test_an_upload_holds_it_to_its_declared_limit(declared, checkpoint):
    files = {path.name: path.read_bytes() for path in checkpoint.iterdir()} | {"notes.md": b"x" * 1001}
    with pytest.raises(CheckpointError, match="the most this server accepts for notes.md"):
        upload.import_zip(zip_of(files), "big", root=checkpoint.parent)


def test_without_the_declaration_the_file_is_neither_listed_zipped_nor_accepted(checkpoint, tmp_path):
    (tmp_path / "only-notes").mkdir()
    (tmp_path / "only-notes" / "notes.md").write_text(TEXT, encoding="utf-8")
    assert run_folders(tmp_path) == []
    data = store.checkpoint_zip(checkpoint)
    assert "tiny/notes.md" not in zipfile.ZipFile(io.BytesIO(data)).namelist()
    files = {path.name: path.read_bytes() for path in checkpoint.iterdir()}
    with pytest.raises(CheckpointError, match="Refused 'notes.md'"):
        upload.import_zip(zip_of(files), "copy", root=checkpoint.parent)
