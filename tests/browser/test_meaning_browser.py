"""Meaning in context in a real browser, presentation mode at 1280×720: "bank" from the walkthrough's link (guess,
reveal), the charts fit the screen, a clicked point lists its neighbours. Screenshots go to tests/artifacts/."""

from __future__ import annotations

import pytest

from tests.browser.driver import (
    EXCEPTION,
    NEEDS_DEFAULT_MODEL,
    click_point,
    open_page,
    selected_option,
    wait_for_charts,
    wait_for_figure,
    wait_for_idle,
)
from tests.browser.server import ARTIFACTS
from tests.browser.test_presentation import overlaps

pytestmark = [pytest.mark.browser, NEEDS_DEFAULT_MODEL]

# Bottom of the figure under `.st-key-<key>` in page pixels, and the name and centre of its first trace's first point.
_BOTTOM = """key => document.querySelector(`.st-key-${key} .js-plotly-plot`).getBoundingClientRect().bottom"""
_FIRST_POINT = """key => {
  const gd = document.querySelector(`.st-key-${key} .js-plotly-plot`);
  const trace = gd._fullData[0], xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, box = gd.getBoundingClientRect();
  return [trace.name, trace.customdata[0], box.left + xa._offset + xa.d2p(trace.x[0]),
          box.top + ya._offset + ya.d2p(trace.y[0])];
}"""


def test_bank_from_the_walkthrough_link_fits_a_projector(streamlit_url, page):
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(page, streamlit_url, "?present=1&step=8")  # the walkthrough's last step
    page.get_by_role("link", name="Next: one word, many meanings").click()
    wait_for_idle(page)
    wait_for_figure(page, "meaning_scatter_0")
    assert "word=bank" in page.url and page.locator(".st-key-meaning_guess").count() == 1
    page.screenshot(path=str(ARTIFACTS / "meaning_1280x720_question.png"))
    page.locator('.st-key-meaning_guess [role="radiogroup"] label').last.click()
    wait_for_idle(page)
    page.get_by_role("button", name="Reveal the model's answer").click()
    wait_for_idle(page)
    verdict = page.locator('[data-testid="stMain"] [data-testid="stAlert"]').first.inner_text()
    assert verdict.startswith(("Right!", "Not this time")), verdict
    wait_for_figure(page, "meaning_separation")
    page.screenshot(path=str(ARTIFACTS / "meaning_1280x720_present.png"))
    assert page.locator(EXCEPTION).count() == 0
    for key in ("meaning_scatter_0", "meaning_separation"):
        assert page.evaluate(_BOTTOM, key) <= 720, f"{key} runs past the bottom of a 1280x720 screen"
    assert not overlaps(page), overlaps(page)


def test_a_clicked_point_lists_its_neighbours(streamlit_url, page):
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(page, streamlit_url, "Meaning_in_context?present=1&word=bank")
    wait_for_figure(page, "meaning_scatter_0")
    name, number, _, _ = page.evaluate(_FIRST_POINT, "meaning_scatter_0")
    click_point(page, "meaning_scatter_0", name, 0)  # the first point of the first trace
    wait_for_figure(page, "meaning_scatter_1")  # the click moved the chart to a new key (selection cleared)
    shown = selected_option(page, "meaning_query")
    assert "[" in shown and "]" in shown, shown  # the occurrence, its word in brackets
    page.locator('[data-testid="stMain"] [data-testid="stDataFrame"]').last.scroll_into_view_if_needed()
    wait_for_charts(page)
    page.screenshot(path=str(ARTIFACTS / "meaning_1280x720_neighbours.png"))
    assert page.locator(EXCEPTION).count() == 0
    assert number >= 0 and name
