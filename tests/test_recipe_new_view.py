"""Recipe "a new view": a data function in views/<topic>.py and a builder in figures/<topic>.py, each listed in its
module's __all__, and one ViewTab in bertviz_lite.inspection.views.tabs; the Attention page draws the tab with its
figure, a CSV button and the page's link (here: a temporary view, the attention each key receives in one head)."""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from bertviz_lite import figures
from bertviz_lite.inspection import views
from bertviz_lite.inspection.views import public_names, tabs
from bertviz_lite.inspection.views.tabs import ViewTab
from bertviz_lite.server import access
from tests.app.conftest import array, charts, no_exception, run_app
from tests.app.tiny_checkpoint import save_tiny


@dataclass(frozen=True)
class KeyShares:
    """How much attention each key receives from all queries in one head, on average."""

    tokens: list[str]
    shares: np.ndarray  # [T]

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({"token": self.tokens, "share": self.shares})


def key_shares(attentions, tokens, layer: int, head: int) -> KeyShares:
    return KeyShares(list(tokens), attentions[layer, head].mean(axis=0))


def key_shares_figure(data: KeyShares) -> go.Figure:
    return go.Figure(go.Bar(x=data.tokens, y=data.shares))


TAB = ViewTab("Key shares", data=key_shares, figure="key_shares_figure")


@pytest.fixture
def declared(monkeypatch):
    """The two functions as views/ and figures/ offer a module's __all__, and the tab in its one place."""
    monkeypatch.setattr(views, "key_shares", key_shares, raising=False)
    monkeypatch.setattr(figures, "key_shares_figure", key_shares_figure, raising=False)
    monkeypatch.setattr(tabs, "ATTENTION_TABS", (*tabs.ATTENTION_TABS, TAB))


@pytest.fixture
def tiny_state(monkeypatch, tmp_path) -> dict:
    monkeypatch.setenv(access.MODEL_ROOTS_SETTING, str(tmp_path))
    return {"model_picker": "Another folder…", "model_path": str(save_tiny(tmp_path / "tiny"))}


def test_a_new_module_in_views_is_offered_without_an_edit_in_its_init(monkeypatch, tmp_path):
    package = tmp_path / "views_like"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "shares.py").write_text("__all__ = ['key_shares']\n\ndef key_shares():\n    return 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert public_names("views_like", [str(package)])["key_shares"]() == 1
    finally:
        for name in ("views_like.shares", "views_like"):
            sys.modules.pop(name, None)


def test_the_declared_view_arrives_as_a_tab_with_its_figure_csv_and_link(declared, tiny_state):
    at = run_app(tiny_state, "attention", attn_view="Key shares", attn_layer=1, attn_head=2)
    no_exception(at)
    assert [tab.label for tab in at.tabs][-1] == "Key shares"
    bars = charts(at)["key_shares"]["data"][0]
    assert len(array(bars["y"])) == len(bars["x"]) > 2
    np.testing.assert_allclose(array(bars["y"]).sum(), 1.0, atol=1e-5)  # rows of one head sum to 1
    assert "key_shares_csv" in [button.proto.id.split("-", 2)[-1] for button in at.get("download_button")]
    link = at.sidebar.code[0].value
    assert "/Attention?" in link and "layer=1" in link and "head=2" in link


def test_without_the_declaration_there_is_no_such_tab(tiny_state):
    at = run_app(tiny_state, "attention")
    assert "Key shares" not in [tab.label for tab in at.tabs] and "key_shares" not in charts(at)
