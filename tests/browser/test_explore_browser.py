"""The explore pages in a real browser: type a pair, see the figures, no exception, screenshots in tests/artifacts/."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from bertviz_lite.figures.tabs import ATTENTION_TABS, titles
from bertviz_lite.loading.pretrained import DEFAULT_MODEL, DESCRIPTIONS, ENGLISH, MINILM
from bertviz_lite.loading.run_folder import CHECKPOINTS_DIR
from devtools.server import ARTIFACTS
from tests.browser.driver import (
    NEEDS_DEFAULT_MODEL,
    assert_no_exception,
    choose_option,
    click_model_view_tile,
    click_point,
    go_to,
    open_page,
    open_tab,
    resize,
    screenshot,
    selected_option,
    tick_labels,
    type_into,
    wait_for_charts,
    wait_for_figure,
    wait_for_idle,
)

pytestmark = pytest.mark.browser

A = "The quick brown fox jumps over the lazy dog."
B = "It was not amused at all."
PAGES = ["Tokens and masking", "Embeddings", "Attention", "Predictions"]
TABS = titles(ATTENTION_TABS)[1:]  # after the Heatmap, which a visit opens
NUM_TOKENS = 20  # [CLS] + 10 pieces of A + [SEP] + 7 of B + [SEP] with MiniLM's vocabulary


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
        wait_for_charts(page)  # plotly has finished drawing before the screenshot
        assert_no_exception(page)
        assert page.locator(".st-key-sentence_a input").input_value() == A  # the pair survives page changes
        screenshot(page, ARTIFACTS / f"page_{title.split()[0].lower()}.png")


# Screen position of token `index` in the head view's column `name` ("queries" or "keys").
_TOKEN_XY = """([name, index]) => {
  const gd = document.querySelector('.st-key-head_view .js-plotly-plot');
  const trace = gd._fullData.find(t => t.name === name);
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, box = gd.getBoundingClientRect();
  return [box.left + xa._offset + xa.d2p(trace.x[index]), box.top + ya._offset + ya.d2p(trace.y[index])];
}"""
# The heads whose line traces plotly shows (a legend click hides the others: visible "legendonly").
_SHOWN_HEADS = """() => {
  const gd = document.querySelector('.st-key-head_view .js-plotly-plot');
  return [...new Set(gd._fullData.filter(t => t.mode === 'lines' && t.visible === true).map(t => t.legendgroup))];
}"""


def test_attention_views_answer_hover_and_clicks_and_odd_input(streamlit_url, page):
    """On one load of the Attention page (the default pair), each claim in turn:
    1. head view: hovering a token lights up its lines and dims the others, and leaving it lights none;
    2. head view: a legend click shows that head alone, a second click all 12 again;
    3. head view: clicking a token focuses it (the focus picker reads it, every line leaves it);
    4. model view: clicking a tile opens that head beside it, and again after another head was picked;
    5. odd input: each odd sentence A (emoji, 600 words, 20k characters, only spaces) gives a plain message.
    The head view's claims come first: picking a head (claim 4) narrows the head view to that head."""
    open_page(page, streamlit_url, "Attention")
    _head_view_hover_lights_up_a_token_and_a_legend_click_shows_one_head(page)
    _clicking_a_token_in_the_head_view_focuses_it(page)
    _clicking_a_model_view_tile_opens_that_head(page)
    _odd_input_gives_a_plain_message(page)


def _head_view_hover_lights_up_a_token_and_a_legend_click_shows_one_head(page) -> None:
    open_tab(page, "Head view")
    wait_for_figure(page, "head_view")
    page.locator(".st-key-head_view").scroll_into_view_if_needed()
    page.wait_for_function(
        "() => document.querySelector('.st-key-head_view .js-plotly-plot').__bvlHighlight", timeout=10_000
    )  # the hover script has attached (it looks every 0.4 s)
    x, y = page.evaluate(_TOKEN_XY, ["queries", 2])
    page.mouse.move(x, y)
    page.wait_for_function(
        "() => document.querySelectorAll('.st-key-head_view .bvl-highlight path').length > 0", timeout=10_000
    )
    dimmed = page.evaluate(
        "() => [...document.querySelectorAll('.st-key-head_view .scatterlayer .trace')]"
        ".filter(e => e.querySelector('.js-line')).every(e => e.style.opacity === '0.12')"
    )
    assert dimmed, "head view hover: the other lines are dimmed"
    page.mouse.move(5, 5)
    page.wait_for_function(
        "() => !document.querySelector('.st-key-head_view .bvl-highlight')", timeout=10_000
    )
    assert len(page.evaluate(_SHOWN_HEADS)) == 12, "head view: all 12 heads shown before a legend click"
    page.locator(".st-key-head_view .legend .traces", has_text="head 3").click()
    page.wait_for_function(f"() => ({_SHOWN_HEADS})().join() === 'head 3'", timeout=10_000)
    page.locator(".st-key-head_view .legend .traces", has_text="head 3").click()
    page.wait_for_function(f"() => ({_SHOWN_HEADS})().length === 12", timeout=10_000)
    assert_no_exception(page)


