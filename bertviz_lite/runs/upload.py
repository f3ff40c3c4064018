"""Import an uploaded checkpoint zip safely (download and the rest: `bertviz_lite.runs.store`).

An uploaded zip is untrusted input. It is read member by member, never with `extractall`: only the
files of a checkpoint are accepted (model.safetensors, config.json, vocab.txt, optionally
train_args.json, metrics.jsonl and snapshots/*.safetensors|json), under one optional top folder.
Pickles (by name or by their first bytes), absolute paths, `..`, symlinks, encrypted or duplicate
members, too many members and too many bytes are refused. The files go to a hidden staging folder
beside the checkpoints, which must load with `pretrained.load_folder` before it is renamed, in one
step, to a name that is not taken: nothing is ever overwritten, and a refused upload leaves nothing.

Bytes are counted as they are written, never taken from the zip's word: config.json is unpacked
first and checked against `bertviz_lite.limits` (model size), then each file may hold at most its own
limit (model.safetensors: what that config can need) and all of them at most what the zip declared.
Staging folders together may claim at most BERTVIZ_LITE_UPLOAD_MB (default 1024 MB) under the root.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import stat
import tempfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from bertviz_lite import limits
from bertviz_lite.atomic import exclusive_lock
from bertviz_lite.limits import MAX_JSON_BYTES, MAX_SNAPSHOTS, MAX_SNAPSHOTS_BYTES, UPLOAD_SETTING, megabytes
from bertviz_lite.loading.checkpoints import SNAPSHOT_TENSOR
from bertviz_lite.loading.pretrained import load_folder, without_folder
from bertviz_lite.loading.run_folder import (
    CONFIG_FILE,
    SNAPSHOTS_DIR,
    WEIGHTS_FILE,
    checkpoints_root,
    process_alive,
    upload_limits,
    validate_run_name,
)
from bertviz_lite.model.config import BertConfig
from bertviz_lite.runs import quota
from bertviz_lite.runs.store import (
    PROTECTED,
    REQUIRED_FILES,
    SNAPSHOT_MEMBER,
    CheckpointError,
    folder_size,
    optional_files,
)
from bertviz_lite.server import access

MAX_ZIP_BYTES = limits.MAX_UPLOAD_MB * limits.MB  # also Streamlit's maxUploadSize
MAX_MEMBERS = 2000
_STAGING_NAME = re.compile(r"\.upload-(\d+)-(\d+)-")  # .upload-<pid>-<bytes claimed>-<random>
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt", ".joblib", ".npy", ".npz")


def _open_zip(data: bytes | BinaryIO) -> zipfile.ZipFile:
    """The zip in `data`: bytes, or a seekable binary file (the uploaded file itself: no second copy in memory)."""
    source = io.BytesIO(data) if isinstance(data, bytes | bytearray) else data
    size = source.seek(0, io.SEEK_END)
    source.seek(0)
    if size > MAX_ZIP_BYTES:
        raise CheckpointError(f"The zip is {megabytes(size)}; the limit is {megabytes(MAX_ZIP_BYTES)}")
    try:
        return zipfile.ZipFile(source)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError) as err:
        raise CheckpointError(f"This is not a readable zip file ({err})") from None


def _check_member_path(info: zipfile.ZipInfo) -> PurePosixPath:
    name = info.filename
    if "\\" in name or name.startswith("/") or re.match(r"[A-Za-z]:", name):
        raise CheckpointError(f"Refused {name!r}: absolute or Windows-style paths are not allowed in the zip")
    path = PurePosixPath(name)
    if ".." in path.parts:
        raise CheckpointError(f"Refused {name!r}: paths with '..' are not allowed in the zip")
    if stat.S_ISLNK(info.external_attr >> 16):
        raise CheckpointError(f"Refused {name!r}: symbolic links are not allowed in the zip")
    if info.flag_bits & 0x1:
        raise CheckpointError(f"Refused {name!r}: encrypted files are not allowed in the zip")
    return path


def _strip_top_folder(paths: list[PurePosixPath]) -> tuple[list[PurePosixPath], str | None]:
    """Members all under one folder `X/` (a zip of a folder) -> paths relative to it, and X."""
    tops = {path.parts[0] for path in paths}
    if len(tops) == 1 and all(len(path.parts) > 1 for path in paths):
        return [PurePosixPath(*path.parts[1:]) for path in paths], tops.pop()
    return paths, None


def _check_allowed(relative: PurePosixPath) -> None:
    name = relative.as_posix()
    if relative.suffix.lower() in PICKLE_SUFFIXES:
        raise CheckpointError(
            f"Refused {name!r}: pickle-based files ({', '.join(PICKLE_SUFFIXES)}) can run code when loaded; "
            "only safetensors weights are accepted"
        )
    accepted = REQUIRED_FILES + optional_files()
    if name not in accepted and not SNAPSHOT_MEMBER.fullmatch(name):
        raise CheckpointError(
            f"Refused {name!r}: a checkpoint zip may only hold {', '.join(accepted)} "
            f"and {SNAPSHOTS_DIR}/*.safetensors"
        )


def plan_members(archive: zipfile.ZipFile) -> tuple[list[tuple[zipfile.ZipInfo, PurePosixPath]], str | None]:
    """Check every member's name and the totals; returns (file member, path inside the checkpoint), top folder."""
    infos = archive.infolist()
    if len(infos) > MAX_MEMBERS:
        raise CheckpointError(f"The zip has {len(infos)} entries; at most {MAX_MEMBERS} are accepted")
    total = sum(info.file_size for info in infos)
    budget = limits.upload_budget_bytes()
    if total > budget:
        raise CheckpointError(
            f"The zip would unpack to {megabytes(total)}; uploads may unpack to at most {megabytes(budget)} "
            f"(the setting {UPLOAD_SETTING} raises the limit)"
        )
    files = [info for info in infos if not info.is_dir()]
    paths = [_check_member_path(info) for info in infos]
    paths = [path for info, path in zip(infos, paths, strict=True) if not info.is_dir()]
    relative, top = _strip_top_folder(paths)
    if len({p.as_posix() for p in relative}) != len(relative):
        raise CheckpointError("The zip holds the same file twice")
    for path in relative:
        _check_allowed(path)
    _check_snapshots(
        [info for info, path in zip(files, relative, strict=True) if path.parts[0] == SNAPSHOTS_DIR]
    )
    missing = [name for name in REQUIRED_FILES if PurePosixPath(name) not in relative]
    if missing:
        raise CheckpointError(
            f"The zip has no {', '.join(missing)}: a checkpoint needs {', '.join(REQUIRED_FILES)}"
        )
    return list(zip(files, relative, strict=True)), top


