"""The server's side of check/zygote.py: one zygote per process, started on first use, asked for a child per job.

`Zygotes.fork_child(folder, env)` gives a `ForkedChild` (wait, kill_group: what the sandbox does with a fresh child),
or None when there is no zygote to ask (it cannot start, or it died `MAX_STARTS` times): then the sandbox starts a
fresh python, as it always did, and a log line says why. The zygote lives as long as this process: it reads its
stdin, a pipe only this process holds, and exits at its end.
"""

from __future__ import annotations

import atexit
import itertools
import json
import logging
import os
import select
import signal
import subprocess
import sys
import threading
from pathlib import Path

COMMAND = (sys.executable, "-m", "bertviz_lite.check.zygote")
MAX_STARTS = 3  # a zygote that keeps dying (a broken install) is not started a fourth time by this process
KILL_WAIT_S = 5.0  # for the zygote to report a killed child's exit
log = logging.getLogger(__name__)


class ZygoteLost(Exception):
    """The zygote died, or stopped answering, while a child of it ran a job: its result is unknown."""


class ForkedChild:
    """A job's child, forked by the zygote: its pid and exit code come back through the zygote."""

    def __init__(self, zygote: Zygote, token: int):
        self.zygote = zygote
        self.token = token
        self.pid: int | None = None
        self.returncode: int | None = None
        self.lost = False
        self.ended = threading.Event()

    def wait(self, timeout: float | None = None) -> int:
        """Its exit code; subprocess.TimeoutExpired as Popen.wait, ZygoteLost when the zygote died first."""
        if not self.ended.wait(timeout):
            raise subprocess.TimeoutExpired(COMMAND, timeout)
        if self.lost:
            what = (
                f"while its child {self.pid} ran a job"
                if self.pid
                else "before it forked a child for the job"
            )
            raise ZygoteLost(f"the checker's zygote (pid {self.zygote.process.pid}) ended {what}")
        return self.returncode

    def kill_group(self) -> None:
        """SIGKILL to its process group, and it gone; through the zygote, which knows the pid is still its child."""
        if self.pid is None:  # the zygote never forked it (stuck importing?): no zygote then
            self.zygote.close(kill=True)
            raise ZygoteLost("the checker's zygote did not fork a child in time")
        if not self.ended.is_set():
            self.zygote.send({"kill": self.token}, missing_ok=True)
        if not self.ended.wait(KILL_WAIT_S) or self.lost:
            self.kill_orphan()

    def kill_orphan(self) -> None:
        """The zygote is gone (its child now init's): the child's group stopped directly, and its end awaited, so that
        nothing of it writes into the job's folder after this."""
        if self.pid is None:
            return
        try:
            ended = os.pidfd_open(self.pid)
        except OSError:
            ended = None
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            pass
        if ended is not None:
            select.select([ended], [], [], KILL_WAIT_S)
            os.close(ended)


class Zygote:
    """One running `python -m bertviz_lite.check.zygote`, and a thread reading what it says."""

    def __init__(self, command: tuple[str, ...], env: dict[str, str], cwd: str):
        self.process = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,  # a Ctrl-C at the server's terminal is the server's to handle
        )
        self.children: dict[int, ForkedChild] = {}
        self.tokens = itertools.count()
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, name="bertviz-lite-zygote", daemon=True)
        self.reader.start()

    def alive(self) -> bool:
        return self.reader.is_alive()

    def fork(self, folder: Path, env: dict[str, str]) -> ForkedChild:
        """Ask for a child for the job in `folder`; ZygoteLost if the zygote cannot be asked."""
        with self.lock:
            child = ForkedChild(self, next(self.tokens))
            self.children[child.token] = child
        self.send({"run": child.token, "folder": str(folder), "env": env})
        return child

    def send(self, message: dict, missing_ok: bool = False) -> None:
        try:
            with self.lock:
                self.process.stdin.write((json.dumps(message) + "\n").encode())
                self.process.stdin.flush()
        except (OSError, ValueError) as error:  # a broken pipe, or closed here
            if not missing_ok:
                raise ZygoteLost(
                    f"the checker's zygote (pid {self.process.pid}) cannot be asked ({error})"
                ) from error

    def _read(self) -> None:
        for line in self.process.stdout:
            try:
                message = json.loads(line)
                token = next(message[k] for k in ("forked", "failed", "exited") if k in message)
            except (ValueError, StopIteration, TypeError):
                log.warning("the checker's zygote said something unexpected: %r", line[:200])
                continue
            with self.lock:
                child = self.children.get(token)
            if child is None:
                continue
            if "forked" in message:
                child.pid = message["pid"]
                continue
            with self.lock:
                del self.children[token]
            if "failed" in message:
                log.warning("the checker's zygote could not fork (%s)", message["error"])
                child.lost = True
            child.returncode = message.get("code")
            child.ended.set()
        self.process.wait()
        with self.lock:
            orphans = list(self.children.values())
            self.children.clear()
        for child in orphans:
            child.lost = True
            child.ended.set()

    def close(self, kill: bool = False) -> None:
        """End of its stdin (it kills its children and exits), or SIGKILL when it may be stuck."""
        if kill:
            self.process.kill()
        try:
            self.process.stdin.close()
        except OSError:
            pass
        self.reader.join(KILL_WAIT_S)


class Zygotes:
    """This process's zygote: started when first asked, started again after it died (MAX_STARTS in all)."""

    def __init__(self, command: tuple[str, ...] = COMMAND):
        self.command = command
        self.zygote: Zygote | None = None
        self.starts = 0
        self.owner = os.getpid()
        self.lock = threading.Lock()

    def fork_child(self, folder: Path, env: dict[str, str]) -> ForkedChild | None:
        """A forked child for the job in `folder`, or None (said in a log line): start a fresh child then."""
        zygote = self._running(env)
        if zygote is None:
            return None
        try:
            return zygote.fork(folder, env)
        except ZygoteLost as error:
            log.warning("%s; this job runs in a fresh python", error)
            return None

    def _running(self, env: dict[str, str]) -> Zygote | None:
        with self.lock:
            if self.owner != os.getpid():  # a fork of the server: the zygote's pipes are its parent's
                self.zygote, self.starts, self.owner = None, 0, os.getpid()
            if self.zygote is not None and self.zygote.alive():
                return self.zygote
            if self.zygote is not None:
                code = self.zygote.process.wait()
                log.warning(
                    "the checker's zygote (pid %d) exited with code %d", self.zygote.process.pid, code
                )
                self.zygote = None
                if self.starts >= MAX_STARTS:
                    log.warning("the checker's zygote is not started again: checks run in a fresh python")
            if self.starts >= MAX_STARTS:
                return None
            self.starts += 1
            try:
                self.zygote = Zygote(self.command, env, cwd=str(Path(__file__).resolve().parents[2]))
            except OSError as error:
                log.warning("the checker's zygote cannot start (%s); jobs run in a fresh python", error)
            return self.zygote

    def close(self) -> None:
        with self.lock:
            if self.zygote is not None and self.owner == os.getpid():
                self.zygote.close()
            self.zygote = None


ZYGOTES = Zygotes()


@atexit.register
def _close_at_exit() -> None:
    ZYGOTES.close()
