"""Meaning in context in a real browser, presentation mode at 1280×720: "bank" from the walkthrough's link (guess,
reveal), the charts fit the screen, a clicked point lists its neighbours. Screenshots go to tests/artifacts/."""

from __future__ import annotations

import pytest

from bertviz_lite.inspection import walkthrough as walk
from devtools.server import ARTIFACTS
from tests.browser.driver import (
    EXCEPTION,
    NEEDS_DEFAULT_MODEL,
    click_point,
    go_to,
    open_page,
    selected_option,
    wait_for_charts,
    wait_for_figure,
    wait_for_idle,
)
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


def test_bank_from_the_walkthrough_link_fits_a_projector_and_a_clicked_point_lists_its_neighbours(
    streamlit_url, page
):
    """Two claims on one page load: "bank" from the walkthrough's link (guess, reveal) fits a projector; then, on
    the page the link opened (presentation mode, word=bank), a clicked point lists its neighbours."""
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(page, streamlit_url, f"?present=1&step={len(walk.STEPS)}")  # the walkthrough's last step
    page.get_by_role("link", name="Next: one word, many meanings").click()
    wait_for_idle(page)
    wait_for_figure(page, "meaning_scatter_0")
    assert "word=bank" in page.url and page.locator(".st-key-meaning_guess").count() == 1
    assert "present=1" in page.url, page.url  # the page the clicked point is claimed on
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

    # A clicked point lists its neighbours.
    name, number, _, _ = page.evaluate(_FIRST_POINT, "meaning_scatter_0")
    click_point(page, "meaning_scatter_0", name, 0)  # the first point of the first trace
    wait_for_figure(page, "meaning_scatter_1")  # the click moved the chart to a new key (selection cleared)
    shown = selected_option(page, "meaning_query")
    assert "[" in shown and "]" in shown, f"a clicked point: the occurrence, its word in brackets: {shown}"
    page.locator('[data-testid="stMain"] [data-testid="stDataFrame"]').last.scroll_into_view_if_needed()
    wait_for_charts(page)
    page.screenshot(path=str(ARTIFACTS / "meaning_1280x720_neighbours.png"))
    assert page.locator(EXCEPTION).count() == 0, "a clicked point"
    assert number >= 0 and name, (number, name)


# The plot area and the legend of the figure under `.st-key-<key>`, as [left, top, right, bottom] in page pixels.
_PLOT_AND_LEGEND = """key => {
  const gd = document.querySelector(`.st-key-${key} .js-plotly-plot`);
  const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  return [box(gd.querySelector('.nsewdrag')), box(gd.querySelector('.legend')), box(gd)];
}"""
# The name of a trace and the index of a point on it that is not occurrence 0 (the one listed before any click).
_OTHER_POINT = """key => {
  const gd = document.querySelector(`.st-key-${key} .js-plotly-plot`);
  for (const t of gd._fullData) {
    const i = (t.customdata || []).findIndex(c => c !== 0);
    if (i >= 0 && t.visible === true) return [t.name, i];
  }
  return null;
}"""


def narrow_key(key: str) -> str:
    """The key of a chart's phone version (pages_app/common/_ui.py: the app is not imported by browser tests)."""
    return f"narrow__{key}"


def test_on_a_phone_the_scatter_keeps_its_width_and_a_click_lists_neighbours(streamlit_url, page):
    page.set_viewport_size({"width": 390, "height": 844})
    open_page(page, streamlit_url, "Meaning_in_context?word=bank")
    phone_chart = narrow_key("meaning_scatter_0")
    wait_for_figure(page, phone_chart)
    assert page.locator(".st-key-meaning_scatter_0").is_hidden()  # the wide chart, legend beside the plot
    plot, legend, figure = page.evaluate(_PLOT_AND_LEGEND, phone_chart)
    assert legend[1] >= plot[3], (plot, legend)  # the legend under the plot, not over its points
    assert plot[2] - plot[0] > 0.7 * (figure[2] - figure[0]), (
        plot,
        figure,
    )  # the plot keeps the figure's width
    page.locator(f".st-key-{phone_chart}").screenshot(path=str(ARTIFACTS / "meaning_390x844_scatter.png"))
    before = selected_option(page, "meaning_query")
    name, index = page.evaluate(_OTHER_POINT, phone_chart)
    click_point(page, phone_chart, name, index)
    wait_for_figure(page, narrow_key("meaning_scatter_1"))  # the click moved the chart to a new key
    after = selected_option(page, "meaning_query")
    assert after != before and "[" in after, (before, after)
    assert page.locator(EXCEPTION).count() == 0


# The titles, axis and subplot titles, legend entries and colour-bar labels of each shown plotly figure in the main
# area that reach past its left or right edge (the text is cut there): [text, left, right, figure width] in pixels.
_PAST_EDGES = """() => [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')].flatMap(gd => {
  const f = gd.getBoundingClientRect();
  if (f.width === 0) return [];
  return [...gd.querySelectorAll('.gtitle, .g-xtitle text, .g-ytitle text, .annotation-text, .legendtext, .colorbar text')]
    .map(e => [e.textContent, e.getBoundingClientRect()])
    .filter(([, r]) => r.width > 0 && (r.left < f.left - 1 || r.right > f.right + 1))
    .map(([text, r]) => [text.slice(0, 40), r.left - f.left, r.right - f.left, f.width].map(
      v => typeof v === 'number' ? Math.round(v) : v));
})"""


def test_in_a_laptops_columns_each_chart_is_its_narrow_version_with_titles_inside(streamlit_url, page):
    """At 1024x768 with the sidebar open, the scatter's column is 345 px and the accuracy chart's 204: the wide
    versions there had the legend over the points and titles past both edges. A chart in a column under 500 px is
    its phone version (pages_app/common/assets/layout.css); the Embeddings page's two position heatmaps (274 px
    each) too. One page load; Embeddings through the sidebar's link."""
    page.set_viewport_size({"width": 1024, "height": 768})
    open_page(page, streamlit_url, "Meaning_in_context?word=bank")
    for chart in ("meaning_scatter_0", "meaning_separation"):
        wait_for_figure(page, narrow_key(chart))
        assert page.locator(f".st-key-{chart}").is_hidden(), f"{chart}: the wide version shows in a column"
    plot, legend, _ = page.evaluate(_PLOT_AND_LEGEND, narrow_key("meaning_scatter_0"))
    assert legend[1] >= plot[3], (plot, legend)  # the legend under the plot, not over its points
    wait_for_charts(page)
    page.screenshot(path=str(ARTIFACTS / "meaning_1024x768_normal.png"))
    assert page.evaluate(_PAST_EDGES) == []
    go_to(page, "Embeddings")
    for chart in ("position_similarity_model", "position_similarity_sinusoidal"):
        wait_for_figure(page, narrow_key(chart))
    wait_for_charts(page)
    assert page.evaluate(_PAST_EDGES) == []
    assert page.locator(EXCEPTION).count() == 0
