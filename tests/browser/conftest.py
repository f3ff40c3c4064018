"""One `streamlit run app.py` per test session on a free port, and Debian's chromium driven by Playwright."""

from __future__ import annotations

import collections
import contextlib
import itertools
import json
import os
import shutil
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from bertviz_lite.loading.run_folder import CHECKPOINTS_DIR
from bertviz_lite.runs import lifecycle
from devtools.server import CHROMIUM, CHROMIUM_ARGS, browser_for_tests, running_streamlit
from devtools.waiting import wait_until
from tests.browser.driver import new_page

# An expectation waits on the page's state; the suite runs on two pytest workers, so a rerun may take longer
# than Playwright's default 5 s while the other worker is busy.
expect.set_options(timeout=20_000)


def _log(name: str) -> str:
    """A server's log file name, with this worker's name in it."""
    return f"{name}-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.log"


@pytest.fixture(scope="session")
def streamlit_url(request):
    """Base URL of one streamlit server shared by this worker's browser tests (its log names the worker)."""
    with running_streamlit(
        _log("streamlit"),
        lambda: request.getfixturevalue("browser"),
    ) as url:  # chromium starts
        yield url  # while the server does


class _SecondServer:
    """A second `streamlit run app.py` of this worker's, sharing the first one's database file (as two processes
    behind a balancer). Started on the first ask and kept: a new server costs 4-5 CPU-s by its first page. Until a
    test opens a page on it, it is fresh: no script has run in its process."""

    def __init__(self, url: str):
        self.url = url
        self.fresh = True


@pytest.fixture(scope="session")
def _second_streamlit(request):
    with running_streamlit(
        _log("streamlit_second"),
        lambda: request.getfixturevalue("browser"),
    ) as url:  # chromium starts while the server does
        yield _SecondServer(url)


@pytest.fixture
def second_streamlit_url(_second_streamlit):
    """Base URL of the worker's second server (it shares the first one's database); no longer fresh."""
    _second_streamlit.fresh = False
    return _second_streamlit.url


@pytest.fixture
def fresh_streamlit_url(request):
    """Base URL of a server that no page has been opened on yet: the worker's second server while it is fresh (the
    tests that ask for this one run first: pytest_collection_modifyitems), else one of the test's own."""
    second = request.getfixturevalue("_second_streamlit")
    if second.fresh:
        second.fresh = False
        yield second.url
        return
    with running_streamlit(_log("streamlit_fresh")) as url:
        yield url


def pytest_collection_modifyitems(items):
    """The tests that ask for a fresh server run before the others (a stable sort), so that the second server is
    still fresh for them and is not started twice."""
    items.sort(key=lambda item: "fresh_streamlit_url" not in getattr(item, "fixturenames", ()))


