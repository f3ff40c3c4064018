"""What a run folder's files say, checked as untrusted input (a run folder may be an upload).

Pure functions on text and parsed JSON: metrics lines with finite, plausible numbers (a line that is not is
skipped and counted), status fields of the right type and size, train_args' objects. `run_folder` reads the
files (capped in bytes and lines) and hands them here.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bertviz_lite.limits import (
    MAX_METRICS_READ_BYTES,
    MAX_METRICS_READ_LINES,
    recorded_count,
    recorded_number,
)

MAX_TEXT_FIELD = 200  # characters of a text value in metrics or status read back ("split", "state")
_STATUS_COUNTS = ("pid", "step", "total_steps", "checkpoint_step")
_STATUS_TIMES = ("started_at", "updated_at", "eta_s")
MAX_STATUS_MESSAGE = 4000


@dataclass
class Metrics:
    """The records read back from a metrics.jsonl, and what was left out on the way."""

    records: list[dict[str, Any]]
    skipped: int = 0  # lines that are not a record of finite, plausible numbers
    truncated: bool = False  # only the file's tail was read (MAX_METRICS_READ_BYTES, MAX_METRICS_READ_LINES)

    @property
    def note(self) -> str:
        """A sentence on what was left out, "" when nothing was."""
        parts = []
        if self.truncated:
            parts.append(
                f"only its last {MAX_METRICS_READ_LINES:,} lines (at most "
                f"{MAX_METRICS_READ_BYTES // 2**20} MB) were read"
            )
        if self.skipped:
            parts.append(
                f"{self.skipped} line{'s' if self.skipped > 1 else ''} skipped (not finite, plausible numbers)"
            )
        return "; ".join(parts)


def read_tail(path: Path, max_bytes: int | None) -> tuple[str, bool]:
    """The file's text, or its last `max_bytes` from the first whole line; and whether it was cut."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if max_bytes is None or size <= max_bytes:
            return handle.read().decode("utf-8", errors="replace"), False
        handle.seek(size - max_bytes)
        data = handle.read(max_bytes)
    return data[data.find(b"\n") + 1 :].decode("utf-8", errors="replace"), True


def parse_metrics(
    text: str, split: str | None = None, max_lines: int | None = None, truncated: bool = False
) -> Metrics:
    """The valid records of a metrics.jsonl text (its last `max_lines`), counting the lines skipped.

    A line is kept only when it is a JSON object whose numbers are finite and plausible (limits.recorded_number,
    a step by limits.recorded_count) and whose texts are short. The last line may be half-written while a run
    trains: when it does not parse it is skipped without counting.
    """
    lines = text.splitlines()
    if max_lines is not None and len(lines) > max_lines:
        lines = lines[-max_lines:]
        truncated = True
    metrics = Metrics([], truncated=truncated)
    for number, line in enumerate(lines):
        try:
            record = _valid_record(json.loads(line))
        except (ValueError, RecursionError):
            metrics.skipped += line.strip() != "" and number != len(lines) - 1
            continue
        if record is None:
            metrics.skipped += 1
        elif split is None or record.get("split") == split:
            metrics.records.append(record)
    return metrics


def valid_status(status: dict[str, Any]) -> dict[str, Any]:
    """status.json's fields of the wrong type or size (a 400-digit step, a list for a pid, a host of 300 characters)
    as None; message cut."""
    status.update({key: recorded_count(status.get(key)) for key in _STATUS_COUNTS if key in status})
    status.update({key: recorded_number(status.get(key)) for key in _STATUS_TIMES if key in status})
    message = status.get("message")
    host = status.get("host")
    status["message"] = message[:MAX_STATUS_MESSAGE] if isinstance(message, str) else ""
    status["host"] = host if isinstance(host, str) and len(host) <= MAX_TEXT_FIELD else None
    return status


def valid_train_args(train_args: dict[str, Any]) -> dict[str, Any]:
    """train_args.json with "args" and "config" as objects: another type (`"config": [1, 2]`) reads as {}."""
    for key in ("args", "config"):
        if key in train_args and not isinstance(train_args[key], dict):
            train_args[key] = {}
    return train_args


def _valid_record(record: Any) -> dict[str, Any] | None:
    """One parsed metrics line, or None when it is not an object of plausible scalars."""
    if not isinstance(record, dict) or ("step" in record and recorded_count(record["step"]) is None):
        return None
    for value in record.values():
        if value is None or (isinstance(value, str) and len(value) <= MAX_TEXT_FIELD):
            continue
        if recorded_number(value) is None:
            return None
    return record
