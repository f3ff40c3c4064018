"""Recipe "a new view": a data function in views/<topic>.py and a builder in figures/<topic>.py, each listed in its
module's __all__ and imported by name in its room's __init__, and one ViewTab holding both in
bertviz_lite.figures.tabs; the Attention page draws the tab with its figure, a CSV button and the page's link
(here: a temporary view, the attention each key receives in one head)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from bertviz_lite import figures
from bertviz_lite.figures import tabs
from bertviz_lite.figures.tabs import ViewTab
from bertviz_lite.inspection import views
from bertviz_lite.inspection.explore import PairTrace
from bertviz_lite.model.modeling import BertSelfAttention
from bertviz_lite.server import access
from pages_app.common._share import LINK_BOX_KEY
from tests.app.conftest import array, charts, no_exception, run_app
from tests.app.tiny_checkpoint import save_tiny

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class KeyShares:
    """How much attention each key receives from all queries in one head, on average."""

    tokens: list[str]
    shares: np.ndarray  # [T]

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({"token": self.tokens, "share": self.shares})


def key_shares(trace: PairTrace, layer: int, head: int) -> KeyShares:
    return KeyShares(list(trace.tokens), trace.attentions[layer, head].mean(axis=0))


def key_shares_figure(data: KeyShares) -> go.Figure:
    return go.Figure(go.Bar(x=data.tokens, y=data.shares))


TAB = ViewTab(
    "Key shares",
    data=key_shares,
    figure=key_shares_figure,
    picks=("layer", "head"),
    code=(BertSelfAttention.forward_with_attention,),  # the model's code behind it ("The code")
)


@pytest.fixture
def declared(monkeypatch):
    """The tab in its one place, holding the two functions themselves."""
    monkeypatch.setattr(tabs, "ATTENTION_TABS", (*tabs.ATTENTION_TABS, TAB))


@pytest.fixture
def tiny_state(monkeypatch, tmp_path) -> dict:
    monkeypatch.setenv(access.MODEL_ROOTS_SETTING, str(tmp_path))
    return {"model_picker": "Another folder…", "model_path": str(save_tiny(tmp_path / "tiny"))}


def _all_of(path: Path) -> set[str]:
    """The names a module lists in its __all__."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


@pytest.mark.parametrize("room", [views, figures])
def test_a_rooms_init_lists_by_name_every_name_its_modules_offer(room):
    folder = Path(room.__file__).parent
    offered = set().union(*(_all_of(path) for path in folder.glob("[!_]*.py")))
    assert set(room.__all__) == offered
    assert all(
        callable(getattr(room, name)) or isinstance(getattr(room, name), dict | type) for name in offered
    )


def test_the_declared_view_arrives_as_a_tab_with_its_figure_csv_and_link(declared, tiny_state):
    at = run_app(
        tiny_state, "attention", attn_view="Key shares", attn_layer=1, attn_head=2, **{LINK_BOX_KEY: True}
    )
    no_exception(at)
    assert [tab.label for tab in at.tabs][-1] == "Key shares"
    bars = charts(at)["key_shares"]["data"][0]
    assert len(array(bars["y"])) == len(bars["x"]) > 2
    np.testing.assert_allclose(array(bars["y"]).sum(), 1.0, atol=1e-5)  # rows of one head sum to 1
    assert "key_shares_csv" in [button.proto.id.split("-", 2)[-1] for button in at.get("download_button")]
    assert "The code" in [expander.label for expander in at.expander]
    link = at.sidebar.code[0].value
    assert "/Attention?" in link and "layer=1" in link and "head=2" in link


def test_without_the_declaration_there_is_no_such_tab(tiny_state):
    at = run_app(tiny_state, "attention")
    assert "Key shares" not in [tab.label for tab in at.tabs] and "key_shares" not in charts(at)
