"""Run the learner's code in a child process (bertviz_lite/check/worker.py) with a time and a memory limit.

Tensors go both ways as safetensors and results as JSON in a temporary folder: nothing the child wrote is unpickled.
Whatever the child does (raise, loop, allocate, die), each job comes back as a result dict.
"""

from __future__ import annotations

import json
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

TIME_LIMIT_S = 20.0  # per job, inside the child
MEMORY_LIMIT_BYTES = 3 * 1024**3  # the child's address space: torch itself takes ~0.7 GB of it
STARTUP_S = 30.0  # importing torch on a busy machine
MAX_RESULT_BYTES = 64 * 1024**2
READY = "ready"  # the file the child writes once torch is imported and the inputs read
POLL_S = 0.05


def run_jobs(
    jobs: list[dict[str, Any]],
    config: dict[str, Any],
    ours: dict[str, Tensor],
    inputs: dict[str, Tensor],
    time_limit: float = TIME_LIMIT_S,
    memory_limit: int = MEMORY_LIMIT_BYTES,
) -> list[tuple[dict[str, Any], dict[str, Tensor]]]:
    """Each job's (result, tensors), run one after another in one child process."""
    with tempfile.TemporaryDirectory(prefix="bertviz-check-") as folder:
        root = Path(folder)
        request = {"config": config, "jobs": jobs, "time_limit": time_limit, "memory_limit": memory_limit}
        save_file({k: v.contiguous() for k, v in ours.items()}, str(root / "ours.safetensors"))
        save_file({k: v.contiguous() for k, v in inputs.items()}, str(root / "inputs.safetensors"))
        results = []
        start = 0
        while start < len(
            jobs
        ):  # a job that kills the child costs only itself: the next child starts after it
            request["start"] = start
            (root / "request.json").write_text(json.dumps(request))
            returncode, log = _run_child(root, time_limit + 2.0)
            done = [_read_job(root, n, returncode, log) for n in range(start, len(jobs))]
            finished = next((i for i, (result, _) in enumerate(done) if result.get("lost")), len(done))
            results += done[: finished + 1]
            start += finished + 1
        return results


def _run_child(root: Path, job_s: float) -> tuple[int | None, str]:
    """(exit code, or None if it was killed for time; the tail of what it printed)."""
    env = dict(os.environ)
    package_parent = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent, env.get("PYTHONPATH")]))
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    (root / READY).unlink(missing_ok=True)
    with open(root / "child.log", "wb") as log:
        child = subprocess.Popen(
            [sys.executable, "-m", "bertviz_lite.check.worker", str(root)],
            cwd=root,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        returncode = _wait(child, root, time.monotonic(), job_s)
    text = (root / "child.log").read_bytes()[-2000:].decode("utf-8", "replace")
    return returncode, text


def _wait(child: subprocess.Popen, root: Path, started: float, job_s: float) -> int | None:
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
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
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
