"""Driving the app in chromium: type into the sidebar, wait for a run to finish, wait for a plotly figure.

Used by tests/browser/. The basic actions (type, wait for the run, open a page or a tab) live in
bench/_server.py, which bench/page_latency.py uses too; they are re-exported here.
"""

from __future__ import annotations

from bench._server import IDLE, open_page, open_tab, type_into, wait_for_idle  # noqa: F401 (re-exported)

EXCEPTION = '[data-testid="stException"]'

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
    page.set_viewport_size({"width": size["width"], "height": int(min(max(height, size["height"]), max_height))})
    page.wait_for_timeout(400)  # plotly charts re-lay themselves out after the resize
    page.screenshot(path=str(path))
    page.set_viewport_size(size)


# Page coordinates of point `index` of the trace named `name` in the figure under `.st-key-<key>`.
_POINT_XY = """([key, name, index]) => {
  const gd = document.querySelector(`.st-key-${key} .js-plotly-plot`);
  const trace = gd._fullData.find(t => t.name === name);
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
  const box = gd.getBoundingClientRect();
  return [box.left + xa._offset + xa.d2p(trace.x[index]), box.top + ya._offset + ya.d2p(trace.y[index])];
}"""


def click_model_view_tile(page, layer: int, head: int, num_heads: int, key: str = "model_view") -> None:
    """Click the centre of one tile of the model view and wait for the rerun it triggers."""
    page.locator(f".st-key-{key}").scroll_into_view_if_needed()
    x, y = page.evaluate(_POINT_XY, [key, "tile picker", layer * num_heads + head])
    page.mouse.move(x, y)
    page.wait_for_timeout(200)
    page.mouse.click(x, y)
    wait_for_idle(page)


def click_point(page, key: str, trace_name: str, index: int) -> None:
    """Click point `index` of the named trace of a plotly chart, then wait for the rerun."""
    page.locator(f".st-key-{key}").scroll_into_view_if_needed()
    x, y = page.evaluate(_POINT_XY, [key, trace_name, index])
    page.mouse.move(x, y)
    page.wait_for_timeout(200)
    page.mouse.click(x, y)
    wait_for_idle(page)


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