def _check_snapshots(snapshots: list[zipfile.ZipInfo]) -> None:
    """At most MAX_SNAPSHOTS snapshot files, of at most MAX_SNAPSHOTS_BYTES together (as the zip declares them;
    the bytes written are counted against that total as they unpack)."""
    if len(snapshots) > MAX_SNAPSHOTS:
        raise CheckpointError(
            f"The zip holds {len(snapshots)} snapshot files; a checkpoint may bring at most {MAX_SNAPSHOTS}"
        )
    total = sum(info.file_size for info in snapshots)
    if total > MAX_SNAPSHOTS_BYTES:
        raise CheckpointError(
            f"The zip's snapshots unpack to {megabytes(total)}; a checkpoint may bring at most "
            f"{megabytes(MAX_SNAPSHOTS_BYTES)} of them"
        )


def _check_first_bytes(name: str, head: bytes, size: int) -> None:
    """Refuse pickles and torch zips whatever their name; weights must start like safetensors."""
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        raise CheckpointError(f"Refused {name!r}: it is a Python pickle, which can run code when loaded")
    if head[:4] == b"PK\x03\x04":
        raise CheckpointError(
            f"Refused {name!r}: it is an archive (a torch.save file?), not a checkpoint file"
        )
    if name.endswith(".safetensors"):
        try:
            limits.safetensors_header_length(head, size, name)
        except ValueError as err:
            raise CheckpointError(f"Refused {name!r}: {err}") from None


def _extract_member(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, limit: int, past: str
) -> int:
    """Copy one member, checking its first bytes; stop before the byte past `limit`. Returns bytes written."""
    target.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with archive.open(info) as source, open(target, "xb") as sink:
        while chunk := source.read(1 << 20):
            if written == 0:
                _check_first_bytes(info.filename, chunk[:16], info.file_size)
            written += len(chunk)
            if written > limit:
                raise CheckpointError(f"Refused {info.filename!r}: it unpacks to {past}")
            sink.write(chunk)
    return written


def suggested_name(filename: str, data: bytes | BinaryIO | None = None) -> str:
    """A safe default name for an upload: the zip's top folder or file name, cleaned."""
    stem = Path(filename).stem
    if data is not None:
        try:
            _, top = plan_members(_open_zip(data))
            stem = top or stem
        except CheckpointError:
            pass
    cleaned = re.sub(r"\.{2,}", ".", re.sub(r"[^A-Za-z0-9._-]+", "-", stem)).strip("._-")[:60]
    return cleaned or "uploaded"


def import_zip(
    data: bytes | BinaryIO, name: str, root: Path | None = None, owner: access.Visitor | None = None
) -> Path:
    """Validate an uploaded checkpoint zip and add it as `<root>/<name>`; CheckpointError says why not."""
    root = root or checkpoints_root()
    target = root / validate_run_name(name)
    _check_name_free(target, name)
    archive = _open_zip(data)
    members, _ = plan_members(archive)
    root.mkdir(parents=True, exist_ok=True)
    claim = sum(info.file_size for info, _ in members)
    quota.check_disk(owner, claim, "this upload", root)
    staging = _make_staging(root, claim)
    try:
        _extract_all(archive, members, staging, claim)
        _check_loads(staging)
        access.record_owner(staging, owner)
        _check_name_free(target, name)
        staging.chmod(0o755)  # mkdtemp makes it private
        os.rename(staging, target)  # same disk: one atomic step
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def _check_name_free(target: Path, name: str) -> None:
    if name in PROTECTED or target.exists():
        raise CheckpointError(f"A checkpoint named {name!r} already exists: choose another name")


