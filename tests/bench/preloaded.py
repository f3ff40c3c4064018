"""Run `python bench/X.py --smoke` as a child forked from one interpreter that has already imported the heavy
third-party modules the scripts share (torch, transformers, streamlit, plotly, pandas, playwright).

A cold interpreter spends 1.5-5 s of CPU importing them before a smoke run's own second of work; 26 scripts paid that
26 times (tests/bench/test_bench_smoke.py). Here the test starts this file once (`python tests/bench/preloaded.py`),
which imports them and then, per request, forks a child that runs the script as a fresh `python bench/X.py --smoke`
would: the script as `__main__`, its argv, its folder first on sys.path (this folder is not on it), the repository as
its working directory, its own stdout and stderr, an empty stdin. Nothing of the project is imported before the fork,
so each script still finds and imports bertviz_lite, bench/ and tests/ itself; what the fork takes away is only the
cold import of the third-party modules listed in PRELOAD. The processes a script starts (the app's server, chromium,
a training run) start cold as before.

Protocol, JSON lines: the test writes {"script", "stdout", "stderr"}; this process answers {"pid"} at the fork, then
{"returncode"} (negative: the signal that ended it, as subprocess reports it) when the child has ended.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import runpy
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PRELOAD = (
    "numpy",
    "pandas",
    "torch",
    "transformers.models.bert.modeling_bert",  # with torch._dynamo, sympy and scipy: 3 s of CPU cold
    "safetensors.torch",
    "streamlit",
    "plotly.graph_objects",
    "playwright.sync_api",
    "websockets",
)


def preload() -> None:
    """Import PRELOAD; a module that is not installed is left to the script to miss, as it would cold.

    Then gc.freeze(): the children's garbage collections, their exit's included, leave the preloaded objects alone
    instead of touching, and so copying, every page of them (a child's exit cost 1.3 s of CPU without it).
    """
    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    gc.freeze()


def run_script(request: dict) -> None:
    """In the forked child: become `python bench/X.py --smoke` (exceptions and SystemExit end the child as they would
    end that interpreter)."""
    for fd, path, flags in (
        (0, os.devnull, os.O_RDONLY),
        (1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        (2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
    ):
        os.dup2(os.open(path, flags), fd)
    sys.stdin = open(os.devnull)  # noqa: SIM115 - the child's stdin until it exits
    script = REPO / request["script"]
    os.chdir(REPO)
    sys.argv = [request["script"], "--smoke"]
    sys.path[0] = str(script.parent)  # what `python bench/X.py` puts first (this file's folder was there)
    runpy.run_path(str(script), run_name="__main__")
    sys.exit(0)


def answer(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()  # before any fork: a child must not inherit unwritten answers


def serve() -> None:
    """Preload, then one forked child per request line, one at a time."""
    preload()
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            run_script(request)
        answer({"pid": pid})
        _, status = os.waitpid(pid, 0)
        answer({"returncode": os.waitstatus_to_exitcode(status)})


class Preloaded:
    """The test's side: one preloaded interpreter, started on first use, that runs scripts one at a time."""

    def __init__(self, env: dict[str, str]):
        self.env = env
        self.process: subprocess.Popen | None = None
        self.pending = b""

    def run(self, script: str, timeout: float) -> subprocess.CompletedProcess:
        """`python script --smoke` from the preloaded interpreter; subprocess.run's result, or its TimeoutExpired."""
        if self.process is None or self.process.poll() is not None:
            self.process = self._start()
        with tempfile.TemporaryDirectory(prefix="bench_smoke_") as folder:
            out = Path(folder) / "stdout"
            err = Path(folder) / "stderr"
            request = {"script": script, "stdout": str(out), "stderr": str(err)}
            self.process.stdin.write((json.dumps(request) + "\n").encode())
            self.process.stdin.flush()
            deadline = time.monotonic() + timeout
            pid = self._answer(deadline + 60)["pid"]  # the preload comes first on a fresh start
            try:
                returncode = self._answer(deadline)["returncode"]
            except TimeoutError:
                os.kill(pid, signal.SIGKILL)
                self._answer(time.monotonic() + 60)
                raise subprocess.TimeoutExpired(script, timeout) from None
            return subprocess.CompletedProcess(script, returncode, out.read_text(), err.read_text())

    def close(self) -> None:
        if self.process is not None:
            self.process.stdin.close()
            self.process.wait(timeout=60)

    def _start(self) -> subprocess.Popen:
        command = [sys.executable, str(Path(__file__).resolve())]
        return subprocess.Popen(
            command, cwd=REPO, env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )

    def _answer(self, deadline: float) -> dict:
        """The next answer line, read as it arrives (a select on the pipe; TimeoutError past the deadline)."""
        fd = self.process.stdout.fileno()
        while b"\n" not in self.pending:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise TimeoutError
            chunk = os.read(fd, 4096)
            if not chunk:
                raise RuntimeError(f"the preloaded interpreter ended (code {self.process.wait()})")
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return json.loads(line)


if __name__ == "__main__":
    serve()
