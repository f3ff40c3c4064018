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


VIEWPORT = {"width": 1400, "height": 1000}
# Leaves a tab as a new one would be for the app: nothing kept in its origin's storage.
_FORGET = "() => { localStorage.clear(); sessionStorage.clear(); }"


@pytest.fixture(scope="session")
def visitors_browser(browser):
    """One browser context for the session's `page`s: its HTTP cache keeps the app's scripts (Streamlit's and
    plotly's, several MB) compiled between tests, which halves chromium's work per page load."""
    context = browser.new_context(viewport=VIEWPORT)
    context.add_init_script(RUN_TRACKER)
    yield context
    context.close()


@pytest.fixture(scope="session")
def _visitor_tab(visitors_browser):
    """The tab `page` hands to one test after another: a new tab costs chromium a new renderer process (about
    1 CPU-s on this machine, as much as the page load itself)."""
    return {"page": None}


@pytest.fixture
def page(request, visitors_browser, _visitor_tab):
    """A new visitor: its cookies and the app's storage cleared, the tab at about:blank and at the default size; its
    first `goto` opens a new document and a new streamlit session. A test that adds listeners or routes to its
    page (`page.on`, `page.route`) is marked `own_tab`: it gets a tab of its own, so that they end with it."""
    visitors_browser.clear_cookies()
    if request.node.get_closest_marker("own_tab"):
        own = visitors_browser.new_page()
        yield own
        own.close()
        return
    tab = _visitor_tab["page"]
    if tab is None or tab.is_closed():
        tab = _visitor_tab["page"] = visitors_browser.new_page()
    tab.set_viewport_size(VIEWPORT)
    yield tab
    if not tab.is_closed():
        if tab.url.startswith("http"):
            with contextlib.suppress(Exception):  # a page that crashed or never loaded has nothing to forget
                tab.evaluate(_FORGET)
        tab.goto("about:blank")


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
