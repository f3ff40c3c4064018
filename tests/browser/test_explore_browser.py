"""The explore pages in a real browser: type a pair, see the figures, no exception, screenshots in tests/artifacts/."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from bertviz_lite.pretrained import CHECKPOINTS_DIR, DEMO
from tests.browser.conftest import ARTIFACTS
from tests.browser.driver import (
    EXCEPTION,
    click_model_view_tile,
    click_point,
    go_to,
    open_page,
    open_tab,
    screenshot,
    type_into,
    wait_for_figure,
    wait_for_idle,
)

pytestmark = pytest.mark.browser

A = "The quick brown fox jumps over the lazy dog."
B = "It was not amused at all."
PAGES = ["Tokens and masking", "Embeddings", "Attention", "Predictions"]
TABS = ["Head view", "Model view", "Neuron view", "Head statistics", "Rollout"]
NUM_TOKENS = 20  # [CLS] + 10 pieces of A + [SEP] + 7 of B + [SEP] with MiniLM's vocabulary


def assert_no_exception(page) -> None:
    assert page.locator(EXCEPTION).count() == 0, page.locator(EXCEPTION).first.inner_text()


def test_typed_pair_reaches_the_attention_figure_and_every_page(streamlit_url, page):
    open_page(page, streamlit_url, "Attention")
    type_into(page, "sentence_a", A)
    type_into(page, "sentence_b", B)
    wait_for_idle(page)
    wait_for_figure(page, "attention_heatmap", rows=NUM_TOKENS)
    assert_no_exception(page)
    labels = page.locator(".st-key-attention_heatmap .yaxislayer-above text").all_text_contents()
    assert "fox (4)" in labels and "amused (15)" in labels
    for tab in TABS:
        open_tab(page, tab)
        assert_no_exception(page)
        screenshot(page, ARTIFACTS / f"attention_{tab.lower().replace(' ', '_')}.png")
    for title in PAGES:
        go_to(page, title)
        page.wait_for_timeout(500)  # let plotly finish drawing before the screenshot
        assert_no_exception(page)
        assert page.locator(".st-key-sentence_a input").input_value() == A  # the pair survives page changes
        screenshot(page, ARTIFACTS / f"page_{title.split()[0].lower()}.png")


def test_clicking_a_model_view_tile_opens_that_head(streamlit_url, page):
    open_page(page, streamlit_url, "Attention")
    open_tab(page, "Model view")
    wait_for_figure(page, "model_view")
    click_model_view_tile(page, layer=2, head=5, num_heads=12)
    expect(page.locator(".st-key-attn_layer input[role='combobox']")).to_have_value("2")
    expect(page.locator(".st-key-attn_head input[role='combobox']")).to_have_value("5")
    wait_for_figure(page, "model_view_head")
    title = page.locator(".st-key-model_view_head .gtitle").text_content()
    assert title.startswith("Layer 2, head 5")
    assert_no_exception(page)


def test_clicking_a_token_in_the_head_view_focuses_it(streamlit_url, page):
    open_page(page, streamlit_url, "Attention")
    open_tab(page, "Head view")
    wait_for_figure(page, "head_view")
    click_point(page, "head_view", "queries", 2)
    combobox = page.locator(".st-key-hv_focus input[role='combobox']")
    expect(combobox).to_have_value("cat (2)")
    # every line now leaves the clicked query (row 2); plotly decodes its data into _fullData
    page.wait_for_function("""() => {
      const gd = document.querySelector('.st-key-head_view .js-plotly-plot');
      const lines = (gd && gd._fullData || []).filter(t => t.mode === 'lines');
      const starts = lines.flatMap(t => Array.from(t.y).filter((v, i) => i % 3 === 0));
      return starts.length > 0 && starts.every(v => v === 2);
    }""", timeout=30_000)
    assert_no_exception(page)


@pytest.mark.skipif(not (CHECKPOINTS_DIR / DEMO / "config.json").is_file(), reason="checkpoints/demo-tiny not trained yet")
def test_minilm_predictions_switch_to_demo_tiny(streamlit_url, page):
    open_page(page, streamlit_url, "Predictions")
    page.get_by_role("button", name=f"Switch to {DEMO}").click()
    wait_for_idle(page)
    expect(page.locator(".st-key-model_picker input[role='combobox']")).to_have_value(re.compile(DEMO))
    wait_for_figure(page, "nsp")
    assert page.locator("[class*='st-key-predictions_']").count() >= 1
    assert_no_exception(page)
    screenshot(page, ARTIFACTS / "page_predictions_demo_tiny.png")


@pytest.mark.parametrize(
    ("text_a", "message"),
    [
        ("   ", "Sentence A is empty"),
        ("Party time 🎉🎉 with 🦜 parrots", "[UNK]"),
        ("word " * 4000, "truncated"),
    ],
    ids=["only-spaces", "emoji", "20k-characters"],
)
def test_odd_input_gives_a_plain_message(streamlit_url, page, text_a, message):
    open_page(page, streamlit_url, "Attention")
    type_into(page, "sentence_a", text_a)
    wait_for_idle(page)
    alerts = page.locator('[data-testid="stAlert"]').all_inner_texts()
    assert any(message in text for text in alerts), alerts
    assert_no_exception(page)