def _clicking_a_token_in_the_head_view_focuses_it(page) -> None:
    wait_for_figure(page, "head_view")
    click_point(page, "head_view", "queries", 2)
    combobox = page.locator(".st-key-hv_focus input[role='combobox']")
    expect(combobox, "head view click: the focus picker reads the clicked token").to_have_value("cat (2)")
    # every line now leaves the clicked query (row 2); plotly decodes its data into _fullData
    page.wait_for_function(
        """() => {
      const gd = document.querySelector('.st-key-head_view .js-plotly-plot');
      const lines = (gd && gd._fullData || []).filter(t => t.mode === 'lines');
      const starts = lines.flatMap(t => Array.from(t.y).filter((v, i) => i % 3 === 0 && v !== null));
      return starts.length > 0 && starts.every(v => v === 2);
    }""",
        timeout=30_000,
    )
    assert_no_exception(page)


def _clicking_a_model_view_tile_opens_that_head(page) -> None:
    open_tab(page, "Model view")
    wait_for_figure(page, "model_view")
    click_model_view_tile(page, layer=2, head=5, num_heads=12)
    tile = "model view tile click: the layer and head pickers read the tile"
    expect(page.locator(".st-key-attn_layer input[role='combobox']"), tile).to_have_value("2")
    expect(page.locator(".st-key-attn_head input[role='combobox']"), tile).to_have_value("5")
    opened = (
        "narrow__model_view_head"  # its column is under 500 px at this size: the head's narrow version shows
    )
    wait_for_figure(page, opened)
    assert (
        page.locator(f".st-key-{opened}").is_visible() and page.locator(".st-key-model_view_head").is_hidden()
    )
    title = page.locator(f".st-key-{opened} .gtitle").text_content()
    assert title.startswith("Layer 2, head 5"), f"model view tile click: the opened head's title is {title!r}"
    choose_option(page, "attn_head", "0")
    wait_for_figure(page, "model_view_1")  # a new key after each click: the same tile opens again
    click_model_view_tile(page, layer=2, head=5, num_heads=12, key="model_view_1")
    expect(
        page.locator(".st-key-attn_head input[role='combobox']"), "model view: the same tile opens again"
    ).to_have_value("5")
    assert_no_exception(page)


ODD_INPUTS = {  # what a visitor types as sentence A: the plain message the page must give
    "emoji": ("Party time 🎉🎉 with 🦜 parrots", "[UNK]"),
    "600-words": ("word " * 600, "truncated"),  # cut to the max length, said so
    "20k-characters": ("word " * 4001, "characters long; this server takes at most 20,000"),  # refused
    "only-spaces": ("   ", "Sentence A is empty"),
}


def _odd_input_gives_a_plain_message(page) -> None:
    """The visitor types each odd input in turn on the Heatmap tab (each message names its input)."""
    open_tab(page, "Heatmap")  # where a visit opens, as a visitor who types first would see it
    for case, (text_a, message) in ODD_INPUTS.items():
        type_into(page, "sentence_a", text_a)
        wait_for_idle(page)
        alerts = page.locator('[data-testid="stAlert"]').all_inner_texts()
        assert any(message in text for text in alerts), (
            f"odd input {case}: the message says {message!r}",
            alerts,
        )
        assert_no_exception(page)


PARIS_A = "Paris is the [MASK] of France."
PARIS_B = "It is famous for the Eiffel Tower."
PARIS_MASK = 4  # [CLS] paris is the [MASK]
SIZES = [(1280, 720), (1024, 768)]


