"""Issue 35: exported files open from file:// in chromium with every other request failed, draw their figures, change
them with their pickers and the arrow keys, offer SVG, show hostile sentences as text, and attempt no request."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from bertviz_lite.export import About, head_view, lesson_html, lesson_trace, view_html
from bertviz_lite.inspection import walkthrough as walk
from bertviz_lite.loading.pretrained import DEFAULT_MODEL, load
from devtools.server import ARTIFACTS, REPO
from pages_app.common._sidebar import DEFAULTS
from tests.browser.driver import NEEDS_DEFAULT_MODEL, go_to, open_page, wait_for_figure

pytestmark = [pytest.mark.browser, NEEDS_DEFAULT_MODEL]

# 30 tokens with minilm-english: the pair whose lesson size the docs state (goal: under 5 MB).
TEXT_A = "The quick brown fox jumps over the lazy dog near the river bank."
TEXT_B = "It was tired after running all day in the hot summer sun."
HOSTILE_A = "<img src=x onerror=alert(1)> [Log in again](https://evil.example/login) the cat sat"
HOSTILE_B = "</script><script>alert(2)</script> it slept"
FIVE_MB = 5 * 1024 * 1024

DRAWN = """element => !!(element._fullData && element._fullData.length &&
  element.querySelector('.scatterlayer .trace, .heatmaplayer image, .barlayer .trace'))"""
# The head view's line traces of the figure, as "head:points" per trace: changes with the layer picked.
LINES = """element => element.data.filter(t => t.mode === 'lines').map(t => t.meta.head + ':' + t.y.length).join()"""
# Waits poll every POLL_MS, not on every animation frame (Playwright's default): a frame-by-frame poll keeps
# chromium drawing frames all through the wait (~0.1 CPU-s a second of waiting).
POLL_MS = 25


class Offline:
    """A tab that opens files with every non-file: request failed and counted, and every dialog counted.

    One for the module (`offline_file`): a new browser context costs chromium 2-3 CPU-s, and each file opens as a new
    document all the same; `open` starts the counts afresh."""

    def __init__(self, browser):
        self.context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
        self.page = self.context.new_page()
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("dialog", lambda dialog: (self.dialogs.append(dialog.message), dialog.dismiss()))
        self.page.route("**/*", self._only_files)

    def open(self, path: Path) -> Offline:
        """Open the file as a new document (no fragment: never a jump within the last one), counts at zero."""
        self.requests.clear()
        self.dialogs.clear()
        self.page.goto(path.as_uri())
        self.page.wait_for_function("document.body.dataset.ready === 'true'", timeout=60_000, polling=POLL_MS)
        return self

    @staticmethod
    def _only_files(route) -> None:
        (route.continue_ if route.request.url.startswith("file:") else route.abort)()

    def figure(self, selector: str):
        """The plotly figure under selector, once drawn."""
        element = self.page.locator(selector).first
        self.page.wait_for_function(DRAWN, arg=element.element_handle(), timeout=20_000, polling=POLL_MS)
        return element

    def attempted(self) -> list[str]:
        return [url for url in self.requests if not url.startswith("file:")]


@pytest.fixture(scope="module")
def offline_file(browser):
    """`offline_file(path)`: the module's Offline tab with this file open."""
    tab = Offline(browser)
    yield tab.open
    tab.context.close()


@pytest.fixture(scope="module")
def minilm():
    return load(DEFAULT_MODEL)


@pytest.fixture(scope="module")
def pair_trace(minilm):
    """The pair traced once for the module: the lesson and the head view's file read it, neither changes it."""
    model, tokenizer = minilm
    return lesson_trace(model, tokenizer, TEXT_A, TEXT_B)


@pytest.fixture(scope="module")
def lesson_file(pair_trace, tmp_path_factory) -> Path:
    trace = pair_trace
    assert trace.num_tokens == 30
    path = tmp_path_factory.mktemp("export") / "lesson.html"
    path.write_text(lesson_html(trace, About(DEFAULT_MODEL, TEXT_A, TEXT_B)), encoding="utf-8")
    return path


def _pick(offline: Offline, step: int, picker: str, value: str) -> None:
    offline.page.locator(f"#step-{step} select[data-picker='{picker}']").select_option(value)


def _changes(offline: Offline, element, script: str, act) -> None:
    """act() must change what `script` reads from the figure."""
    before = element.evaluate(script)
    act()
    offline.page.wait_for_function(
        f"([e, b]) => ({script})(e) !== b", arg=[element.element_handle(), before], polling=POLL_MS
    )