def _make_staging(root: Path, claim: int) -> Path:
    """A hidden staging folder that claims `claim` bytes of the upload budget, if that much is free."""
    with exclusive_lock(root):  # uploads run in threads and in several app workers: one claim at a time
        budget = limits.upload_budget_bytes()
        others = _claimed_by_others(root)
        if len(list(root.glob(".upload-*"))) >= limits.MAX_CONCURRENT_UPLOADS:
            raise CheckpointError(
                f"{limits.MAX_CONCURRENT_UPLOADS} uploads are being unpacked now, the most this "
                "server takes at once: try again in a minute"
            )
        if claim > budget - others:
            raise CheckpointError(
                f"Uploads being unpacked now hold {megabytes(others)} of the {megabytes(budget)} allowed and this "
                f"zip would unpack to {megabytes(claim)}: try again in a minute (the setting {UPLOAD_SETTING} "
                "raises the limit)"
            )
        return Path(tempfile.mkdtemp(prefix=f".upload-{os.getpid()}-{claim}-", dir=root))


def remove_abandoned_staging(root: Path | None = None) -> list[str]:
    """Remove the staging folders of servers that stopped mid-upload; returns their names."""
    removed = []
    for folder in (root or checkpoints_root()).glob(".upload-*"):
        match = _STAGING_NAME.match(folder.name)
        if match and not process_alive(int(match[1])):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder.name)
    return removed


def _claimed_by_others(root: Path) -> int:
    """Bytes claimed by staging folders under root; those of processes that died are removed."""
    remove_abandoned_staging(root)
    total = 0
    for folder in root.glob(".upload-*"):
        match = _STAGING_NAME.match(folder.name)
        total += int(match[2]) if match else folder_size(folder)
    return total


def _extract_all(archive: zipfile.ZipFile, members: list, staging: Path, claim: int) -> None:
    """Unpack config.json first (and check it), then the rest, each within its limit and the claim."""
    config = None
    left = claim
    try:
        for info, relative in sorted(members, key=_extraction_order):
            limit, past = _member_limit(relative.as_posix(), config, left)
            left -= _extract_member(archive, info, staging / relative, limit, past)
            if relative.parts[0] == SNAPSHOTS_DIR and relative.suffix == ".safetensors":
                _check_snapshot_names(staging / relative, info.filename)
            if relative.as_posix() == CONFIG_FILE:
                config = _read_config(staging / CONFIG_FILE)
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, RuntimeError, NotImplementedError) as err:
        raise CheckpointError(f"The zip is damaged ({without_folder(str(err), staging)})") from None


def _check_snapshot_names(path: Path, name: str) -> None:
    """A snapshot holds one tensor, `attentions`: its header's names are checked before anything reads a tensor."""
    try:
        names = set(limits.read_safetensors_header(path, name)) - {"__metadata__"}
    except ValueError as err:
        raise CheckpointError(f"Refused {name!r}: {err}") from None
    if names != {SNAPSHOT_TENSOR}:
        shown = ", ".join(repr(n[:40]) for n in sorted(names)[:3])
        raise CheckpointError(
            f"Refused {name!r}: a snapshot holds one tensor, {SNAPSHOT_TENSOR!r}, not {shown or 'none'}"
        )


def _extraction_order(member: tuple[zipfile.ZipInfo, PurePosixPath]) -> tuple[bool, bool, str]:
    relative = member[1]
    return relative.as_posix() != CONFIG_FILE, relative.suffix == ".safetensors", relative.as_posix()


def _member_limit(name: str, config: BertConfig | None, left: int) -> tuple[int, str]:
    """(most bytes a member may unpack to, the words for passing it); per-file limits: run_folder.FILES.

    model.safetensors gets what its config.json can need.
    """
    limit = limits.max_weight_bytes(config) if name == WEIGHTS_FILE and config else upload_limits().get(name)
    if limit is None and name.endswith(".json"):
        limit = MAX_JSON_BYTES
    if limit is None or left < limit:
        return left, "more bytes than the zip declares"
    what = (
        "a model with this config.json can need"
        if name == WEIGHTS_FILE
        else f"this server accepts for {name}"
    )
    return limit, f"more than {megabytes(limit)}, the most {what}"


def _read_config(path: Path) -> BertConfig:
    try:
        config = BertConfig.from_json_file(path)
        limits.check_model_size(config)
    except ValueError as err:
        raise CheckpointError(f"The files are not a loadable BERT checkpoint: {err}") from None
    return config


def _check_loads(folder: Path) -> None:
    try:
        load_folder(folder)
    except (ValueError, FileNotFoundError, KeyError, RuntimeError, OSError) as err:
        message = without_folder(str(err), folder)
        raise CheckpointError(f"The files are not a loadable BERT checkpoint: {message}") from None
