"""The code panel in a real browser: on a 1280×720 slide every walkthrough step's figure still ends on the screen with the
panel's toggle below it (off), and the panel opened shows the source with the default pair's shapes; off a slide, a
collapsed expander. Measured boxes and screenshots go to tests/artifacts/."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from devtools.server import ARTIFACTS
from tests.browser.driver import NEEDS_DEFAULT_MODEL, open_page, open_tab, wait_for_idle
from tests.browser.test_presentation import CODE, assert_no_exception

pytestmark = [pytest.mark.browser, NEEDS_DEFAULT_MODEL]

SLIDE = {"width": 1280, "height": 720}


def test_a_slide_keeps_each_steps_figure_whole_with_the_code_toggle_below(slide_walk):
    """Read from the walk through every step on a slide that test_presentation's figure test reads too (the
    `slide_walk` fixture: one walk, not two)."""
    boxes = {}
    for step in slide_walk.steps:
        checked, text, t_top, t_bottom = step.toggle
        assert not checked, f"{step.name}: the code panel is on"
        assert "The code" in text, (step.name, text)
        assert step.code_blocks == 0, f"{step.name}: source on the slide, the panel is not collapsed"
        assert step.exception is None, f"{step.name}: {step.exception}"
        top, bottom = step.figure.get((SLIDE["width"], SLIDE["height"]), (None, None))
        boxes[step.key] = (top, bottom, t_top, t_bottom)
    (ARTIFACTS / "code_panel_1280x720_boxes.txt").write_text(
        "".join(
            f"{key}: figure {top} to {bottom} px, toggle {t_top:.0f} to {t_bottom:.0f} px of 720\n"
            for key, (top, bottom, t_top, t_bottom) in boxes.items()
        ),
        encoding="utf-8",
    )
    cut = {
        key: round(bottom) for key, (_, bottom, _, _) in boxes.items() if bottom is not None and bottom > 720
    }
    assert not cut, f"figure bottoms below the 1280x720 slide with the code toggle: {cut}"
    below = {key: round(t_top) for key, (_, bottom, t_top, _) in boxes.items() if bottom and t_top < bottom}
    assert not below, f"the toggle must sit below the figure: {below}"
    assert slide_walk.build_link_shown, "the last step's link 'Build: check your own BERT' is not shown"


def test_the_opened_panel_shows_the_source_with_the_pairs_shapes(streamlit_url, page):
    page.set_viewport_size(SLIDE)
    open_page(page, streamlit_url, "?present=1&step=4")  # one head: q, k, v, scores, softmax
    page.locator(".st-key-code_walk_one_head label").click()
    wait_for_idle(page)
    expect(page.locator(CODE)).to_have_count(2)  # split_heads and forward_with_attention
    attention = page.locator(CODE).nth(1).inner_text()
    # The default pair is 22 tokens on minilm-english: 12 heads of 32.
    assert "q, k, v = " in attention and "# q, k, v: (1, 12, 22, 32)" in attention
    assert "scores = " in attention and "# (1, 12, 22, 22)" in attention
    page.locator(CODE).nth(1).scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "code_panel_1280x720_open_one_head.png"))
    assert_no_exception(page)


def test_off_a_slide_the_panel_is_a_collapsed_expander_that_opens(streamlit_url, page):
    page.set_viewport_size(SLIDE)
    open_page(page, streamlit_url, "Attention")
    open_tab(page, "Neuron view")
    summary = page.locator('[data-testid="stMain"] [data-testid="stExpander"] summary', has_text="The code")
    expect(summary).to_have_count(1)
    assert page.locator(CODE).count() == 0
    summary.click()
    wait_for_idle(page)
    expect(page.locator(CODE)).to_have_count(2)  # forward_with_attention and merge_heads
    assert "def merge_heads" in page.locator(CODE).nth(1).inner_text()
    summary.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "code_panel_1280x720_expander_neuron_view.png"))
    assert_no_exception(page)
