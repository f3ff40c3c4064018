"""Shared fixtures: real weights are loaded once per test session; the shared database is a temporary file, and
the tests of the shared store run on both kinds (a SQLite file, and a PostgreSQL server started once a session)."""

import atexit
import functools
import gc
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

# Some machines set PYTHONDONTWRITEBYTECODE; the suite starts about a hundred Python processes (xdist workers, servers,
# training runs, checker children), each of which would then compile the project's modules from source again.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# The two workers (pyproject's -n 2) share the two cores with the servers, chromium and runs the tests start, so each
# process computes on one thread, as the app's servers do by default (server/settings.py). With torch's default of a
# thread per core, OpenMP's threads in two busy processes wait for one another by spinning: tests/model, inspection
# and figures took 49-63 CPU-s that way on a busy machine, against 15-17 on one thread. Processes the tests start
# inherit it; a test that wants more threads asks for them (--threads, BERTVIZ_LITE_THREADS).
os.environ["OMP_NUM_THREADS"] = "1"
if "torch" in sys.modules:  # imported before this file (a plugin): the variable came too late for it
    sys.modules["torch"].set_num_threads(1)

# The state every app process shares (server/database.py) goes to a folder of this test session, never to the
# repository's data/; servers the tests start inherit it.
os.environ["BERTVIZ_LITE_DATA_DIR"] = tempfile.mkdtemp(prefix="bertviz-lite-test-data-")
atexit.register(shutil.rmtree, os.environ["BERTVIZ_LITE_DATA_DIR"], ignore_errors=True)


@pytest.fixture(scope="session")
def minilm():
    """(model, tokenizer) of the real all-MiniLM-L6-v2 weights, through bertviz_lite.load."""
    from bertviz_lite.loading.pretrained import load

    return load("all-MiniLM-L6-v2")


STORES = ("sqlite", "postgresql")  # server/database.py's two backends


@pytest.fixture(scope="session")
def postgresql_server():
    """The URL of one PostgreSQL server for the session (Debian's postgresql, devtools/postgresql.py), stopped after."""
    from devtools.postgresql import running_postgresql

    with running_postgresql(durable=False) as url:
        yield url


@pytest.fixture(params=STORES)
def store(request, tmp_path):
    """A fresh, empty shared store of each kind: a SQLite file, or a schema of the session's PostgreSQL server."""
    from bertviz_lite.server import database

    if request.param == "sqlite":
        yield tmp_path / database.DATABASE_FILE
    else:
        from devtools.postgresql import fresh_schema

        yield fresh_schema(request.getfixturevalue("postgresql_server"))
    database.close_all()


@pytest.fixture
def store_setting(store, monkeypatch):
    """`store` as every app process finds it without being told (a process the test starts too): the setting
    BERTVIZ_LITE_DATABASE_URL, or BERTVIZ_LITE_DATA_DIR for the SQLite file."""
    from bertviz_lite.server import database

    if isinstance(store, Path):
        monkeypatch.setenv(database.DATA_DIR_SETTING, str(store.parent))
        monkeypatch.delenv(database.DATABASE_URL_SETTING, raising=False)
    else:
        monkeypatch.setenv(database.DATABASE_URL_SETTING, store)
    return store


@pytest.fixture(autouse=True)
def _main_module_back():
    """Streamlit's script runner (AppTest) makes each script it runs `__main__` and leaves it there: a process that
    multiprocessing starts later in the session (tests/server/app_processes.py) would run app.py again first."""
    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main


@pytest.fixture(autouse=True)
def _no_admin_lockout_between_tests():
    """The admin token's rate limit counts in the shared database: each test starts with none counted."""
    from bertviz_lite.server import access

    access.forget_admin_failures()
    yield


# pytest runs on two workers (pyproject: -n 2 --dist loadgroup). The browser tests are three groups, each run on one
# worker, one test after another, against that worker's own `streamlit run app.py` (a session fixture): the tests
# that start, stop or list runs in the real checkpoints/ (its one training slot) stay together in "browser-runs";
# the others only read checkpoints/ and are split in two, so that the two workers share the browser tests, which
# are half of the suite's CPU time (chromium's, mostly). The other tests that use the app (AppTest, run folders in a
# temporary checkpoints root, lifecycle) run one after another as a group of their own; the package's other tests
# are spread over both workers, but tests/bench/ runs as one group (its scripts fork from one preloaded interpreter,
# which each worker would otherwise start: 5 CPU-s of imports), as do the training tests that fork the CLI's runs
# from tests/training/conftest.py's preloaded_python (2 CPU-s of imports) and tests/check/ module by module (each module's
# fixture checks its files in one child process, which a module split over two workers would start twice). The tests
# on a PostgreSQL store run on one worker, so that the session starts one server.
BROWSER_GROUPS = {
    "browser-runs": ("admin", "machines", "serve", "training"),
    "browser-slides": ("presentation", "code_panel", "why_this_word", "meaning", "fragments"),
}
SHARES_THE_APP = ("CHECKPOINTS_DIR", "checkpoints_root", "lifecycle", "streamlit")


@functools.cache
def _group(module: Path) -> str | None:
    tests = Path(__file__).parent
    if module.parent == tests / "browser":
        topic = module.stem.removeprefix("test_").removesuffix("_browser")
        return next((group for group, topics in BROWSER_GROUPS.items() if topic in topics), "browser")
    if (
        module.parent == tests / "check"
    ):  # the checker's tests: a module's tests share the child process of its fixture
        return f"check-{module.stem}"
    if (
        module.parent == tests / "bench"
    ):  # one worker forks every script from one preloaded interpreter (its fixture)
        return "bench"
    text = module.read_text(encoding="utf-8")
    if module.parent == tests / "app" or any(word in text for word in SHARES_THE_APP):
        return "app"
    if "preloaded_python" in text:  # its CLI runs fork from one preloaded interpreter (a session fixture)
        return "preloaded"
    return None  # tests/model/, tests/text/, …: spread over both workers


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups into the test ids
def pytest_collection_modifyitems(config, items):
    for item in items:
        on_postgresql = getattr(item, "callspec", None) and item.callspec.params.get("store") == "postgresql"
        group = "postgresql" if on_postgresql else _group(Path(item.fspath))
        if group:
            item.add_marker(pytest.mark.xdist_group(group))


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    """What is alive after collection (torch, streamlit, the modules, the test items) stays alive all session: frozen,
    the garbage collector stops walking it again in every full collection (5.1 of tests/app's 44 CPU-s went to
    collections)."""
    gc.collect()
    gc.freeze()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    """pytest's unraisableexception plugin collects five times after the session, to run every finalizer that might
    complain; each pass walks the whole heap (models, traces, AppTest trees: 0.2-1 CPU-s a pass). Collect until
    nothing more is freed, so that every such finalizer runs here, then freeze what is left: its passes find the same
    nothing, without walking it."""
    for _ in range(5):
        if not gc.collect():
            break
    gc.freeze()
