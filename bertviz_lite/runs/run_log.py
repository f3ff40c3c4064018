"""A training run's log as the app reads it back: the reason a run failed, the log's tail, and what a visitor
who does not own the run may see of it (the reason line, with the server's paths removed)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from bertviz_lite.loading.run_folder import RunFolder

TAIL_FOLLOWS = " Last lines of its log:"  # ends a died message's first line when the tail follows
_ERROR_LINE = re.compile(r"(?:^|: )error: (.+)$")  # the CLI's one-line errors, argparse's included
# An absolute path (POSIX, or a Windows drive) not inside a word, up to the next space, quote or bracket.
_PATH = re.compile(r"""(?:\b[A-Za-z]:|(?<![\w.~-]))(?:[/\\][^\s/\\'"()\[\]<>,;]+)+[/\\]?""")


def died_message(run_dir: Path, pid: Any) -> str:
    """The reason first (the CLI's last "error: ..." line, in full), then the tail of the log."""
    tail = log_tail(run_dir)
    reasons = [m[1] for line in tail.splitlines() if (m := _ERROR_LINE.search(line))]
    if reasons:
        text = f"{reasons[-1]} (the training process, pid {pid}, exited)"
    else:
        text = f"The training process (pid {pid}) ended without saying why."
    return f"{text}{TAIL_FOLLOWS}\n{tail}" if tail else text


def silent_message(run_dir: Path, status: dict[str, Any], age: float | None) -> str:
    """Why a run whose heartbeat stopped is failed: when it was last heard of and what is kept (not the machine's
    name: visitors who do not own the run see this line too); the log's tail after it."""
    ago = "long ago" if age is None else f"{age:.0f} s ago"
    kept = status.get("checkpoint_step")
    text = (
        f"The run's status was last renewed {ago} (a training run renews it every few seconds): its process or "
        "its machine stopped without a word"
        + (f"; the checkpoint of step {kept} is kept." if kept is not None else ".")
    )
    tail = log_tail(run_dir)
    return f"{text}{TAIL_FOLLOWS}\n{tail}" if tail else text


def log_tail(run_dir: str | os.PathLike, max_lines: int = 12, max_chars: int = 2000) -> str:
    """The last lines of `<run>/train.log` (progress-bar redraws collapsed), or ""."""
    path = RunFolder(run_dir).log
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, path.stat().st_size - 32_768))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    # A terminal progress bar redraws its line with "\r": keep only what was drawn last.
    lines = [line.split("\r")[-1].rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    return "\n".join([line for line in lines if line][-max_lines:])[-max_chars:]


def without_paths(reason: str) -> str:
    """A reason line with every absolute path replaced by "…" and no mention of the log (a visitor learns why a run
    failed, not the server's folders)."""
    return _PATH.sub("…", reason.removesuffix(TAIL_FOLLOWS))
