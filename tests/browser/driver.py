"""Driving the app in chromium: type into the sidebar, wait for a run to finish, wait for a plotly figure.

Used by tests/browser/ and by bench/page_latency.py. Every wait here is on a state of the page (a script
run finished, a figure drawn, a point hovered), never a fixed time.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from bertviz_lite.figures.model_view import PICKER_NAME
from bertviz_lite.loading.pretrained import DEFAULT_MODEL
from bertviz_lite.loading.run_folder import CHECKPOINTS_DIR

IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
# Installed in every page of a context (new_page): the times of the last user input and of the last script
# run that started, so that wait_for_idle can tell "the run this input started has ended" from "no run yet".
RUN_TRACKER = """(() => {
  if (window.__bvlRuns) return;
  const runs = window.__bvlRuns = {input: -1, start: -1};
  for (const type of ['pointerdown', 'keydown', 'input', 'change'])
    addEventListener(type, () => { runs.input = performance.now(); }, true);
  new MutationObserver(records => {
    if (records.some(r => r.target.getAttribute('data-test-script-state') === 'running')) runs.start = performance.now();
  }).observe(document, {subtree: true, attributes: true, attributeFilter: ['data-test-script-state']});
})();"""
# Idle, and either no input yet, or a run started after the last input, or none came within `grace` ms
# (an input that starts no run, such as an arrow key in a text box).
_IDLE_AFTER_INPUT = f"""(grace) => {{
  const runs = window.__bvlRuns;
  if (!document.querySelector('{IDLE}')) return false;
  return !runs || runs.input < 0 || runs.start > runs.input || performance.now() - runs.input > grace;
}}"""
NO_RUN_GRACE_MS = 1000


def new_page(browser, **context_options):
    """A page in a new browser context (a new streamlit session) that wait_for_idle can follow."""
    context = browser.new_context(**context_options)
    context.add_init_script(RUN_TRACKER)
    return context.new_page()


def type_into(page, key: str, text: str) -> None:
    """Replace the text of the sidebar text input with this key and submit it (Enter)."""
    box = page.locator(f".st-key-{key} input")
    box.fill(text)
    box.press("Enter")


def wait_for_idle(page, timeout_ms: float = 60_000) -> None:
    """Wait until the script run that the last action started has finished."""
    page.wait_for_function(_IDLE_AFTER_INPUT, arg=NO_RUN_GRACE_MS, timeout=timeout_ms, polling=25)


def open_page(page, base_url: str, url_path: str = "") -> None:
    """Load a page in a new session and wait for its first run to draw something in the main area."""
    page.goto(f"{base_url}/{url_path}")
    page.locator(
        '[data-testid="stMain"] [data-testid="stHeading"], [data-testid="stMain"] [data-testid="stAlert"]'
    ).first.wait_for(timeout=60_000)
    wait_for_idle(page)


def open_tab(page, label: str) -> None:
    page.get_by_role("tab", name=label).click()
    wait_for_idle(page)


# Browser tests that open the app on its default model need its checkpoint.
NEEDS_DEFAULT_MODEL = pytest.mark.skipif(
    not (CHECKPOINTS_DIR / DEFAULT_MODEL / "config.json").is_file(),
    reason=f"checkpoints/{DEFAULT_MODEL} is missing",
)
EXCEPTION = '[data-testid="stException"]'


def exception_shown(page) -> str | None:
    """The text of the first exception box the page shows, or None."""
    shown = page.locator(EXCEPTION)
    return shown.first.inner_text() if shown.count() else None


def assert_no_exception(page) -> None:
    assert page.locator(EXCEPTION).count() == 0, page.locator(EXCEPTION).first.inner_text()


# True once the plotly figure under `.st-key-<key>` has drawn its data and, if given, shows `rows` rows.
_FIGURE_READY = """([key, rows]) => {
  const gd = document.querySelector(`.st-key-${key} .js-plotly-plot`);
  if (!gd || !gd._fullData || !gd._fullLayout) return false;
  if (!gd.querySelector('.heatmaplayer image, .scatterlayer .trace, .barlayer .trace')) return false;
  if (rows === null) return true;
  const first = gd.data[0];
  return first && first.y && first.y.length === rows;
}"""


def wait_for_figure(page, key: str, rows: int | None = None, timeout_ms: float = 60_000) -> None:
    """Wait until the plotly chart with this key is drawn (with `rows` heatmap rows, if given)."""
    page.wait_for_function(_FIGURE_READY, arg=[key, rows], timeout=timeout_ms, polling=25)


def screenshot(page, path, max_height: int = 9000) -> None:
    """The whole page: Streamlit scrolls inside its main block, so grow the viewport to fit it first."""
    size = page.viewport_size
    height = page.evaluate(
        "() => Math.max(...[...document.querySelectorAll('[data-testid=\"stMain\"] *')]"
        ".slice(0, 1).map(e => e.scrollHeight), document.body.scrollHeight)"
    )
    resize(page, size["width"], int(min(max(height, size["height"]), max_height)))
    page.screenshot(path=str(path))
    page.set_viewport_size(size)


# True once every shown plotly chart in the main area has its layout width equal to its box's width, with no
# change since the last poll: the charts have re-laid themselves out after a resize.
_LAYOUT_SETTLED = """() => {
  const plots = [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')]
    .map(gd => [gd.getBoundingClientRect(), gd._fullLayout, gd]).filter(([r]) => r.width > 0);
  if (plots.some(([r, l, gd]) => !l || !gd.querySelector('.main-svg') || Math.abs(l.width - r.width) > 2)) return false;
  const sizes = JSON.stringify(plots.map(([r, l]) => [r.width, r.height, l.width, l.height]));
  const settled = window.__bvlSizes === sizes;
  window.__bvlSizes = sizes;
  return settled;
}"""


def wait_for_charts(page, timeout_ms: float = 30_000) -> None:
    """Wait until every plotly chart shown in the main area is drawn to its box's width and stays so."""
    page.wait_for_function(_LAYOUT_SETTLED, timeout=timeout_ms, polling=100)


# True once the element under `.st-key-<key>` sits where it sat at the last poll: a scroll has come to rest.
_AT_REST = """(key) => {
  const el = document.querySelector(`.st-key-${key}`);
  if (!el) return false;
  const top = JSON.stringify([el.getBoundingClientRect().top, scrollY]);
  const still = window.__bvlRest === top;
  window.__bvlRest = top;
  return still;
}"""


def scroll_to(page, key: str) -> None:
    """Scroll the element with this key into view and wait until it has come to rest there (for a screenshot)."""
    page.locator(f".st-key-{key}").scroll_into_view_if_needed()
    page.wait_for_function(_AT_REST, arg=key, timeout=10_000, polling=50)


def resize(page, width: int, height: int) -> None:
    """Set the viewport size and wait until the plotly charts have re-laid themselves out to it."""
    page.set_viewport_size({"width": width, "height": height})
    wait_for_charts(page)


# Page coordinates of point `index` of the trace named `name` in the figure under `.st-key-<key>`.
_POINT_XY = """([key, name, index]) => {
  const gd = document.querySelector(`.st-key-${key} .js-plotly-plot`);
  const trace = gd._fullData.find(t => t.name === name);
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
  const box = gd.getBoundingClientRect();
  return [box.left + xa._offset + xa.d2p(trace.x[index]), box.top + ya._offset + ya.d2p(trace.y[index])];
}"""


# True once plotly reports point `index` of the trace named `name` as hovered (a click then selects it).
_HOVERED = """([key, name, index]) => {
  const gd = document.querySelector(`.st-key-${key} .js-plotly-plot`);
  return (gd && gd._hoverdata || []).some(p => p.data && p.data.name === name && p.pointNumber === index);
}"""


# Whether plotly holds point `index` of the trace named `name` as selected (a click on a chart that selects on click
# toggles it).
_SELECTED = """([key, name, index]) => {
  const gd = document.querySelector(`.st-key-${key} .js-plotly-plot`);
  const trace = gd && (gd.data || []).find(t => t.name === name);
  return !!trace && Array.from(trace.selectedpoints || []).includes(index);
}"""
# True once a click has taken: a script run started after `started` (the last run's start before the click), or the
# point's selection is no longer `selected` (the run the click asks for is on its way).
_CLICK_TOOK = f"""([key, name, index, started, selected]) => {{
  const runs = window.__bvlRuns;
  return !runs || runs.start > started || ({_SELECTED})([key, name, index]) !== selected;
}}"""
_LAST_START = "() => window.__bvlRuns ? window.__bvlRuns.start : -1"
HOVER_TRIES = 4
CLICK_TRIES = 3


def _hover_point(page, key: str, trace_name: str, index: int) -> tuple[float, float]:
    """Move the mouse onto point `index` of the named trace until plotly reports it hovered; its place on screen.

    The point's place is read again before each try: on a busy machine the page can still lay itself out after a
    scroll (the figure moved under a mouse that rested where the point had been), so a hover that plotly does not
    report within 5 s is tried again at the point's new place."""
    for attempt in range(HOVER_TRIES):
        x, y = page.evaluate(_POINT_XY, [key, trace_name, index])
        page.mouse.move(x - 3, y - 3)  # a move onto the point, even when the mouse already rests there
        page.mouse.move(x, y)
        try:
            page.wait_for_function(_HOVERED, arg=[key, trace_name, index], timeout=5_000, polling=25)
            return x, y
        except PlaywrightTimeout:
            if attempt == HOVER_TRIES - 1:
                raise
    raise AssertionError("unreachable")


def click_point(page, key: str, trace_name: str, index: int) -> None:
    """Hover point `index` of the named trace until plotly has it, click it, and wait for the rerun it starts.

    A click that within 10 s neither started a run nor changed the point's selection is made again, hover first (a CI
    run on a slow host once lost one: the picker never heard of it). Every chart clicked here selects on click, so a
    click that took always changes the selection and starts a run. Whether one started is read from the runs' start
    times, not from the last input: after the walkthrough's tile click, the last input stayed later than any run's
    start (a wait for "a run since the last input" timed out while the click had taken)."""
    wait_for_figure(page, key)
    page.locator(f".st-key-{key}").scroll_into_view_if_needed()
    wait_for_charts(page)
    for attempt in range(CLICK_TRIES):
        x, y = _hover_point(page, key, trace_name, index)
        before = [page.evaluate(_LAST_START), page.evaluate(_SELECTED, [key, trace_name, index])]
        page.mouse.click(x, y)
        try:
            page.wait_for_function(
                _CLICK_TOOK, arg=[key, trace_name, index, *before], timeout=10_000, polling=50
            )
            break
        except PlaywrightTimeout:
            if attempt == CLICK_TRIES - 1:
                raise AssertionError(
                    f"{CLICK_TRIES} clicks on {trace_name}[{index}] of {key} started no run"
                ) from None
    wait_for_idle(page)


def click_model_view_tile(page, layer: int, head: int, num_heads: int, key: str = "model_view") -> None:
    """Click the centre of one tile of the model view and wait for the rerun it triggers."""
    click_point(page, key, PICKER_NAME, layer * num_heads + head)


def go_to(page, title: str) -> None:
    """Switch page through the sidebar navigation (same session, so the inputs stay)."""
    page.locator('[data-testid="stSidebarNav"] a', has_text=title).first.click()
    wait_for_idle(page)


def choose_option(page, key: str, label: str) -> None:
    """Open the selectbox with this key, click the option that reads `label`, and wait for the rerun."""
    page.locator(f".st-key-{key} input[role='combobox']").click()
    page.get_by_role("option", name=label, exact=True).click()
    wait_for_idle(page)


# Shown tick labels of one axis of the figure under `.st-key-<key>`, in screen order (top to bottom, left to
# right). The DOM keeps category order, which a reversed axis (highest bar on top) shows bottom-up, and
# keeps labels plotly hid (zero-sized), such as a last tick that would stick out of the plot.
_TICK_LABELS = """([key, axis]) => {
  const shown = [...document.querySelectorAll(`.st-key-${key} .${axis}axislayer-above text`)]
    .map(e => [e, e.getBoundingClientRect()]).filter(([, r]) => r.width > 0 && r.height > 0);
  const place = r => axis === 'y' ? r.top : r.left;
  return shown.sort(([, a], [, b]) => place(a) - place(b)).map(([e]) => e.textContent);
}"""


def tick_labels(page, key: str, axis: str = "y") -> list[str]:
    """The tick labels a plotly chart shows on its x or y axis, in the order a user reads them."""
    return page.evaluate(_TICK_LABELS, [key, axis])


def selected_option(page, key: str) -> str:
    """The text a selectbox with this key shows."""
    return page.locator(f".st-key-{key} input[role='combobox']").input_value().strip()
