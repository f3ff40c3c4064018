"""`python -m bertviz_lite.check.zygote`: torch and the worker imported once; a fork of this process per job.

A fresh `python -m bertviz_lite.check.worker` spends ~1.4 of its ~1.5 CPU-s importing torch; a fork of a process
that has already imported it starts in milliseconds. The zygote itself never runs a learner's code: each job runs in
a child of its own, which first becomes what the sandbox's fresh child is (its own session, the job's folder as its
working directory and sys.path[0], stdin from /dev/null, stdout and stderr to child.log, no other inherited
descriptor, the sandbox's environment) and then runs worker.main, which sets the memory and core limits before it
loads their file. Nothing one job leaves (modules, globals, patches of torch) reaches the next: it dies with its fork.

It talks to check/zygote_client.py over its stdin and stdout, one JSON object a line:
    in:  {"run": TOKEN, "folder": DIR, "env": {...}}    fork a child for the job in DIR
         {"kill": TOKEN}                                 SIGKILL that child's process group, if it has not exited
    out: {"forked": TOKEN, "pid": PID} or {"failed": TOKEN, "error": TEXT}, then {"exited": TOKEN, "code": CODE}
         (CODE as Popen's returncode: -N for a signal)
End of file on stdin (the server process has gone) kills the children still running, and the zygote exits.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import random
import select
import signal
import sys
import traceback

from bertviz_lite.check import worker

MAX_FD = os.sysconf("SC_OPEN_MAX")


def main() -> int:
    gc.freeze()  # what the imports made stays out of the collector: forks share those pages instead of copying them
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # only to wake select through the wakeup descriptor
    signal.set_wakeup_fd(wake_write)
    children: dict[int, int] = {}  # pid -> token
    pending = b""
    while True:
        try:
            readable, _, _ = select.select([0, wake_read], [], [])
        except InterruptedError:
            continue
        if wake_read in readable:
            os.read(wake_read, 4096)
        _reap(children)
        if 0 in readable:
            chunk = os.read(0, 1 << 16)
            if not chunk:
                _kill_all(children)
                return 0
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                _handle(json.loads(line), children, (wake_read, wake_write))


def _handle(message: dict, children: dict[int, int], own_fds: tuple[int, int]) -> None:
    if "kill" in message:
        pid = next((p for p, token in children.items() if token == message["kill"]), None)
        if pid is not None:  # not yet reaped: the pid is still this child's, never a stranger's
            _kill_group(pid)
        return
    token = message["run"]
    try:
        pid = os.fork()
    except OSError as error:
        _send({"failed": token, "error": str(error)})
        return
    if pid == 0:
        _child(message["folder"], message["env"], own_fds)  # never returns
    children[pid] = token
    _send({"forked": token, "pid": pid})


def _child(folder: str, env: dict[str, str], own_fds: tuple[int, int]) -> None:
    """Become the sandbox's fresh child (see the module's docstring), run the worker, exit with its code."""
    code = 1
    try:
        os.setsid()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in own_fds:
            os.close(fd)
        os.chdir(folder)
        log = os.open("child.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.closerange(3, MAX_FD)
        os.environ.clear()
        os.environ.update(env)
        sys.path[0] = os.getcwd()  # as `python -m` run in the folder would have it
        sys.argv = [worker.__file__, folder]
        importlib.invalidate_caches()
        random.seed()  # a fresh process's own seed, not the zygote's state shared by every fork
        code = worker.main([folder])
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    except BaseException:  # noqa: BLE001 - as an uncaught exception ends `python -m`: printed, exit code 1
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:  # noqa: BLE001, S110 - its exit code is what counts now
                pass
        os._exit(code)


def _reap(children: dict[int, int]) -> None:
    """Every child that has exited: its exit code sent, its pid forgotten."""
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        token = children.pop(pid, None)
        if token is not None:
            _send({"exited": token, "code": os.waitstatus_to_exitcode(status)})


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:  # before its setsid: the child alone
        os.kill(pid, signal.SIGKILL)


def _kill_all(children: dict[int, int]) -> None:
    """The server process has gone: nobody will read these children's results or stop them on the wall clock."""
    for pid in children:
        _kill_group(pid)
    for pid in children:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


def _send(message: dict) -> None:
    try:
        os.write(1, (json.dumps(message) + "\n").encode())
    except BrokenPipeError:  # the server process has gone: end of file on stdin follows
        pass


if __name__ == "__main__":
    sys.exit(main())
