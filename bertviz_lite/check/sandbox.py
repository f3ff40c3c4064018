"""Run the learner's code in a child process (bertviz_lite/check/worker.py) with a time and a memory limit.

Tensors go both ways as safetensors and results as JSON in a temporary folder: nothing the child wrote is unpickled.
Whatever the child does (raise, loop, allocate, die), each job comes back as a result dict.

Each job runs in a fork of this process's zygote (check/zygote.py: torch already imported, so a child starts in
milliseconds rather than ~1.5 s), a fork of its own, which becomes what a fresh child is before the worker runs. Where
there is no zygote (it cannot start, or it died), the jobs run as they always did: in a fresh
`python -m bertviz_lite.check.worker`, one after another. Either way the same limits, results and messages.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from safetensors.torch import load_file, save_file
from torch import Tensor

from bertviz_lite.check import zygote_client
from bertviz_lite.check.zygote_client import ForkedChild, ZygoteLost

TIME_LIMIT_S = 20.0  # per job, inside the child
MEMORY_LIMIT_BYTES = 3 * 1024**3  # the child's address space: torch itself takes ~0.7 GB of it
STARTUP_S = 30.0  # importing torch on a busy machine
MAX_RESULT_BYTES = 64 * 1024**2
READY = "ready"  # the file the child writes once torch is imported and the inputs read
POLL_S = 0.05
log = logging.getLogger(__name__)


def run_jobs(
    jobs: list[dict[str, Any]],
    config: dict[str, Any],
    ours: dict[str, Tensor],
    inputs: dict[str, Tensor],
    time_limit: float = TIME_LIMIT_S,
    memory_limit: int = MEMORY_LIMIT_BYTES,
) -> list[tuple[dict[str, Any], dict[str, Tensor]]]:
    """Each job's (result, tensors): each in a fork of the zygote of its own, or (no zygote) one after another in
    one fresh child process."""
    with tempfile.TemporaryDirectory(prefix="bertviz-check-") as folder:
        root = Path(folder)
        request = {"config": config, "jobs": jobs, "time_limit": time_limit, "memory_limit": memory_limit}
        save_file({k: v.contiguous() for k, v in ours.items()}, str(root / "ours.safetensors"))
        save_file({k: v.contiguous() for k, v in inputs.items()}, str(root / "inputs.safetensors"))
        results = []
        # a job that kills its child costs only itself: the next child starts after it
        while len(results) < len(jobs):
            results += _run_from(root, request, len(results), time_limit + 2.0)
        return results


def _run_from(root: Path, request: dict[str, Any], start: int, job_s: float):
    """The (result, tensors) of the jobs from `start` that one child ran, up to and with the first it did not finish."""
    env = _child_env()
    stop = start + 1
    child = _forked(root, request, start, stop, env)
    try:
        returncode = _wait(child, root, time.monotonic(), job_s) if child else None
    except ZygoteLost as error:
        log.warning("%s; it runs again in a fresh python", error)
        child.kill_orphan()
        child = None
    if child is None:
        stop = len(request["jobs"])
        _write_request(root, request, start, stop)
        returncode = _run_fresh(root, env, job_s)
    child_log = root / "child.log"
    text = child_log.read_bytes()[-2000:].decode("utf-8", "replace") if child_log.is_file() else ""
    done = [_read_job(root, n, returncode, text) for n in range(start, stop)]
    finished = next((i for i, (result, _) in enumerate(done) if result.get("lost")), len(done))
    return done[: finished + 1]


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    package_parent = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent, env.get("PYTHONPATH")]))
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return env


def _write_request(root: Path, request: dict[str, Any], start: int, stop: int) -> None:
    """The jobs start … stop-1 for the next child; what an earlier child left of them, and its ready file, gone."""
    for n in range(start, len(request["jobs"])):
        (root / f"job{n}.json").unlink(missing_ok=True)
        (root / f"job{n}.safetensors").unlink(missing_ok=True)
    (root / READY).unlink(missing_ok=True)
    (root / "request.json").write_text(json.dumps({**request, "start": start, "stop": stop}))


def _forked(
    root: Path, request: dict[str, Any], start: int, stop: int, env: dict[str, str]
) -> ForkedChild | None:
    """A fork of the zygote running the jobs start … stop-1, or None when there is no zygote to ask."""
    _write_request(root, request, start, stop)
    return zygote_client.ZYGOTES.fork_child(root, env)


def _run_fresh(root: Path, env: dict[str, str], job_s: float) -> int | None:
    """(exit code, or None if it was killed for time) of a fresh `python -m bertviz_lite.check.worker`."""
    with open(root / "child.log", "wb") as log_file:
        child = subprocess.Popen(
            [sys.executable, "-m", "bertviz_lite.check.worker", str(root)],
            cwd=root,
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        return _wait(_FreshChild(child), root, time.monotonic(), job_s)


class _FreshChild:
    """A Popen as _wait uses a child: wait, and kill_group (the child leads its own session)."""

    def __init__(self, popen: subprocess.Popen):
        self.popen = popen

    def wait(self, timeout: float | None = None) -> int:
        return self.popen.wait(timeout=timeout)

    def kill_group(self) -> None:
        os.killpg(self.popen.pid, signal.SIGKILL)
        self.popen.wait()


def _wait(child: _FreshChild | ForkedChild, root: Path, started: float, job_s: float) -> int | None:
    """The child's exit code, or None once a job (timed from the end of the one before, or from the child being
    ready) has run job_s seconds, or the child was not ready within STARTUP_S: then it is killed."""
    deadline = started + STARTUP_S
    done = -1
    while True:
        try:
            return child.wait(timeout=POLL_S)
        except subprocess.TimeoutExpired:
            pass
        finished = len(list(root.glob("job*.json")))
        if (root / READY).exists() and finished != done:
            done = finished
            deadline = time.monotonic() + job_s
        if time.monotonic() > deadline:
            child.kill_group()
            return None


def _read_job(
    root: Path, n: int, returncode: int | None, log: str
) -> tuple[dict[str, Any], dict[str, Tensor]]:
    result_path = root / f"job{n}.json"
    tensor_path = root / f"job{n}.safetensors"
    if not result_path.is_file() or result_path.stat().st_size > MAX_RESULT_BYTES:
        return _lost(returncode, log), {}
    try:
        result = json.loads(result_path.read_text())
        tensors = load_file(str(tensor_path)) if tensor_path.is_file() else {}
    except (ValueError, OSError) as error:
        return {"status": "crashed", "message": f"its results could not be read ({error})"}, {}
    return (result, tensors) if isinstance(result, dict) else (_lost(returncode, log), {})


def _lost(returncode: int | None, log: str) -> dict[str, Any]:
    """The result of a job the child never finished: killed for time, or died (a signal, os._exit, a C crash)."""
    if returncode is None:
        return {"status": "timeout", "phase": "run", "message": "it was stopped from outside", "lost": True}
    lines = [line for line in log.strip().splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    how = f"killed by signal {-returncode}" if returncode < 0 else f"exit code {returncode}"
    return {
        "status": "crashed",
        "phase": "run",
        "message": f"the process running it died ({how})",
        "where": last,
        "lost": True,
    }
