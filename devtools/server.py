"""A `streamlit run app.py` on a free port, and Debian's chromium (or its headless shell, for the tests) to open it.

Used by tests/browser/ and by the benchmarks that drive the app (bench/page_latency.py, bench/live_class_load.py,
bench/live_class.py, bench/browser_memory.py, bench/rerun_profile.py).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

from bertviz_lite.server.balancer import worker_command
from devtools.waiting import wait_until

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / "tests" / "artifacts"
# Debian's chromium: what a person opens the app in, and what the benchmarks time.
CHROMIUM = "/usr/bin/chromium"
# Debian's chromium-headless-shell: the same Chromium build (version, Blink, V8) without the full browser's processes
# around headless mode, which is what Playwright drives headless tests in by default. The browser tests' renderers cost
# the same in both (172.5 CPU-s); the shell's browser, zygote and GPU processes took 35 CPU-s less (311 against 347).
HEADLESS_SHELL = "/usr/lib/chromium/chromium-headless-shell"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def browser_for_tests() -> str:
    """The browser the tests drive: Debian's headless shell where it is installed (`.ci/run` installs it), else
    Debian's chromium."""
    return HEADLESS_SHELL if Path(HEADLESS_SHELL).exists() else CHROMIUM


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve_command(workers: int, port: int, run_dir: Path, *options: str) -> list[str]:
    """`python -m bertviz_lite.serve` with `workers` behind haproxy on `port`, its files in `run_dir`, and `options`
    (--tls-cert …, --trust-forwarded-from …), as an operator types it."""
    return [
        sys.executable,
        "-m",
        "bertviz_lite.serve",
        "--workers",
        str(workers),
        "--port",
        str(port),
        "--run-dir",
        str(run_dir),
        *options,
    ]


def start_streamlit(port: int, log_path: Path) -> subprocess.Popen:
    """`streamlit run app.py` headless on 127.0.0.1:port, logging to log_path."""
    command = worker_command(port)  # the command `serve` gives its workers: everything else from config.toml
    log = open(log_path, "w")  # noqa: SIM115 - closed with the process
    env = {
        "BERTVIZ_LITE_DATA_DIR": str(ARTIFACTS / "data"),
        **os.environ,
    }  # the live class's database: not data/
    return subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env=env)


def wait_until_healthy(url: str, process: subprocess.Popen, timeout: float = 60.0) -> None:
    """Poll streamlit's health endpoint until it answers "ok" (or the server dies)."""

    def healthy() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"streamlit exited with code {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                return response.read().strip() == b"ok"
        except OSError:
            return False

    wait_until(healthy, timeout, f"streamlit to answer on {url}", every=0.25)


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def open_front_page(browser, url: str) -> None:
    """Open the app at its root once and wait for its sidebar: a warm-up (imports, the default model) before timing."""
    context = browser.new_context()
    try:
        front = context.new_page()
        front.goto(url)
        front.get_by_label("Sentence A").wait_for(timeout=60_000)
    finally:
        context.close()


@contextlib.contextmanager
def running_streamlit(log_name: str, while_starting: Callable[[], object] | None = None) -> Iterator[str]:
    """A fresh `streamlit run app.py` (its log in ARTIFACTS/log_name) until the block ends; yields its base URL.

    while_starting: work to do while the server starts (another server, chromium), before waiting for it.
    """
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    port = free_port()
    process = start_streamlit(port, ARTIFACTS / log_name)
    url = f"http://127.0.0.1:{port}"
    try:
        if while_starting is not None:
            while_starting()
        wait_until_healthy(url, process)
        yield url
    finally:
        stop(process)


def listening_pid(port: int) -> int:
    """The process id of the server listening on 127.0.0.1:port (read from /proc: its socket's inode)."""
    inode = next(
        fields[9]
        for fields in (line.split() for line in Path("/proc/net/tcp").read_text().splitlines()[1:])
        if fields[1].endswith(f":{port:04X}") and fields[3] == "0A"  # 0A: LISTEN
    )
    for fd in Path("/proc").glob("[0-9]*/fd/*"):
        with contextlib.suppress(OSError):
            if os.readlink(fd) == f"socket:[{inode}]":
                return int(fd.parts[2])
    raise LookupError(f"no process of ours listens on port {port}")
