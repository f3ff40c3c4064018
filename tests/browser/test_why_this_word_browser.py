"""Why this word in chromium at 1280×720: a prepared link opens each view, the reveal shows it, nothing overlaps.

Screenshots (the first screen, and the whole page) of every view in normal and presentation mode go to
tests/artifacts/why_*.png.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest
from playwright.sync_api import expect

from bertviz_lite.inspection.views.why_this_word import EXAMPLES
from bertviz_lite.loading.pretrained import DEFAULT_MODEL
from devtools.server import ARTIFACTS
from tests.browser.driver import (
    EXCEPTION,
    NEEDS_DEFAULT_MODEL,
    open_page,
    open_tab,
    screenshot,
    scroll_to,
    wait_for_figure,
    wait_for_idle,
)
from tests.browser.test_presentation import overlaps, resize_to, reveal

pytestmark = [pytest.mark.browser, NEEDS_DEFAULT_MODEL]

A, B, TARGET, FOIL = EXAMPLES["capital: Paris / Rome"]
LINK = f"Why_this_word?a={quote(A)}&b={quote(B)}&target={TARGET}&foil={FOIL}&model={DEFAULT_MODEL}"
PAIR = ("The keys to the cabinet are on the table.", "The keys to the cabinet is on the table.")
VIEWS = [
    ("Contrastive prediction", None, "contrast_by_layer"),
    ("Activation patching", None, "contrast_patching_residual"),
    ("Activation patching", "heads", "contrast_patching_head"),
    ("Activation patching", "attention vs feed-forward", "contrast_patching_feed-forward"),
]


def show_view(page, tab: str, restore: str | None, key: str) -> None:
    """Open the view's tab (and restore choice), answer its question if it asks one, and wait for its figure."""
    open_tab(page, tab)
    if restore:
        page.locator(".st-key-why_this_word_restore").get_by_text(restore, exact=True).click()
        wait_for_idle(page)
    asking = page.get_by_role("button", name="Reveal the model's answer")
    asking.or_(page.locator(f".st-key-{key}")).first.wait_for(timeout=60_000)  # the question, or the figure
    if asking.count():
        reveal(page)
    try:
        wait_for_figure(page, key)
    except Exception:
        page.screenshot(path=str(ARTIFACTS / f"why_failed_{key}.png"))
        raise


def whole_page_shot(page, path) -> None:
    """The whole page, the viewport grown to fit it (as screenshot()) and left so: the caller sets it back."""
    height = page.evaluate(
        "() => Math.max(...[...document.querySelectorAll('[data-testid=\"stMain\"] *')]"
        ".slice(0, 1).map(e => e.scrollHeight), document.body.scrollHeight)"
    )
    resize_to(page, 1280, int(min(max(height, 720), 9000)))
    page.screenshot(path=str(path))


def look_at_1280x720(page, key: str, name: str, found: dict) -> None:
    """At 1280x720: the first screen's screenshot, the figure on one screen, no figure text on another."""
    scroll_to(page, key)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))
    box = page.locator(f".st-key-{key} .js-plotly-plot").bounding_box()
    assert box["width"] <= 1280 and box["height"] <= 720 + 100, (key, box)  # a figure fits on one screen
    if overlaps(page):
        found[name] = overlaps(page)
    assert page.locator(EXCEPTION).count() == 0, (name, page.locator(EXCEPTION).first.inner_text())


@pytest.mark.parametrize("present", [False, True], ids=["normal", "present"])
def test_every_view_opens_from_a_link_and_fits_1280x720(streamlit_url, page, present):
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(page, streamlit_url, LINK + ("&present=1" if present else ""))
    expect(page.locator(".st-key-sentence_a input")).to_have_value(A)
    expect(page.locator(".st-key-contrast_target input")).to_have_value(TARGET)
    found = {}
    # Each whole-page screenshot grows the viewport: views are looked at in pairs, the first at 1280x720 and then
    # whole, the second whole (shown at the grown size its figure is drawn the same: figure heights are set by the
    # app, widths by the 1280-px page) and then at 1280x720. Two viewport changes a pair, not four.
    for number, (tab, restore, key) in enumerate(VIEWS):
        show_view(page, tab, restore, key)
        name = f"why_{'present' if present else 'normal'}_1280x720_{key.removeprefix('contrast_')}"
        if number % 2 == 0:
            look_at_1280x720(page, key, name, found)
            whole_page_shot(page, ARTIFACTS / f"{name}_page.png")
        else:
            whole_page_shot(page, ARTIFACTS / f"{name}_page.png")
            resize_to(page, 1280, 720)
            look_at_1280x720(page, key, name, found)
    assert not found, found


@pytest.mark.parametrize("present", [False, True], ids=["normal", "present"])
def test_a_minimal_pair_from_a_link_lights_up_where_the_sentences_differ(streamlit_url, page, present):
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(
        page,
        streamlit_url,
        f"Why_this_word?a={quote(PAIR[0])}&b={quote(PAIR[1])}&model={DEFAULT_MODEL}"
        + ("&present=1" if present else ""),
    )
    open_tab(page, "Minimal pairs")
    page.get_by_role("button", name="Reveal the model's answer").wait_for(timeout=60_000)
    reveal(page)
    wait_for_figure(page, "contrast_minimal_pair")
    scroll_to(page, "contrast_minimal_pair")
    name = f"why_{'present' if present else 'normal'}_1280x720_minimal_pair"
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))
    screenshot(page, ARTIFACTS / f"{name}_page.png")
    ticks = page.locator(".st-key-contrast_minimal_pair .xaxislayer-above text").all_text_contents()
    assert "are (6)" in ticks and "is (6)" in ticks, ticks  # bold, orange: the differing token
    assert not overlaps(page), overlaps(page)
    assert page.locator(EXCEPTION).count() == 0
