"""AppTest: "The code" under a walkthrough step and an explore tab: collapsed, then the live source with the pair's
shapes; in presentation mode a toggle."""

from __future__ import annotations

import inspect

import pytest
from streamlit.testing.v1 import AppTest

from bertviz_lite.figures.tabs import ATTENTION_TABS, PAGE_ABOUT
from bertviz_lite.inspection import walkthrough as walk
from bertviz_lite.inspection.code_listing import code_listing
from bertviz_lite.inspection.live_shapes import pair_shapes
from bertviz_lite.loading.pretrained import load
from pages_app.common._pages import PAGES, WALKTHROUGH
from pages_app.common._share import PRESENT
from pages_app.common._sidebar import OTHER_FOLDER
from tests.app.conftest import PAIR, no_exception, run_app


@pytest.fixture
def tiny_state(tiny_folder) -> dict:
    return {"model_picker": OTHER_FOLDER, "model_path": tiny_folder}


def panel_code(at: AppTest) -> list[str]:
    """The code blocks the panel shows (the page's other st.code, the link box, excluded)."""
    return [block.value for block in at.code if block.language == "python"]


def expected(code, tiny_folder) -> list[str]:
    """What the panel must show: the package's listing of the declared functions, with the pair's shapes."""
    model, tokenizer = load(tiny_folder)
    shapes = pair_shapes(model, tokenizer, text_a=PAIR[0], text_b=PAIR[1], max_length=128)
    blocks = code_listing(code, shapes)
    assert [block.source for block in blocks] == [inspect.getsource(f) for f in code]  # the live source
    return [block.text for block in blocks]


def test_a_walkthrough_step_shows_its_declared_code_when_opened(tiny_state, tiny_folder):
    step = walk.STEPS[walk.step_number("one_head") - 1]
    at = run_app(tiny_state, "walkthrough", **{WALKTHROUGH.step_key: walk.step_number("one_head")})
    no_exception(at)
    assert [e.label for e in at.expander if e.label == "The code"] == ["The code"]
    assert panel_code(at) == []  # collapsed: nothing read, nothing run
    at.session_state[f"code_walk_{step.key}"] = True
    at.run()
    no_exception(at)
    shown = panel_code(at)
    assert len(shown) == len(step.code) == 2
    split, attention = shown
    assert split.splitlines()[-1].endswith("# (1, 4, 28, 8)")  # the sidebar's pair: 28 tokens, 4 heads of 8
    assert "scores = " in attention and "# (1, 4, 28, 28)" in attention
    assert shown == expected(step.code, tiny_folder)
    legend = [m.value for m in at.markdown if m.value.startswith("Shapes for the sidebar's sentence pair")]
    assert legend and "T = 28" in legend[0]


def test_an_explore_tab_has_its_panel_and_a_slide_has_a_toggle(tiny_state, tiny_folder):
    heatmap = ATTENTION_TABS[0]
    at = run_app(tiny_state, "attention", **{PRESENT: True})
    no_exception(at)
    assert not [e for e in at.expander if e.label == "The code"]  # a slide: no expander's frame
    toggle = at.toggle(key="code_heatmap")
    assert toggle.label == "The code" and toggle.value is False and panel_code(at) == []
    toggle.set_value(True).run()
    no_exception(at)
    assert panel_code(at) == expected(heatmap.code, tiny_folder)


def test_the_last_step_leads_to_the_build_section(tiny_state):
    at = run_app(tiny_state, "walkthrough", **{WALKTHROUGH.step_key: len(walk.STEPS)})
    no_exception(at)
    assert at.header[0].value.endswith("Your turn: build your own BERT")
    links = [link.proto.page for link in at.get("page_link")]
    assert any(page.endswith("12_Your_BERT.py") or "your_bert" in page.lower() for page in links), links


# Every explore view: (page name, the session state that opens it, its panel's key, its declared code).
VIEWS = [
    (page.name, {page.tab_key: tab.title}, tab.name, tab.code) for page in PAGES for tab in page.tabs
] + [(name, {}, name, view.code) for name, view in PAGE_ABOUT.items()]


@pytest.mark.parametrize("name, state, key, code", VIEWS, ids=[f"{v[0]}-{v[2]}" for v in VIEWS])
def test_every_views_panel_opens_on_its_page(tiny_state, name, state, key, code):
    at = run_app(tiny_state, name, **state, **{f"code_{key}": True})
    no_exception(at)
    assert len(panel_code(at)) == len(code), (name, key)
