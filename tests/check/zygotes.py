"""The checker's zygotes this test process holds, read from /proc (tests/check/test_zygote.py, test_sandbox.py)."""

from __future__ import annotations

from pathlib import Path

ZYGOTE_MODULE = b"bertviz_lite.check.zygote"


def our_zygotes() -> list[int]:
    """The pids of this process's living children that run `python -m bertviz_lite.check.zygote`."""
    pids = []
    for task in Path("/proc/self/task").iterdir():
        for pid in (task / "children").read_text().split():
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes()  # empty for a zombie
            except OSError:
                continue
            if ZYGOTE_MODULE in command:
                pids.append(int(pid))
    return pids
