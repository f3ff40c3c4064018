"""Shared by the AppTests of the training pages: a private checkpoints folder, fast run options, chart data."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import plotly.io
from streamlit.testing.v1 import AppTest

from bertviz_lite.loading import run_folder
from bertviz_lite.runs import lifecycle
from devtools.waiting import wait_until

APP = str(Path(__file__).resolve().parents[2] / "app.py")
# Two classroom visitors (ids as the app hands them out).
VISITOR_A = "visitor-a-0123456789abcdef"
VISITOR_B = "visitor-b-0123456789abcdef"
# Small enough that a 30-step run starts and ends in seconds on 2 cores.
FAST = {
    "num_documents": 200,
    "vocab_size": 200,
    "seq_len": 32,
    "batch_size": 8,
    "eval_pairs": 32,
    "log_every": 2,
    "eval_every": 10,
    "snapshot_every": 10,
    "threads": 1,
}


def use_checkpoints_folder(monkeypatch, root: Path) -> Path:
    """Point the app (runs, model picker, loader) at `root` instead of the repository's checkpoints/."""
    root.mkdir(parents=True, exist_ok=True)
    monkeypatch.setattr(run_folder, "CHECKPOINTS_DIR", root)
    return root


@contextmanager
def checkpoints_folder_for_runs(monkeypatch, root: Path) -> Iterator[Path]:
    """`use_checkpoints_folder` for tests that start runs: at the end, every run still active there is stopped."""
    try:
        yield use_checkpoints_folder(monkeypatch, root)
    finally:
        for run in lifecycle.active_runs(root):  # never leave a training process behind
            lifecycle.stop_run(run.path)


def open_app(page: str, query: dict | None = None, timeout: float = 30, visitor: str = VISITOR_A) -> AppTest:
    """An AppTest on one page of the app: a new browser session of `visitor` (its id, as its cookie would give)."""
    at = AppTest.from_file(APP, default_timeout=timeout)
    at.session_state["visitor_id"] = visitor
    at.query_params.update(query or {})
    at.run()
    return at.switch_page(page).run()


def open_replay(at: AppTest) -> AppTest:
    """Open the Train page's attention replay (drawn only when a visitor opens it), as its toggle does."""
    return at.toggle(key="replay_open").set_value(True).run()


def fill_form(at: AppTest, **options) -> AppTest:
    """Type options into the Train form (keys opt_<name>) and rerun."""
    for name, value in {**FAST, **options}.items():
        at.number_input(key=f"opt_{name}").set_value(value)
    return at.run()


def chart(at: AppTest, key: str) -> go.Figure:
    """The plotly figure of the chart with this key, as the app sent it."""
    for element in at.get("plotly_chart"):
        if element.proto.id.endswith(f"-{key}"):
            return plotly.io.from_json(element.proto.spec)
    raise KeyError(f"no plotly chart with key {key!r}")


def array(value) -> np.ndarray:
    """A figure's data array; plotly sends numeric arrays as {"dtype", "bdata" (base64), "shape"}."""
    if isinstance(value, dict) and "bdata" in value:
        flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = [int(n) for n in str(value.get("shape", len(flat))).split(",")]
        return flat.reshape(shape)
    return np.asarray(value)


def traces(at: AppTest, key: str) -> dict[str, tuple[list, list]]:
    """{trace name: (x, y)} of a line chart."""
    return {trace.name: (array(trace.x).tolist(), array(trace.y).tolist()) for trace in chart(at, key).data}


def state_shown(at: AppTest) -> str | None:
    """The state badge of the watched run (":blue-badge[running]" -> "running")."""
    for markdown in at.markdown:
        if "-badge[" in markdown.value:
            return markdown.value.rsplit("[", 1)[1].rstrip("]")
    return None


def rerun_when_ended(at: AppTest, run_dir: Path, timeout: float = 60.0) -> AppTest:
    """Wait until the run has ended, as its folder says (read cheaply and often, not by rerunning the page), then rerun
    the page once, as the live view's next tick would."""
    wait_until(lambda: not lifecycle.run_state(run_dir).active, timeout, f"the run {run_dir.name} to end")
    return at.run()
