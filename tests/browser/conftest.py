"""One `streamlit run app.py` per test session on a free port, and Debian's chromium driven by Playwright."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "tests" / "artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_healthy(url: str, process: subprocess.Popen, timeout: float = 60.0) -> None:
    """Poll streamlit's health endpoint until it answers "ok" (or the server dies)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"streamlit exited with code {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.read().strip() == b"ok":
                    return
        except OSError:
            pass
        time.sleep(0.25)
    raise TimeoutError(f"streamlit did not answer on {url} within {timeout:.0f} s")


def start_streamlit(port: int, log_path: Path) -> subprocess.Popen:
    """`streamlit run app.py` headless on 127.0.0.1:port, logging to log_path."""
    command = [
        sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
        "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
        "--server.fileWatcherType", "none",
    ]  # fmt: skip
    log = open(log_path, "w")  # noqa: SIM115 - closed with the process below
    return subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env={**os.environ})


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def open_front_page(browser, url: str) -> None:
    """Open the app at its root once, as `streamlit run` does in a browser.

    A fresh server whose first visit is a deep link (say /Attention) runs that visit through
    Streamlit's old pages/-folder mode: the page still renders, behind a one-off "Page not found"
    dialog. Once app.py has run st.navigation, the server never does that again.
    """
    context = browser.new_context()
    try:
        front = context.new_page()
        front.goto(url)
        front.get_by_label("Sentence A").wait_for(timeout=60_000)
    finally:
        context.close()


@pytest.fixture(scope="session")
def streamlit_url(browser):
    """Base URL of one streamlit server shared by the session's browser tests."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    port = free_port()
    process = start_streamlit(port, ARTIFACTS / "streamlit.log")
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(url, process)
        open_front_page(browser, url)
        yield url
    finally:
        stop(process)


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
        pytest.skip(f"Debian's chromium is not installed at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    yield page
    context.close()