def test_a_view_export_draws_changes_with_its_pickers_and_offers_svg_offline(
    offline_file, pair_trace, tmp_path
):
    path = tmp_path / "head_view.html"
    path.write_text(view_html(head_view(pair_trace), About(DEFAULT_MODEL, TEXT_A, TEXT_B)), encoding="utf-8")
    offline = offline_file(path)
    figure = offline.figure(".bvl-figure")
    _changes(
        offline, figure, LINES, lambda: offline.page.locator("select[data-picker='layer']").select_option("0")
    )
    offline.page.locator("select[data-picker='head']").select_option("2")
    offline.page.wait_for_function(
        "e => e.data.filter(t => t.meta && t.meta.head !== undefined)"
        ".every(t => (t.meta.head === 2) === (t.visible !== 'legendonly'))",
        arg=figure.element_handle(),
        polling=POLL_MS,
    )
    page = offline.page
    page.wait_for_function(
        "e => e.__bvlHighlight", arg=figure.element_handle(), polling=POLL_MS
    )  # the head view's hover script
    x, y = figure.evaluate(
        """e => { const t = e._fullData.find(d => d.name === 'queries'), xa = e._fullLayout.xaxis;
        const ya = e._fullLayout.yaxis, box = e.getBoundingClientRect();
        return [box.left + xa._offset + xa.d2p(t.x[3]), box.top + ya._offset + ya.d2p(t.y[3])]; }"""
    )
    page.mouse.move(x, y)
    page.wait_for_function(
        "e => e.querySelectorAll('.bvl-highlight path').length > 0",
        arg=figure.element_handle(),
        polling=POLL_MS,
    )
    colours = figure.evaluate(
        "e => [...new Set([...e.querySelectorAll('.bvl-highlight path')].map(p => p.style.stroke))]"
    )
    assert len(colours) == 1  # the lines of head 2 alone: the heads the picker hid stay hidden
    svg = figure.locator(".modebar-btn[data-title='Download plot as SVG']")
    expect(svg).to_have_count(1)
    figure.hover()
    with offline.page.expect_download() as download:
        svg.click()
    assert download.value.suggested_filename == "head_view.svg"
    assert Path(download.value.path()).read_text(encoding="utf-8").lstrip().startswith("<svg")
    assert offline.attempted() == [] and offline.dialogs == []


def test_a_lesson_steps_through_every_step_with_the_keyboard_offline(offline_file, lesson_file):
    assert lesson_file.stat().st_size < FIVE_MB
    offline = offline_file(lesson_file)
    page = offline.page
    count = len(walk.STEPS)
    for number in range(1, count + 1):
        expect(page.locator("#bvl-counter")).to_have_text(f"Step {number} of {count}")
        expect(page.locator(f"#step-{number}")).to_be_visible()
        expect(page.locator(".bvl-step:visible")).to_have_count(1)
        for area in page.locator(f"#step-{number} .bvl-figure:visible").all():
            offline.figure(f"#step-{number} .bvl-figure[data-area='{area.get_attribute('data-area')}']")
        page.keyboard.press("ArrowRight")
    expect(page.locator("#bvl-counter")).to_have_text(f"Step {count} of {count}")  # the last step stays
    page.keyboard.press("PageUp")
    page.keyboard.press("PageUp")
    expect(page.locator("#bvl-counter")).to_have_text(f"Step {count - 2} of {count}")
    page.screenshot(path=str(ARTIFACTS / "export_lesson_step7.png"))
    assert offline.attempted() == [] and offline.dialogs == []


def test_a_lessons_question_reveals_its_answer_and_its_pickers_change_the_figures(offline_file, lesson_file):
    offline = offline_file(lesson_file)
    page = offline.page
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    ask = page.locator("#step-4 .bvl-ask")
    expect(ask.locator(".bvl-prompt")).to_contain_text(
        "Which token will [MASK] (13) attend to most in layer 3, head 0?"
    )
    expect(ask.locator(".bvl-revealed")).to_be_hidden()
    ask.locator(".bvl-options input").first.check()
    ask.locator(".bvl-reveal-button").click()
    expect(ask.locator(".bvl-verdict")).to_contain_text("In layer 3, head 0, [MASK] (13) gives")
    stages = offline.figure("#step-4 .bvl-revealed .bvl-figure")
    expect(stages.locator(".gtitle")).to_contain_text("Layer 3, head 0")
    _pick(offline, 4, "head", "5")
    expect(ask.locator(".bvl-revealed")).to_be_hidden()  # a new question: the old answer does not carry over
    expect(ask.locator(".bvl-prompt")).to_contain_text("layer 3, head 5?")
    ask.locator(".bvl-reveal-button").click()  # no guess: the model's answer all the same
    expect(ask.locator(".bvl-verdict")).to_contain_text("No guess made. In layer 3, head 5,")
    expect(stages.locator(".gtitle")).to_contain_text("Layer 3, head 5")

    page.keyboard.press("ArrowRight")
    lines = offline.figure("#step-5 .st-key-head_view .bvl-figure")
    _changes(offline, lines, LINES, lambda: _pick(offline, 5, "layer", "1"))
    grid = offline.figure("#step-5 .bvl-figure[data-area]")
    grid.scroll_into_view_if_needed()
    picked = "() => document.querySelector(\"#step-5 select[data-picker='layer']\").value === '4'"
    _click_tile(page, grid, 4 * 12 + 7, took=picked)  # the tile of layer 4, head 7
    expect(page.locator("#step-5 select[data-picker='layer']")).to_have_value("4")
    expect(page.locator("#step-5 select[data-picker='head']")).to_have_value("7")
    page.wait_for_function(
        "e => e.data.filter(t => t.meta && t.meta.head !== undefined && t.visible !== 'legendonly')"
        ".every(t => t.meta.head === 7)",
        arg=lines.element_handle(),
        polling=POLL_MS,
    )
    assert offline.attempted() == [] and offline.dialogs == []


