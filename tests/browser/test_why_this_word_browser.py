"""Why this word in chromium at 1280×720: a prepared link opens each view, the reveal shows it, nothing overlaps.

Screenshots of every view (the screen at its figure) and of every tab's whole page, in normal and presentation mode,
go to tests/artifacts/why_*.png.
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
from tests.browser.test_presentation import overlaps, reveal

pytestmark = [pytest.mark.browser, NEEDS_DEFAULT_MODEL]

A, B, TARGET, FOIL = EXAMPLES["capital: Paris / Rome"]
# The link opens the first view's tab itself: the page's default tab (Minimal pairs) is neither computed nor drawn
# on the way (0.5-0.7 CPU-s a load).
LINK = (
    f"Why_this_word?a={quote(A)}&b={quote(B)}&target={TARGET}&foil={FOIL}&model={DEFAULT_MODEL}"
    "&tab=Contrastive+prediction"
)
PAIR = ("The keys to the cabinet are on the table.", "The keys to the cabinet is on the table.")
VIEWS = [
    ("Contrastive prediction", None, "contrast_by_layer"),
    ("Activation patching", None, "contrast_patching_residual"),
    ("Activation patching", "heads", "contrast_patching_head"),
    ("Activation patching", "attention vs feed-forward", "contrast_patching_feed-forward"),
]


@pytest.mark.parametrize("present", [False, True], ids=["normal", "present"])
def test_every_view_opens_from_a_link_and_fits_1280x720(streamlit_url, page, present):
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(page, streamlit_url, LINK + ("&present=1" if present else ""))
    expect(page.locator(".st-key-sentence_a input")).to_have_value(A)
    expect(page.locator(".st-key-contrast_target input")).to_have_value(TARGET)
    found = {}
    link_tab = page.get_by_role("tab", name=VIEWS[0][0])
    expect(link_tab).to_have_attribute("aria-selected", "true")  # the link's tab is open
    for tab, restore, key in VIEWS:
        if page.get_by_role("tab", name=tab).get_attribute("aria-selected") != "true":
            open_tab(page, tab)
        if restore:
            page.locator(".st-key-why_this_word_restore").get_by_text(restore, exact=True).click()
            wait_for_idle(page)
        asking = page.get_by_role("button", name="Reveal the model's answer")
        asking.or_(page.locator(f".st-key-{key}")).first.wait_for(
            timeout=60_000
        )  # the question, or the figure
        if asking.count():
            reveal(page)
        try:
            wait_for_figure(page, key)
        except Exception:
            page.screenshot(path=str(ARTIFACTS / f"why_failed_{key}.png"))
            raise
        name = f"why_{'present' if present else 'normal'}_1280x720_{key.removeprefix('contrast_')}"
        scroll_to(page, key)
        page.screenshot(path=str(ARTIFACTS / f"{name}.png"))
        # The tab's whole page (0.2 CPU-s of chromium, a screen 0.07); a restored view differs in its figure only,
        # which the screen above shows.
        if not restore:
            screenshot(page, ARTIFACTS / f"{name}_page.png")
        box = page.locator(f".st-key-{key} .js-plotly-plot").bounding_box()
        assert box["width"] <= 1280 and box["height"] <= 720 + 100, (key, box)  # a figure fits on one screen
        if overlaps(page):
            found[name] = overlaps(page)
        assert page.locator(EXCEPTION).count() == 0, page.locator(EXCEPTION).first.inner_text()
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