@pytest.fixture(scope="session")
def browser():
    if not Path(browser_for_tests()).exists():
        pytest.skip(
            f"Debian's chromium is not installed at {CHROMIUM} (apt-get install chromium chromium-headless-shell)"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=browser_for_tests(), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


VIEWPORT = {"width": 1400, "height": 1000}


class Visitors:
    """Browser contexts lent to a test, each a visitor of its own (its cookies and storage), and kept for the next
    test: a new context or tab costs chromium a renderer process and the app's scripts compiled again (1-2 CPU-s
    on this machine, as much as a page load), so after a test each context's cookies and storage are cleared, its
    other tabs closed and its tab sent to about:blank. The next `goto` opens a new document and a new streamlit
    session, as a new visitor's would."""

    def __init__(self, browser):
        self.browser = browser
        self.free: dict[str, list] = collections.defaultdict(list)
        self.lent: list = []
        self.origins: dict = {}  # context: the origins its frames have loaded (what _forget clears)

    def page(self, **options):
        """A new visitor's tab, in a context with these options (viewport, is_mobile, has_touch, …). The viewport is
        the tab's, set as it is lent: contexts that differ only in it are one kind, kept for all sizes."""
        viewport = options.pop("viewport", VIEWPORT)
        key = json.dumps(options, sort_keys=True)
        if self.free[key]:
            context, tab = self.free[key].pop()
            tab.set_viewport_size(viewport)
        else:
            tab = new_page(self.browser, viewport=viewport, **options)
            context = tab.context
            self.origins[context] = _track_origins(context, tab)
        self.lent.append((key, context, tab))
        return tab

    def give_back(self) -> None:
        """Every context lent since the last call, made new again and kept (one whose tab the test closed is closed)."""
        for key, context, tab in self.lent:
            if tab.is_closed():
                with contextlib.suppress(Exception):  # already closed with its tab's context
                    context.close()
                continue
            for other in context.pages:
                if other is not tab:
                    other.close()
            _forget(context, tab, self.origins[context])
            tab.goto("about:blank")
            context.clear_cookies()
            self.free[key].append((context, tab))
        self.lent.clear()


def _track_origins(context, tab) -> set[str]:
    """The origins that the context's frames load from now on, in every tab (a set that grows)."""
    origins: set[str] = set()

    def loaded(frame) -> None:
        parts = urlsplit(frame.url)
        if parts.scheme in ("http", "https"):
            origins.add(f"{parts.scheme}://{parts.netloc}")

    context.on("page", lambda page: page.on("framenavigated", loaded))
    tab.on("framenavigated", loaded)
    return origins


def _forget(context, tab, origins: set[str]) -> None:
    """Clear the storage of every origin the context has loaded, and the tab's session storage. (Playwright's
    `storage_state()` would list them, but it opens a hidden tab and visits each origin not open in a tab: a
    renderer, 0.2-0.5 CPU-s, at each give-back of a context that has seen two servers.)"""
    cdp = context.new_cdp_session(tab)
    try:
        for origin in origins:
            cdp.send(
                "Storage.clearDataForOrigin", {"origin": origin, "storageTypes": "local_storage,indexeddb"}
            )
    finally:
        cdp.detach()
    if tab.url.startswith("http"):
        with contextlib.suppress(Exception):  # a page that crashed has nothing more to forget
            tab.evaluate("() => sessionStorage.clear()")


@pytest.fixture(scope="session")
def _visitors(browser):
    return Visitors(browser)


@pytest.fixture
def visitor(_visitors):
    """`visitor(**context_options)`: a new visitor's tab (its own cookies), at about:blank; as many as the test
    asks for. Lent from contexts kept between tests (Visitors)."""
    yield _visitors.page
    _visitors.give_back()


@pytest.fixture
def page(request, visitor, browser):
    """A new visitor's tab at the default size. A test that adds listeners or routes to its page (`page.on`,
    `page.route`) is marked `own_tab`: it gets a context of its own, closed after it, so that they end with it."""
    if request.node.get_closest_marker("own_tab"):
        own = new_page(browser, viewport=VIEWPORT)
        yield own
        own.context.close()
        return
    yield visitor(viewport=VIEWPORT)


@pytest.fixture(scope="session")
def slide_walk(streamlit_url, _visitors):
    """The walkthrough walked once in presentation mode (test_presentation.walk_the_slides), for each test that reads
    what its steps showed: the figures at three screen sizes, the code panel's toggle, step 4's panel opened."""
    from tests.browser.test_presentation import walk_the_slides  # imported by the tests that ask for it

    return _walk_once(walk_the_slides, streamlit_url, _visitors)


@pytest.fixture(scope="session")
def normal_walk(streamlit_url, _visitors):
    """The explore views walked once in normal mode at three screen sizes (test_presentation.walk_normal_views), for
    the test of their figure texts and the code panel's expander off a slide."""
    from tests.browser.test_presentation import walk_normal_views  # imported by the tests that ask for it

    return _walk_once(walk_normal_views, streamlit_url, _visitors)


def _walk_once(walk, streamlit_url: str, visitors: Visitors):
    """What `walk(tab, url)` saw, in a tab lent at the default size and given back after."""
    try:
        return walk(visitors.page(viewport=VIEWPORT), streamlit_url)
    finally:
        visitors.give_back()


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
