"""The trainer's heartbeat: status.json renewed at least every HEARTBEAT_S seconds while a run trains.

Another machine cannot ask this machine whether a process lives; it can read the shared run folder. So a run is
alive while its "running" status is renewed (loading/run_folder.py's STALE_AFTER_S says for how long it may not
be), whatever the trainer is doing: a long step, an evaluation, a save. The trainer writes each status through
`Heartbeat.write`; a thread of its own writes the last "running" one again every `every_s` seconds with a new
`updated_at`. A final status (finished, stopped, diverged, failed) is written once and the beats end, so nothing
overwrites it. A killed process beats no more, and every machine sees its run fail STALE_AFTER_S later.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from bertviz_lite.loading.run_folder import HEARTBEAT_S, write_status


class Heartbeat:
    """Writes a run's status, and renews a "running" one from a daemon thread until a final one is written."""

    def __init__(self, run_dir: str | os.PathLike, every_s: float = HEARTBEAT_S):
        self.run_dir = Path(run_dir)
        self.every_s = every_s
        self._lock = threading.Lock()
        self._running: dict[str, Any] | None = None  # the status to renew; None once a final one is written
        self._ended = threading.Event()
        self._thread: threading.Thread | None = None

    def write(self, **fields: Any) -> dict[str, Any]:
        """Write this status now (write_status's fields); a "running" one is renewed until the next write."""
        with self._lock:
            status = write_status(self.run_dir, **fields)
            self._running = fields if fields.get("state") == "running" else None
        if self._running is None:
            self._ended.set()
        elif self._thread is None:
            self._thread = threading.Thread(target=self._beat, name="bertviz-lite-heartbeat", daemon=True)
            self._thread.start()
        return status

    def _beat(self) -> None:
        while not self._ended.wait(self.every_s):
            with self._lock:
                if self._running is None:
                    return
                try:
                    write_status(self.run_dir, **self._running)
                except OSError:
                    pass  # a full disk or a folder being removed: the next beat tries again