def _click_tile(page, grid, index: int, took: str, tries: int = 4) -> None:
    """Click tile `index` of the figure `grid` until the JS predicate `took` holds.

    Each try reads the tile's place again (the page may still lay itself out after a scroll), waits for plotly to
    report the tile hovered, clicks, and waits up to 5 s for `took`: a click on a tile picks the same layer and head
    however often it is made."""
    for attempt in range(tries):
        point = grid.evaluate(
            """(e, i) => { const t = e._fullData.find(d => d.name === 'tile picker');
            const xa = e._fullLayout.xaxis, ya = e._fullLayout.yaxis, box = e.getBoundingClientRect();
            return [box.left + xa._offset + xa.l2p(t.x[i]), box.top + ya._offset + ya.l2p(t.y[i])]; }""",
            index,
        )
        page.mouse.move(point[0] - 3, point[1] - 3)
        page.mouse.move(*point)
        try:
            page.wait_for_function(
                "([e, i]) => (e._hoverdata || []).some(p => p.data.name === 'tile picker' && p.pointNumber === i)",
                arg=[grid.element_handle(), index],
                timeout=5_000,
                polling=POLL_MS,
            )
            page.mouse.click(*point)
            page.wait_for_function(took, timeout=5_000, polling=POLL_MS)
            return
        except PlaywrightTimeout:
            if attempt == tries - 1:
                raise


def test_a_command_line_export_with_hostile_sentences_opens_offline_as_text(offline_file, tmp_path):
    out = tmp_path / "cli.html"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bertviz_lite.export",
            "--a",
            HOSTILE_A,
            "--b",
            HOSTILE_B,
            "--model",
            "demo-tiny",
        ]
        + ["--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stderr
    offline = offline_file(out)
    page = offline.page
    expect(page.locator("header q").nth(0)).to_have_text(HOSTILE_A)
    expect(page.locator("header q").nth(1)).to_have_text(HOSTILE_B)
    assert page.locator("img").count() == 0 and page.locator("a[href]").count() == 0
    page.keyboard.press("ArrowRight")
    offline.figure("#step-2 .bvl-figure")
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    lines = offline.figure("#step-5 .st-key-head_view .bvl-figure")
    _changes(offline, lines, LINES, lambda: _pick(offline, 5, "layer", "0"))
    assert offline.attempted() == [] and offline.dialogs == []


def test_the_apps_buttons_give_svg_and_files_that_work_offline(streamlit_url, page, offline_file, tmp_path):
    open_page(
        page, streamlit_url, "Attention?tab=Head+view"
    )  # the link opens the tab: no heatmap drawn first
    wait_for_figure(page, "head_view")
    chart = page.locator(".st-key-head_view .js-plotly-plot")
    chart.scroll_into_view_if_needed()
    chart.hover()
    svg = chart.locator(".modebar-btn[data-title='Download plot as SVG']")  # added beside PNG within 0.5 s
    with page.expect_download() as download:
        svg.click()
    assert download.value.suggested_filename == "head_view.svg"
    assert Path(download.value.path()).read_text(encoding="utf-8").lstrip().startswith("<svg")
    expect(chart.locator(".modebar-btn[data-title^='Download plot as a']")).to_have_count(1)  # PNG stays

    with page.expect_download(timeout=120_000) as download:
        page.locator(".st-key-head_view_html button").click()
    view_file = tmp_path / download.value.suggested_filename
    download.value.save_as(view_file)
    offline = offline_file(view_file)
    figure = offline.figure(".bvl-figure")
    _changes(
        offline, figure, LINES, lambda: offline.page.locator("select[data-picker='layer']").select_option("5")
    )
    expect(offline.page.locator("header q").first).to_have_text(DEFAULTS["sentence_a"])
    assert offline.attempted() == [] and offline.dialogs == []

    go_to(page, "Walkthrough")  # the main page, in the same session: no second page load
    with page.expect_download(timeout=120_000) as download:
        page.locator(".st-key-walk_lesson_html button").click()
    assert download.value.suggested_filename == "walkthrough.html"
    lesson = tmp_path / "walkthrough.html"
    download.value.save_as(lesson)
    offline = offline_file(lesson)
    for number in range(1, len(walk.STEPS) + 1):
        expect(offline.page.locator("#bvl-counter")).to_have_text(f"Step {number} of {len(walk.STEPS)}")
        offline.page.keyboard.press("ArrowRight")
    assert offline.attempted() == [] and offline.dialogs == []
