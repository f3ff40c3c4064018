"""Recipe "a new page or walkthrough step": a PageSpec in pages_app/common/_pages.PAGES (script, title, section, the
fields its link keeps) or a Step in walkthrough.STEPS. The navigation, the page's link and the tests' page lists
follow the page; the walkthrough's count, Next button, link and step numbers in its texts follow the step (here:
a temporary Glossary page and a temporary first step)."""

from __future__ import annotations

import pytest

from bertviz_lite.inspection import walkthrough as walk
from bertviz_lite.server import access
from bertviz_lite.text.tokenization import BertTokenizer
from pages_app.common import _pages
from pages_app.common._pages import EXPLORE, PageSpec
from pages_app.common._share import LINK_BOX_KEY
from tests.app.conftest import explore_pages, no_exception, run_app
from tests.app.tiny_checkpoint import save_tiny

GLOSSARY = """import streamlit as st

from pages_app.common._ui import load_context

ctx = load_context()
st.header("Glossary")
st.write(f"{ctx.model.config.num_hidden_layers} layers")
"""
WORDS = walk.Step(
    "words",
    "Words before tokens",
    "You typed {tokens} tokens' worth of text.",
    code=(BertTokenizer.encode_pair,),
)


@pytest.fixture
def tiny_state(monkeypatch, tmp_path) -> dict:
    monkeypatch.setenv(access.MODEL_ROOTS_SETTING, str(tmp_path))
    return {"model_picker": "Another folder…", "model_path": str(save_tiny(tmp_path / "tiny"))}


@pytest.fixture
def glossary(monkeypatch, tmp_path) -> PageSpec:
    script = tmp_path / "6_Glossary.py"
    script.write_text(GLOSSARY, encoding="utf-8")
    page = PageSpec(str(script), "Glossary", ":material/menu_book:", EXPLORE, link_fields=("layer", "head"))
    monkeypatch.setattr(_pages, "PAGES", (*_pages.PAGES, page))
    return page


@pytest.fixture
def words_step(monkeypatch):
    monkeypatch.setattr(walk, "STEPS", (WORDS, *walk.STEPS))


def test_the_declared_page_is_in_the_navigation_with_its_link(glossary, tiny_state):
    at = run_app(tiny_state, attn_layer=1, attn_head=2, **{LINK_BOX_KEY: True})  # the link box open
    at.switch_page(glossary.script).run()
    no_exception(at)
    assert [header.value for header in at.header] == ["Glossary"] and "2 layers" in at.markdown[-1].value
    link = at.sidebar.code[0].value
    assert "/Glossary?" in link and "layer=1" in link and "head=2" in link


def test_the_declared_page_is_in_the_tests_page_lists(glossary):
    assert explore_pages()["glossary"] == glossary.script
    assert "tokens" in explore_pages() and "train" not in explore_pages()


def test_the_declared_step_is_counted_linked_and_numbered(words_step, tiny_state):
    at = run_app(tiny_state, "walkthrough", walk_step=1, **{LINK_BOX_KEY: True})
    no_exception(at)
    total = len(walk.STEPS)  # the declared steps and this one
    assert (
        at.header[0].value == f"Step 1 of {total}: {WORDS.title}"
        and "tokens' worth of text" in at.markdown[0].value
    )
    assert "The code" in [expander.label for expander in at.expander]  # its declared code, under it
    at.button(key="walk_next").click().run()
    assert at.header[0].value.startswith(f"Step 2 of {total}: WordPiece tokens")
    at.session_state["walk_step"] = 6  # many heads: its text sends the learner to the one-head step, now 5
    at.run()
    assert "closely in step 5." in at.markdown[0].value
    at.session_state["walk_step"] = total
    at.run()
    assert at.header[0].value.startswith(f"Step {total} of {total}")
    assert f"step={total}" in at.sidebar.code[0].value
    assert walk.clamp_step(99) == total


def test_without_the_declarations_neither_page_nor_step_exists(tiny_state):
    assert "glossary" not in explore_pages() and len(walk.STEPS) == 9
    at = run_app(tiny_state, "walkthrough", walk_step=5)
    assert at.header[0].value.startswith("Step 5 of 9") and "closely in step 4." in at.markdown[0].value
