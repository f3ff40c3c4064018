"""One `streamlit run app.py` per test session on a free port, and Debian's chromium driven by Playwright."""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import expect

from bertviz_lite.loading.run_folder import CHECKPOINTS_DIR
from bertviz_lite.runs import lifecycle
from devtools.server import CHROMIUM, CHROMIUM_ARGS, running_streamlit
from devtools.waiting import wait_until
from tests.browser.driver import RUN_TRACKER

# An expectation waits on the page's state; the suite runs on two pytest workers, so a rerun may take longer
# than Playwright's default 5 s while the other worker is busy.
expect.set_options(timeout=20_000)


@pytest.fixture(scope="session")
def streamlit_url(request):
    """Base URL of one streamlit server shared by this worker's browser tests (its log names the worker)."""
    with running_streamlit(
        f"streamlit-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.log",
        lambda: request.getfixturevalue("browser"),
    ) as url:  # chromium starts
        yield url  # while the server does


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
        pytest.skip(f"Debian's chromium is not installed at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def visitors_browser(browser):
    """One browser context for the session's `page`s: its HTTP cache keeps the app's scripts (Streamlit's and
    plotly's, several MB) compiled between tests, which halves chromium's work per page load. Each test still
    comes as a new visitor (its cookies cleared) in a new tab (a new streamlit session)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_init_script(RUN_TRACKER)
    yield context
    context.close()


@pytest.fixture
def page(visitors_browser):
    visitors_browser.clear_cookies()
    page = visitors_browser.new_page()
    yield page
    page.close()


_RUN_NUMBERS = itertools.count()


@pytest.fixture
def run_name():
    """A run name of this test's own (a run of an earlier test may still be stopping); stopped and removed after."""
    name = f"browser-test-{os.getpid()}-{next(_RUN_NUMBERS)}"
    yield name
    folder = CHECKPOINTS_DIR / name
    if folder.exists():
        lifecycle.stop_run(folder)
        with contextlib.suppress(TimeoutError):  # removed all the same
            wait_until(lambda: not lifecycle.run_state(folder).active, 30, "the run to stop")
        shutil.rmtree(folder, ignore_errors=True)
