"""Issue 22: Markdown from a link renders as text on the pages (no link, no remote image)."""

from __future__ import annotations

import re

from streamlit.testing.v1 import AppTest

from bertviz_lite.loading.run_folder import write_status
from tests.app.conftest import APP, PAGES
from tests.app.tiny_checkpoint import save_tiny
from tests.app.training_helpers import open_app, use_checkpoints_folder

LINK = "[Log in again](https://evil.example/login) ![x](http://127.0.0.1:8799/x.png)"
UNESCAPED = re.compile(r"(?<!\\)([\[\]<>]|:(?=\S))")


def test_a_run_link_with_markdown_is_quoted_as_text(monkeypatch, tmp_path):
    root = use_checkpoints_folder(monkeypatch, tmp_path / "checkpoints")
    save_tiny(root / "mine")
    write_status(root / "mine", state="finished", message="done", step=2, total_steps=2, checkpoint_step=2)
    at = open_app("pages/train/5_Train.py", query={"run": LINK})
    assert not at.exception
    warning = next(w.value for w in at.warning if "no run named" in w.value)
    quoted = warning.split("“", 1)[1].split("”", 1)[0]
    assert not UNESCAPED.search(quoted) and re.sub(r"\\(.)", r"\1", quoted) == LINK


def test_a_layer_link_with_markdown_is_quoted_as_text(tiny_folder):
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["layer"] = "[x](//evil.example)"
    at.switch_page(PAGES["attention"]).run()
    assert not at.exception
    notes = [w.value for w in at.warning if "layer" in w.value]
    assert notes and all("[x](" not in note and "\\[x\\](" in note for note in notes)
