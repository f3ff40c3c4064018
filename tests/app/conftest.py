"""AppTest helpers: run app.py on a model, read figures back from the plotly JSON the app sends."""

from __future__ import annotations

import base64
import functools
import html
import json
import os
import re
import time
from pathlib import Path

import numpy as np
import pytest
from streamlit.components.v2 import manifest_scanner
from streamlit.runtime.scriptrunner.script_cache import ScriptCache
from streamlit.testing.v1 import AppTest, app_test, local_script_runner

from bertviz_lite.loading.pretrained import DEMO, MINILM, load
from bertviz_lite.loading.run_folder import CHECKPOINTS_DIR
from bertviz_lite.server import access
from pages_app.common._pages import EXPLORE, pages_in
from pages_app.common._sidebar import OTHER_FOLDER
from tests.app.tiny_checkpoint import save_tiny

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def explore_pages() -> dict[str, str]:
    """The explore pages' scripts by name (tokens, attention, walkthrough…), as _pages.PAGES declares them."""
    return {page.name: page.script for page in pages_in(EXPLORE)}


PAGES = explore_pages()
PAIR = ("The cat sat on the mat because it was tired.", "It fell asleep in the warm sun.")
HAS_DEMO = (CHECKPOINTS_DIR / DEMO / "config.json").is_file()
_CHIP = re.compile(
    r'<span class="bvl-chip ([^"]*)" title="[^"]*">(.*?)<span class="bvl-meta">(\d+) · (\d+)</span>'
)


@pytest.fixture(scope="session", autouse=True)
def _streamlit_scans_and_compiles_once():
    """What a Streamlit server does once, AppTest does on every app or run: scan every installed package's metadata for
    components (0.14 s of CPU per new app; these tests make about 230) and compile app.py and the page with its magic
    (10 ms per run; about 680 runs). Neither the packages nor the scripts change during a session: once each. And each
    run's wait joins the script's thread instead of polling it (_wait_for_the_script)."""
    scripts = ScriptCache()  # keyed by the script's path; a test's own page has a path of its own
    with pytest.MonkeyPatch.context() as patch:
        scan_once = functools.cache(manifest_scanner.scan_component_manifests)
        patch.setattr(manifest_scanner, "scan_component_manifests", scan_once)
        patch.setattr(app_test, "ScriptCache", lambda: scripts)
        patch.setattr(local_script_runner, "ScriptCache", lambda: scripts)
        patch.setattr(local_script_runner, "require_widgets_deltas", _wait_for_the_script)
        yield


_POLL_FOR_THE_SCRIPT = local_script_runner.require_widgets_deltas


def _wait_for_the_script(runner: local_script_runner.LocalScriptRunner, timeout: float = 3) -> None:
    """AppTest's wait for a run, without its poll: it woke every millisecond to look for the script's end, taking the
    GIL from the script it waits for. The script thread sends its SHUTDOWN before it returns, so joining it waits for
    the same moment; if it returned without one, AppTest's own wait decides (and raises at the timeout)."""
    started = time.monotonic()
    thread = runner._script_thread
    if thread is not None:
        thread.join(timeout)
    if thread is None or not runner.script_stopped():
        _POLL_FOR_THE_SCRIPT(runner, max(timeout - (time.monotonic() - started), 0))


@pytest.fixture(autouse=True)
def _model_folders_from_tmp(monkeypatch, tmp_path_factory):
    """Let "load a folder by path" read the tests' temporary folders besides checkpoints/ (the default roots)."""
    roots = [str(CHECKPOINTS_DIR), str(tmp_path_factory.getbasetemp())]
    monkeypatch.setenv(access.MODEL_ROOTS_SETTING, os.pathsep.join(roots))


@pytest.fixture(scope="session")
def tiny_folder(tmp_path_factory) -> str:
    """A tiny random BERT with MLM/NSP heads and 64 positions, as a Hugging Face folder."""
    return str(save_tiny(tmp_path_factory.mktemp("tiny") / "tiny-bert"))


@pytest.fixture(scope="session", params=["minilm", "demo"])
def source(request, tiny_folder) -> dict:
    """Sidebar state that picks MiniLM, or demo-tiny (the tiny folder until checkpoints/demo-tiny exists)."""
    if request.param == "minilm":
        return {"model_picker": MINILM}
    if HAS_DEMO:
        return {"model_picker": DEMO}
    return {"model_picker": OTHER_FOLDER, "model_path": tiny_folder}


def source_path(state: dict) -> str:
    return state.get("model_path") or state["model_picker"]


@pytest.fixture(scope="session")
def loaded():
    """(model, tokenizer) per source string, loaded once per session."""
    models: dict[str, tuple] = {}

    def get(state: dict):
        key = source_path(state)
        if key not in models:
            models[key] = load(key)
        return models[key]

    return get


def run_app(state: dict, page: str = "tokens", **extra) -> AppTest:
    """app.py with this sidebar state (and extra session state), on one page, after its run."""
    at = AppTest.from_file(APP, default_timeout=120)
    for key, value in {"sentence_a": PAIR[0], "sentence_b": PAIR[1], **state, **extra}.items():
        at.session_state[key] = value
    at.switch_page(PAGES[page])  # the explore pages have file-name URLs, so this works before the first run
    at.run()
    return at


def charts(at: AppTest) -> dict[str, dict]:
    """Every plotly chart on the page as a figure dict, by the key the page gave it."""
    return {el.proto.id.split("-", 2)[2]: json.loads(el.proto.spec) for el in at.get("plotly_chart")}


def array(value) -> np.ndarray:
    """A plotly JSON array: a list, or a typed array {"dtype", "bdata", "shape"} as plotly.py sends numpy."""
    if isinstance(value, dict) and "bdata" in value:
        flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = [int(n) for n in str(value.get("shape", flat.size)).split(",")]
        return flat.reshape(shape)
    return np.asarray(value)


def chips(markup: str) -> list[tuple[str, int, int, str]]:
    """(token, position, segment, css classes) of each chip in token_chip_html output (legend excluded)."""
    body = markup.split('<div class="bvl-legend">')[0]
    return [(html.unescape(t), int(p), int(s), css) for css, t, p, s in _CHIP.findall(body)]


def texts(at: AppTest) -> str:
    """All error, warning and info text on the page."""
    return " | ".join(el.value for kind in ("error", "warning", "info") for el in getattr(at, kind))


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
