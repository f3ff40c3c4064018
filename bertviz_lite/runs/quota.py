"""Disk quotas for what visitors add from the app: uploads and runs, per visitor and in total.

A folder counts when the app made it (it has an owner.json, see `bertviz_lite.server.access`); the shipped
checkpoints and runs started from a terminal are the server's and do not count. Settings:
BERTVIZ_LITE_VISITOR_DISK_MB (default 2048) and BERTVIZ_LITE_DISK_MB (default 20480).
"""

from __future__ import annotations

from pathlib import Path

from bertviz_lite.limits import (
    DISK_SETTING,
    VISITOR_DISK_SETTING,
    megabytes,
    total_disk_bytes,
    visitor_disk_bytes,
)
from bertviz_lite.loading.run_folder import RunFolder, checkpoints_root
from bertviz_lite.server import access


class QuotaError(ValueError):
    """Adding this would pass a disk quota; the message is meant for the visitor."""


def _folder_bytes(folder: Path) -> int:
    total = 0
    for path in folder.rglob("*"):
        try:
            total += path.stat().st_size if path.is_file() and not path.is_symlink() else 0
        except OSError:
            continue  # deleted while we count
    return total


def disk_usage(visitor: access.Visitor | None, root: Path | None = None) -> tuple[int, int]:
    """(bytes of `visitor`'s folders, bytes of every app-made folder) under the root."""
    root = root or checkpoints_root()
    mine = everyone = 0
    for folder in root.iterdir() if root.is_dir() else ():
        if folder.is_dir() and not folder.name.startswith(".") and RunFolder(folder).owner.is_file():
            size = _folder_bytes(folder)
            everyone += size
            mine += size if visitor is not None and access.is_owner(folder, visitor) else 0
    return mine, everyone


def check_disk(visitor: access.Visitor | None, adding: int, what: str, root: Path | None = None) -> None:
    """QuotaError in a sentence when `adding` more bytes (an upload, a run's estimate) passes a quota.

    No visitor (the server, a terminal run) and the admin are not limited.
    """
    if visitor is None or visitor.admin:
        return
    mine, everyone = disk_usage(visitor, root)
    if mine + adding > visitor_disk_bytes():
        raise QuotaError(
            f"Your uploads and runs use {megabytes(mine)} of the {megabytes(visitor_disk_bytes())} each visitor may "
            f"use, and {what} needs {megabytes(adding)} more: delete one of yours on the Checkpoints page first "
            f"(the setting {VISITOR_DISK_SETTING})."
        )
    if everyone + adding > total_disk_bytes():
        raise QuotaError(
            f"The class's uploads and runs use {megabytes(everyone)} of the {megabytes(total_disk_bytes())} this "
            f"server allows, and {what} needs {megabytes(adding)} more: ask the lecturer to make room "
            f"(the setting {DISK_SETTING})."
        )
