"""Issue 22: disk quotas per visitor and in total, files per upload, snapshots per run; refusals in sentences."""

from __future__ import annotations

import io
import os
import zipfile

import pytest

from bertviz_lite import limits
from bertviz_lite.runs import lifecycle, quota, run_options, store
from bertviz_lite.runs import upload as zip_upload
from bertviz_lite.server import access
from bertviz_lite.training.training_args import OptionError
from tests.app.tiny_checkpoint import save_tiny

A = access.Visitor("visitor-a-0123456789abcdef")
B = access.Visitor("visitor-b-0123456789abcdef")


@pytest.fixture(scope="module")
def checkpoint_zip(tmp_path_factory) -> bytes:
    return store.checkpoint_zip(save_tiny(tmp_path_factory.mktemp("src") / "tiny"))


def with_snapshots(data: bytes, count: int, size: int, method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO(data)
    # compresslevel 1: the 1,000 MB of spaces deflate twice as fast, and the zip stays under 5 MB
    with zipfile.ZipFile(buffer, "a", method, compresslevel=1) as archive:
        for i in range(count):
            archive.writestr(f"tiny/snapshots/step_{i:06d}.json", b" " * size)
    return buffer.getvalue()


def test_a_zip_of_1000_snapshot_files_of_spaces_is_refused(tmp_path, checkpoint_zip):
    data = with_snapshots(checkpoint_zip, 1000, 1 << 20)
    assert len(data) < 20_000_000  # the 1.24 MB zip that wrote 1,000 MB
    with pytest.raises(
        store.CheckpointError, match="holds 1000 snapshot files; a checkpoint may bring at most 250"
    ):
        zip_upload.import_zip(data, "spaces", root=tmp_path, owner=A)
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".")] == []


def test_snapshots_together_are_capped(tmp_path, checkpoint_zip, monkeypatch):
    monkeypatch.setattr(zip_upload, "MAX_SNAPSHOTS_BYTES", 10 << 20)
    with pytest.raises(
        store.CheckpointError, match="snapshots unpack to 11 MB; a checkpoint may bring at most 10 MB"
    ):
        zip_upload.import_zip(with_snapshots(checkpoint_zip, 11, 1 << 20), "big", root=tmp_path, owner=A)


def test_repeated_uploads_stop_at_the_visitors_quota(tmp_path, checkpoint_zip, monkeypatch):
    size = len(checkpoint_zip)
    monkeypatch.setenv(limits.VISITOR_DISK_SETTING, str(2.5 * size / limits.MB))
    zip_upload.import_zip(checkpoint_zip, "one", root=tmp_path, owner=A)
    zip_upload.import_zip(checkpoint_zip, "two", root=tmp_path, owner=A)
    with pytest.raises(quota.QuotaError, match="Your uploads and runs use .* delete one of yours"):
        zip_upload.import_zip(checkpoint_zip, "three", root=tmp_path, owner=A)
    zip_upload.import_zip(checkpoint_zip, "theirs", root=tmp_path, owner=B)  # another visitor has their own
    zip_upload.import_zip(checkpoint_zip, "admins", root=tmp_path, owner=access.Visitor(A.id, admin=True))
    assert quota.disk_usage(A, tmp_path)[0] >= 2 * size


def test_the_class_shares_a_total_quota(tmp_path, checkpoint_zip, monkeypatch):
    monkeypatch.setenv(limits.DISK_SETTING, str(1.5 * len(checkpoint_zip) / limits.MB))
    zip_upload.import_zip(checkpoint_zip, "one", root=tmp_path, owner=A)
    with pytest.raises(quota.QuotaError, match="The class's uploads and runs use"):
        zip_upload.import_zip(checkpoint_zip, "two", root=tmp_path, owner=B)


def test_an_app_run_keeps_at_most_250_snapshots():
    with pytest.raises(OptionError, match="make 1,?001 snapshots|make 1001 snapshots"):
        run_options.check_form({**run_options.preset_options("tiny"), "snapshot_every": 1})


def test_a_run_is_refused_when_its_owner_is_over_quota(tmp_path, checkpoint_zip, monkeypatch):
    zip_upload.import_zip(checkpoint_zip, "one", root=tmp_path, owner=A)
    monkeypatch.setenv(limits.VISITOR_DISK_SETTING, str(len(checkpoint_zip) / limits.MB))
    with pytest.raises(quota.QuotaError, match="this run needs"):
        lifecycle.launch_run({"preset": "tiny", "steps": 20}, root=tmp_path, owner=A)


def test_an_upload_is_read_from_the_uploaded_file_without_a_copy(tmp_path, checkpoint_zip):
    """The page hands the uploaded file itself (Streamlit's UploadedFile is a BytesIO): no bytes copy is made."""

    class NoCopy(io.BytesIO):
        def getvalue(self):
            raise AssertionError("getvalue() copies the upload")

        largest = 0

        def read(self, size=-1):
            data = super().read(size)
            NoCopy.largest = max(NoCopy.largest, len(data))
            return data

    data = with_snapshots(checkpoint_zip, 4, 1 << 20, zipfile.ZIP_STORED)  # 4 MB
    assert zip_upload.suggested_name("x.zip", NoCopy(data)) == "tiny"
    zip_upload.import_zip(NoCopy(data), "from-file", root=tmp_path, owner=A)
    assert (tmp_path / "from-file" / "model.safetensors").is_file()
    assert (
        NoCopy.largest <= (1 << 20) + (1 << 16) < len(data) / 3
    )  # read piecewise, never the whole zip at once


def test_a_staging_folder_of_a_stopped_server_is_removed_when_the_page_lists(tmp_path):
    dead_pid = 2**22 + 12345  # above pid_max on Linux: no such process
    (tmp_path / f".upload-{dead_pid}-100-abc").mkdir()
    (tmp_path / f".upload-{os.getpid()}-100-def").mkdir()  # an upload of this server, in progress
    assert zip_upload.remove_abandoned_staging(tmp_path) == [f".upload-{dead_pid}-100-abc"]
    assert [p.name for p in tmp_path.iterdir()] == [f".upload-{os.getpid()}-100-def"]


def test_a_zip_download_carries_no_server_paths(tmp_path, monkeypatch):
    import json as json_module
    import sys

    from bertviz_lite.loading import run_folder

    root = tmp_path / "checkpoints"
    monkeypatch.setattr(run_folder, "CHECKPOINTS_DIR", root)
    folder = save_tiny(root / "pasted")
    corpus = str(folder / "corpus.txt")
    train_args = {
        "args": {"corpus": corpus, "out": str(folder)},
        "command": f"{sys.executable} -m bertviz_lite.train --corpus {corpus} --out {folder}",
    }
    (folder / "train_args.json").write_text(json_module.dumps(train_args))
    with zipfile.ZipFile(io.BytesIO(store.checkpoint_zip(folder))) as archive:
        text = archive.read("pasted/train_args.json").decode()
    assert str(tmp_path) not in text and sys.executable not in text
    assert json_module.loads(text)["args"] == {
        "corpus": "checkpoints/pasted/corpus.txt",
        "out": "checkpoints/pasted",
    }