@NEEDS_DEFAULT_MODEL
@pytest.mark.skipif(
    not (CHECKPOINTS_DIR / ENGLISH / "config.json").is_file(), reason=f"checkpoints/{ENGLISH} is missing"
)
def test_fresh_session_opens_on_minilm_english_switches_back_from_minilm_and_fills_in_paris(
    streamlit_url, page
):
    """On one load, each claim in turn:
    1. a fresh session opens on minilm-english, its description in the sidebar;
    2. Predictions with MiniLM (no heads) shows no predictions, and its button switches to the default model;
    3. the typed Paris pair fills in "capital", readable at two screen sizes."""
    open_page(page, streamlit_url)
    assert selected_option(page, "model_picker") == ENGLISH, "a fresh session opens on minilm-english"
    expect(page.get_by_test_id("stSidebar"), "the sidebar describes minilm-english").to_contain_text(
        DESCRIPTIONS[ENGLISH]
    )
    go_to(page, "Predictions")  # a rerun, not a page load: the claims below are not about the load
    _minilm_predictions_switch_to_the_default_model(page)
    _predictions_fill_in_paris(page)


def _minilm_predictions_switch_to_the_default_model(page) -> None:
    choose_option(page, "model_picker", MINILM)
    expect(page.locator(".st-key-model_picker input[role='combobox']"), "MiniLM is picked").to_have_value(
        re.compile(re.escape(MINILM))
    )
    expect(page.locator("[class*='st-key-predictions_']"), "MiniLM: no predictions").to_have_count(
        0
    )  # no heads: nothing to predict with
    screenshot(page, ARTIFACTS / "page_predictions_without_heads.png")
    page.get_by_role("button", name=f"Switch to {DEFAULT_MODEL}").click()
    wait_for_idle(page)
    expect(
        page.locator(".st-key-model_picker input[role='combobox']"),
        "the button switches to the default model",
    ).to_have_value(re.compile(DEFAULT_MODEL))
    wait_for_figure(page, "nsp")
    assert page.locator("[class*='st-key-predictions_']").count() >= 1, "the default model predicts"
    assert_no_exception(page)
    screenshot(page, ARTIFACTS / f"page_predictions_switched_to_{DEFAULT_MODEL}.png")


def _predictions_fill_in_paris(page) -> None:
    type_into(page, "sentence_a", PARIS_A)
    type_into(page, "sentence_b", PARIS_B)
    wait_for_idle(page)
    key = f"predictions_{PARIS_MASK}"
    expect(page.locator(f".st-key-{key} .gtitle")).to_have_text(
        f"Position {PARIS_MASK}: [MASK] typed in the text"
    )
    wait_for_figure(page, key, rows=10)  # Top k = 10
    wait_for_figure(page, "nsp")
    labels = tick_labels(page, key)
    assert len(labels) == 10 and "capital" in labels[:5], ("Paris: capital in the top 5", labels)
    assert tick_labels(page, "nsp") == ["IsNext", "NotNext"], "Paris: the NSP chart's labels"
    assert_no_exception(page)
    for width, height in SIZES:
        resize(page, width, height)
        page.screenshot(
            path=str(ARTIFACTS / f"predictions_paris_{width}x{height}.png")
        )  # what a user first sees
        screenshot(page, ARTIFACTS / f"predictions_paris_{width}x{height}_full.png")
        assert tick_labels(page, key)[:5] == labels[:5], f"Paris: still readable at {width}x{height}"
    assert_no_exception(page)


# The heatmap's toolbar groups: how many it has, and how many of them are laid out and opaque.
_TOOLBAR_GROUPS = """() => {
  const groups = [...document.querySelectorAll('.st-key-attention_heatmap .modebar-group')];
  const shown = groups.filter(g => g.getClientRects().length > 0 && getComputedStyle(g).opacity !== '0');
  return {groups: groups.length, shown: shown.length};
}"""


@NEEDS_DEFAULT_MODEL
def test_on_a_phone_no_toolbar_covers_a_figures_title(streamlit_url, visitor):
    """A phone has no hover, so plotly shows its toolbar all the time, at the figure's top right: over the heatmap's
    title ("Layer 0, head 0 (All)") on a 390 px screen. There the app's figures go without it."""
    phone = visitor(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    open_page(phone, streamlit_url, "Attention")
    wait_for_figure(phone, "attention_heatmap")
    toolbar = phone.evaluate(_TOOLBAR_GROUPS)
    assert toolbar["groups"] > 0 and toolbar["shown"] == 0, (
        f"plotly's toolbar over the heatmap's title: {toolbar}"
    )
    expect(phone.locator(".st-key-attention_heatmap .gtitle")).to_be_visible()
    assert_no_exception(phone)
