"""A `streamlit run app.py` on a free port and the few browser actions the page benchmarks need.

The one home of these helpers: tests/browser (conftest.py, driver.py) import them from here, so bench/ never imports the tests.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "tests" / "artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_streamlit(port: int, log_path: Path) -> subprocess.Popen:
    """`streamlit run app.py` headless on 127.0.0.1:port, logging to log_path."""
    command = [
        sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
        "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
        "--server.fileWatcherType", "none",
    ]  # fmt: skip
    log = open(log_path, "w")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env={**os.environ})


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


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def open_front_page(browser, url: str) -> None:
    """Open the app at its root once: a fresh server's first deep link (say /Attention) shows a
    "Page not found" dialog that leaves the page inert; once app.py has run st.navigation it never does."""
    context = browser.new_context()
    try:
        front = context.new_page()
        front.goto(url)
        front.get_by_label("Sentence A").wait_for(timeout=60_000)
    finally:
        context.close()


def type_into(page, key: str, text: str) -> None:
    """Replace the text of the sidebar text input with this key and submit it (Enter)."""
    box = page.locator(f".st-key-{key} input")
    box.fill(text)
    box.press("Enter")


def wait_for_idle(page, timeout_ms: float = 60_000) -> None:
    """Wait until the script run that the last action started has finished."""
    page.wait_for_timeout(150)
    page.locator(IDLE).wait_for(state="attached", timeout=timeout_ms)


def open_page(page, base_url: str, url_path: str = "") -> None:
    """Load a page in a new session and wait for its first run to draw something in the main area."""
    page.goto(f"{base_url}/{url_path}")
    page.locator('[data-testid="stMain"] [data-testid="stHeading"], [data-testid="stMain"] [data-testid="stAlert"]')\
        .first.wait_for(timeout=60_000)
    wait_for_idle(page)


def open_tab(page, label: str) -> None:
    page.get_by_role("tab", name=label).click()
    wait_for_idle(page)
