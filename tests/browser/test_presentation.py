"""Presentation mode and shared links in a real browser: figures above the fold at 1280×720, links reproduce views.

Screenshots of every explore page and walkthrough step at 1280×720 and 1024×768 go to tests/artifacts/.
"""

from __future__ import annotations

import contextlib
import itertools
import shutil
from dataclasses import dataclass
from urllib.parse import parse_qs, quote, urlparse

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect

from bertviz_lite.inspection import walkthrough as walk
from bertviz_lite.inspection.walkthrough import STEPS
from bertviz_lite.loading.pretrained import DEFAULT_MODEL
from devtools.server import ARTIFACTS
from tests.browser.driver import (
    EXCEPTION,
    NEEDS_DEFAULT_MODEL,
    assert_no_exception,
    choose_option,
    click_model_view_tile,
    exception_shown,
    go_to,
    open_page,
    open_tab,
    resize,
    selected_option,
    wait_for_charts,
    wait_for_figure,
    wait_for_idle,
)

pytestmark = [pytest.mark.browser, NEEDS_DEFAULT_MODEL]

EXPLORE = {
    "Tokens": "tokens",
    "Embeddings": "embeddings",
    "Attention": "attention",
    "Predictions": "predictions",
    "Beyond_attention": "beyond_attention",
    "Meaning_in_context": "meaning_in_context",
}
QUESTION_STEPS = {"one_head", "mlm", "nsp"}
NO_FIGURE_STEPS = {"build"}  # the last step's content is its link to the Build section
# Top and height of the first figure in the main area: a plotly chart, or the token chips (an HTML figure).
# Charts are drawn one by one, so the first chart element is found first and then waited for.
_FIGURE_BOX = """() => {
  const el = document.querySelector('[data-testid="stMain"] [data-testid="stPlotlyChart"], [data-testid="stMain"] .bvl-chips');
  if (!el) return null;
  const gd = el.classList.contains('bvl-chips') ? el : el.querySelector('.js-plotly-plot');
  if (!gd || (gd !== el && !gd._fullLayout)) return null;
  const box = gd.getBoundingClientRect();
  return [box.top, box.height];
}"""


# Pairs of text boxes that overlap in any plotly figure on the page: figure title, subplot titles, axis titles,
# colour bars and tick labels (tick labels of one axis against each other are not compared).
_OVERLAPS = """() => {
  const boxes = [];
  const add = (el, kind, group) => {
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.height > 0) boxes.push({kind, group, text: (el.textContent || kind).slice(0, 30), r});
  };
  document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot').forEach((gd, g) => {
    gd.querySelectorAll('.gtitle').forEach(e => add(e, 'title', g));
    gd.querySelectorAll('.annotation-text').forEach(e => add(e, 'subplot title', g));
    gd.querySelectorAll('.g-xtitle text, .g-ytitle text, '
                        + '[class*="g-x"][class*="title"] text, [class*="g-y"][class*="title"] text')
      .forEach(e => add(e, 'axis title', g));
    gd.querySelectorAll('.colorbar').forEach(e => add(e, 'colour bar', g));
    gd.querySelectorAll('.xaxislayer-above, .yaxislayer-above').forEach((layer, a) =>
      layer.querySelectorAll('text').forEach(e => add(e, 'tick' + a, g)));
  });
  const hit = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  const found = [];
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const a = boxes[i], b = boxes[j];
    if (a.group !== b.group || (a.kind.startsWith('tick') && b.kind.startsWith('tick'))) continue;
    if (a.kind === 'colour bar' && b.kind === 'colour bar') continue;
    if (hit(a.r, b.r)) found.push(`${a.kind} "${a.text}" / ${b.kind} "${b.text}"`);
  }
  return found;
}"""


def overlaps(page) -> list[str]:
    """Overlapping texts in the page's figures (empty when every title, axis title and colour bar is clear)."""
    return page.evaluate(_OVERLAPS)


def figure_box(page) -> tuple[float, float]:
    """(top, height) in pixels of the main figure, once it is drawn."""
    wait_for_idle(page)
    handle = page.wait_for_function(_FIGURE_BOX, timeout=60_000, polling=50)
    return tuple(handle.json_value())


def reveal(page) -> None:
    """Answer the step's question (the first option) and reveal the model's answer."""
    page.locator('[data-testid="stMain"] [data-testid="stRadio"] [role="radiogroup"] label').first.click()
    wait_for_idle(page)
    page.get_by_role("button", name="Reveal the model's answer").click()
    wait_for_idle(page)
    verdict = page.locator('[data-testid="stMain"] [data-testid="stAlert"]').first.inner_text()
    assert verdict.startswith(("Right!", "Not this time: you said")), verdict


SIZES = [(1280, 720), (1024, 768), (1920, 1080)]


def resize_to(page, width: int, height: int) -> None:
    """resize(), with no new viewport where it has this size already (the figures only waited for)."""
    if page.viewport_size == {"width": width, "height": height}:
        wait_for_charts(page)
    else:
        resize(page, width, height)


SLIDE_SIZES = [(1280, 720), (1024, 768)]  # a projector's screens: the whole key figure must show on them


def look_at_every_size(page, name: str, tops: dict, found: dict, sizes=SIZES) -> None:
    """At each screen size (in this order): the main figure's top and bottom, a screenshot, and any overlapping
    figure texts."""
    for width, height in sizes:
        resize_to(page, width, height)
        top, figure_height = figure_box(page)
        tops[(width, height)][name] = (top, top + figure_height)
        if (width, height) == SLIDE_SIZES[
            0
        ]:  # the projector's slide, to look at; the other sizes are measured
            page.screenshot(path=str(ARTIFACTS / f"present_{width}x{height}_{name}.png"))
        if overlaps(page):
            found[f"{name} {width}x{height}"] = overlaps(page)


CODE = '[data-testid="stMain"] [data-testid="stCode"]'  # the code panel's source blocks
# Top and bottom of the element with this key (the code panel's toggle), or null while it is not drawn.
_KEY_BOX = """key => {
  const el = document.querySelector(`.st-key-${key}`);
  if (!el) return null;
  const box = el.getBoundingClientRect();
  return [box.top, box.bottom];
}"""


def key_box(page, key: str) -> tuple[float, float]:
    return tuple(page.wait_for_function(_KEY_BOX, arg=key, timeout=30_000, polling=50).json_value())


@dataclass
class SlideStep:
    """What one walkthrough step showed in presentation mode (walk_the_slides)."""

    name: str  # step<number>_<key>
    key: str
    figure: dict  # (width, height): (top, bottom) of the key figure in px; empty for the step without one
    overlapping: dict  # (width, height): the figure texts that overlap, where some do
    toggle: tuple  # the code panel's toggle: (checked, text, top, bottom) at 1280x720
    code_blocks: int  # source blocks shown on the slide
    exception: str | None


@dataclass
class OpenedPanel:
    """The code panel of one slide, toggled on after its step was measured (walk_the_slides)."""

    step: str
    blocks: list[str]  # the source blocks' texts
    exception: str | None


@dataclass
class SlideWalk:
    steps: list[SlideStep]
    build_link_shown: bool  # the last step's link to the Build section
    opened: OpenedPanel  # step 4's panel opened: q, k, v, scores, softmax


OPENED_PANEL_STEP = (
    "one_head"  # opened at the end of its visit, at 1280x720: the next steps have panels of their own
)


def open_slide_panel(page, step: str) -> OpenedPanel:
    """Toggle this step's code panel on (on a 1280x720 slide) and read its source blocks."""
    resize_to(page, *SLIDE_SIZES[0])
    page.locator(f".st-key-code_walk_{step} label").click()
    wait_for_idle(page)
    with contextlib.suppress(PlaywrightTimeoutError):  # fewer blocks: the test that reads them says so
        page.locator(CODE).nth(1).wait_for(timeout=20_000)
    blocks = page.locator(CODE).all_inner_texts()
    if blocks:
        page.locator(CODE).nth(len(blocks) - 1).scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / f"code_panel_1280x720_open_{step}.png"))
    return OpenedPanel(step, blocks, exception_shown(page))


def walk_the_slides(page, base_url: str) -> SlideWalk:
    """Every walkthrough step in presentation mode from ?present=1 on a 1280x720 screen, its question answered and
    the answer revealed: the key figure measured at each of SIZES (a screenshot at 1280x720) and the code panel's
    toggle; then step 4's panel opened (OPENED_PANEL_STEP). Walked once for the tests of the figures and of the code
    panel (the `slide_walk` fixture)."""
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(page, base_url, "?present=1")
    # Every other step goes through the sizes backwards: it starts at the size the one before ended at, a resize
    # (a relayout of the page and its figures) fewer each.
    orders = itertools.cycle([SIZES, SIZES[::-1]])
    steps = []
    opened = OpenedPanel(OPENED_PANEL_STEP, [], None)
    for number, step in enumerate(STEPS, start=1):
        if step.key in QUESTION_STEPS:
            reveal(page)
        seen = SlideStep(f"step{number}_{step.key}", step.key, {}, {}, (), 0, None)
        toggle_key = f"code_walk_{step.key}"
        shot = ARTIFACTS / f"code_panel_1280x720_step{number}_{step.key}.png"
        if step.key in NO_FIGURE_STEPS:
            resize_to(page, *SLIDE_SIZES[0])
            toggle_box = key_box(page, toggle_key)
            page.screenshot(path=str(shot))
        else:
            figure_box(page)
            for width, height in next(orders):
                resize_to(page, width, height)
                top, figure_height = figure_box(page)
                seen.figure[(width, height)] = (top, top + figure_height)
                if (width, height) == SLIDE_SIZES[0]:  # the projector's slide, to look at
                    toggle_box = key_box(page, toggle_key)
                    page.screenshot(path=str(shot))
                    shutil.copyfile(shot, ARTIFACTS / f"present_{width}x{height}_{seen.name}.png")
                if overlaps(page):
                    seen.overlapping[(width, height)] = overlaps(page)
        toggle = page.locator(f".st-key-{toggle_key}")
        seen.toggle = (toggle.locator("input").is_checked(), toggle.inner_text(), *toggle_box)
        seen.code_blocks = page.locator(CODE).count()
        if page.locator(EXCEPTION).count():
            seen.exception = page.locator(EXCEPTION).first.inner_text()
        steps.append(seen)
        if step.key == OPENED_PANEL_STEP:
            opened = open_slide_panel(page, step.key)
        if number < len(STEPS):
            page.get_by_role("button", name="Next").click()
            wait_for_idle(page)
    build = page.get_by_role("link", name="Build: check your own BERT")
    with contextlib.suppress(PlaywrightTimeoutError):
        build.wait_for(state="visible", timeout=20_000)
    return SlideWalk(steps, build.is_visible(), opened)


def test_presentation_mode_shows_every_key_figure_whole_like_a_slide(streamlit_url, page, slide_walk):
    """Every walkthrough step (after Reveal) and every explore page's default view: the key figure's top and
    bottom within the screen at 1280x720 and 1024x768, without scrolling."""
    tops: dict = {size: {} for size in SIZES}
    found: dict = {}
    for step in slide_walk.steps:
        for size, box in step.figure.items():
            tops[size][step.name] = box
        found.update(
            {f"{step.name} {width}x{height}": texts for (width, height), texts in step.overlapping.items()}
        )
        assert step.exception is None, f"{step.name}: {step.exception}"
    page.set_viewport_size({"width": 1280, "height": 720})
    orders = itertools.cycle([SIZES, SIZES[::-1]])  # as in walk_the_slides: a resize fewer each page
    for title, path in EXPLORE.items():
        if page.url.startswith(streamlit_url):
            # The folded sidebar's link: a rerun in the same session, not a page load (half the CPU). Nothing is
            # picked on the way, so each page shows its default view.
            link = page.locator('[data-testid="stSidebarNav"] a', has_text=title.replace("_", " ")).first
            link.dispatch_event("pointerdown")  # an input, for wait_for_idle to wait for the run it starts
            link.dispatch_event("click")
            page.wait_for_function(
                "path => location.pathname === path", arg=f"/{title}", timeout=30_000, polling=50
            )
            wait_for_idle(page)
            assert "present=1" in page.url, page.url  # still presentation mode
        else:
            open_page(page, streamlit_url, f"{title}?present=1")
        figure_box(page)
        look_at_every_size(page, path, tops, found, next(orders))
        assert_no_exception(page)
    for (width, height), by_view in tops.items():
        (ARTIFACTS / f"present_{width}x{height}_figure_boxes.txt").write_text(
            "".join(
                f"{name}: top {top:.0f} px, bottom {bottom:.0f} px of {height}\n"
                for name, (top, bottom) in by_view.items()
            ),
            encoding="utf-8",
        )
    low = {name: top for name, (top, _) in tops[(1280, 720)].items() if not 0 <= top <= 720 - 200}
    assert not low, f"figure tops below 520 px at 1280x720 (at least 200 px of figure must show): {low}"
    cut = {
        f"{name} {width}x{height}": round(bottom)
        for width, height in SLIDE_SIZES
        for name, (_, bottom) in tops[(width, height)].items()
        if bottom > height
    }
    assert not cut, f"figure bottoms below the screen (scrolling needed): {cut}"
    assert not found, found


# The other tabs of the two pages with pickers above their figures, and each figure's widget key.
OTHER_TABS = {
    "Attention": {"Neuron view": "neuron_view", "Head statistics": "head_statistics", "Rollout": "rollout"},
    "Beyond_attention": {
        "Attribution": "beyond_attribution",
        "Head knock-out": "beyond_knockout",
        "Layer by layer": "beyond_logit_lens",
    },
}
# [top, bottom] of each y tick label of the figure under `.st-key-<key>`, top to bottom, in page pixels.
_Y_TICKS = """key => [...document.querySelectorAll(`.st-key-${key} .yaxislayer-above text`)]
  .map(e => e.getBoundingClientRect()).map(r => [r.top, r.bottom]).sort((a, b) => a[0] - b[0])"""


def go_to_folded(page, title: str) -> None:
    """Open another page through the folded sidebar's link in presentation mode: a rerun in the same session, not a
    page load (half the CPU)."""
    link = page.locator('[data-testid="stSidebarNav"] a', has_text=title.replace("_", " ")).first
    link.dispatch_event("pointerdown")  # an input, for wait_for_idle to wait for the run it starts
    link.dispatch_event("click")
    page.wait_for_function("path => location.pathname === path", arg=f"/{title}", timeout=30_000, polling=50)
    wait_for_idle(page)
    assert "present=1" in page.url, f"{title}: presentation mode lost on the way: {page.url}"


def test_presentation_mode_fits_every_tab_on_a_slide(streamlit_url, page):
    """Each tab's figure starts high and ends on a 1280x720 screen (its pickers go below it), with no figure
    text on another and the attribution's token labels apart. One page load: the second page is reached through
    the folded sidebar (what is claimed is each tab's figure, not the page load)."""
    page.set_viewport_size({"width": 1280, "height": 720})
    for title, tabs in OTHER_TABS.items():
        if page.url.startswith(streamlit_url):
            go_to_folded(page, title)
        else:  # the link opens the first tab itself: the default tab is not computed and drawn on the way
            open_page(page, streamlit_url, f"{title}?present=1&tab={quote(next(iter(tabs)))}")
        boxes = {}
        found = {}
        for tab, key in tabs.items():
            if page.get_by_role("tab", name=tab).get_attribute("aria-selected") != "true":
                open_tab(page, tab)
            wait_for_figure(page, key)
            top, height = figure_box(page)
            boxes[tab] = (round(top), round(top + height))
            page.screenshot(path=str(ARTIFACTS / f"present_1280x720_{key}.png"))
            if overlaps(page):
                found[tab] = overlaps(page)
            if key == "beyond_attribution":  # read while it is shown: no second visit to its tab
                ticks = page.evaluate(_Y_TICKS, key)
            assert_no_exception(page)
        assert all(top <= 720 - 200 and bottom <= 720 for top, bottom in boxes.values()), (title, boxes)
        assert not found, (title, found)
    assert len(ticks) == 22, ticks  # every token of the default pair
    assert all(b[0] >= a[1] - 0.25 * (a[1] - a[0]) for a, b in zip(ticks, ticks[1:], strict=False)), ticks


A = "The quick brown fox jumps over the lazy dog."
B = "It was not amused at all."


class HeldScripts:
    """Requests for the scripts matching these CDP URL patterns held unanswered until release(), and every URL the
    page asks for, through a DevTools session of the test's own, detached when the `with` block ends: nothing
    outlives the test, so the kept tab serves and no new browser context is needed (2-2.8 CPU-s of chromium). The
    cache is off meanwhile: a script the tab loaded before is asked for again."""

    def __init__(self, page, patterns: list[str]):
        self.held: list[str] = []
        self.asked: list[str] = []
        self.devtools = page.context.new_cdp_session(page)
        self.devtools.on("Fetch.requestPaused", lambda event: self.held.append(event["requestId"]))
        self.devtools.on(
            "Network.requestWillBeSent", lambda event: self.asked.append(event["request"]["url"])
        )
        self.devtools.send("Network.enable")
        self.devtools.send("Network.setCacheDisabled", {"cacheDisabled": True})
        patterns = [{"urlPattern": pattern, "requestStage": "Request"} for pattern in patterns]
        self.devtools.send("Fetch.enable", {"patterns": patterns})
        self.holding = True

    def release(self) -> None:
        """Answer the held requests, and hold no more."""
        for request in self.held:
            self.devtools.send("Fetch.continueRequest", {"requestId": request})
        self.devtools.send("Fetch.disable")
        self.holding = False

    def __enter__(self) -> HeldScripts:
        return self

    def __exit__(self, *failure) -> None:
        if self.holding:
            self.release()
        self.devtools.detach()


# The code of the sidebar's toggle and text boxes, which the browser loads when it first draws one.
SIDEBAR_WIDGET_CODE = ["*/static/js/Checkbox.*.js", "*/static/js/TextInput.*.js"]


def test_a_links_presentation_mode_and_pair_hold_when_the_sidebar_is_drawn_late(streamlit_url, page):
    """A browser still loading the sidebar widgets' code when the second run comes (a tab clicked at once, a busy
    machine) draws them from that run's copy: they must hold the link's values, or the next run turns presentation
    mode off and brings back the default pair (the Beyond attention tabs' figures fell below the slide)."""
    with HeldScripts(page, SIDEBAR_WIDGET_CODE) as scripts:
        page.set_viewport_size({"width": 1280, "height": 720})
        open_page(page, streamlit_url, f"Beyond_attention?present=1&a={quote(A)}")
        open_tab(page, "Attribution")  # the second run, while the toggle and the text boxes are not drawn yet
        assert scripts.held and page.locator(".st-key-present input").count() == 0, scripts.held
    expect(page.locator(".st-key-sentence_a input")).to_have_value(A)
    expect(page.locator(".st-key-present input")).to_be_checked()
    open_tab(page, "Head knock-out")  # a run with the values the browser now sends
    wait_for_figure(page, "beyond_knockout")
    top, height = figure_box(page)
    assert top <= 720 - 200 and top + height <= 720, (top, height)
    expect(page.locator(".st-key-sentence_a input")).to_have_value(A)
    assert_no_exception(page)


def copied_link(page) -> str:
    """The link a visitor copies: open the sidebar's "Copy link to this view" (drawn when opened) and read its box."""
    page.locator('[data-testid="stSidebar"] [data-testid="stExpander"] summary', has_text="Copy link").click()
    code = page.locator('[data-testid="stSidebar"] [data-testid="stCode"] code').first
    code.wait_for(timeout=30_000)
    wait_for_idle(page)
    return code.text_content()


def test_the_url_follows_the_user_and_bad_values_are_tamed(streamlit_url, page):
    open_page(page, streamlit_url, "Attention?model=/etc&layer=99&head=-3&a=" + "word%20" * 1500)
    alerts = " ".join(page.locator('[data-testid="stAlert"]').all_inner_texts())
    assert "does not offer" in alerts and "cut to 2,000" in alerts and "layer 99 shows as 5" in alerts, alerts
    assert selected_option(page, "attn_layer") == "5" and selected_option(page, "attn_head") == "0"
    assert selected_option(page, "model_picker") == DEFAULT_MODEL
    page.locator(".st-key-attn_head input[role='combobox']").click()
    page.get_by_role("option", name="7", exact=True).click()
    wait_for_idle(page)
    page.wait_for_function("() => location.search.includes('head=7')", timeout=10_000, polling=50)
    query = parse_qs(urlparse(page.url).query)
    assert query["layer"] == ["5"] and query["model"] == [DEFAULT_MODEL] and "/etc" not in page.url
    link = copied_link(page)
    assert "head=7" in link and "/Attention?" in link, link
    assert_no_exception(page)


NORMAL_VIEWS = [
    ("Embeddings", None),
    ("Attention", "Heatmap"),
    ("Attention", "Neuron view"),
    ("Attention", "Model view"),
    ("Attention", "Head view"),
    ("Predictions", None),
    ("Beyond_attention", None),
    ("Beyond_attention", "Attribution"),
    ("Beyond_attention", "Layer by layer"),
]


@dataclass
class Expander:
    """The code panel off a slide, on the Attention page's Neuron view at 1280x720 (walk_normal_views)."""

    summaries: int  # expanders titled "The code"
    blocks_folded: int  # source blocks shown before it was opened
    blocks: list[str]  # the source blocks' texts once opened
    exception: str | None


@dataclass
class NormalWalk:
    found: dict  # "<page>/<tab> <width>x<height>": the figure texts that overlap, where some do
    exception: str | None
    expander: Expander


EXPANDER_VIEW = ("Attention", "Neuron view")  # where the code panel's expander is opened, at SLIDE_SIZES[0]


def open_expander(page) -> Expander:
    """Read the folded code panel of the open tab, open it, and read its source blocks."""
    summary = page.locator('[data-testid="stMain"] [data-testid="stExpander"] summary', has_text="The code")
    summaries, folded = summary.count(), page.locator(CODE).count()
    if summaries == 1:
        summary.click()
        wait_for_idle(page)
        with contextlib.suppress(PlaywrightTimeoutError):  # fewer blocks: the test that reads them says so
            page.locator(CODE).nth(1).wait_for(timeout=20_000)
        summary.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "code_panel_1280x720_expander_neuron_view.png"))
    return Expander(summaries, folded, page.locator(CODE).all_inner_texts(), exception_shown(page))


def walk_normal_views(page, base_url: str) -> NormalWalk:
    """Every view of NORMAL_VIEWS in normal mode (one page load, then the sidebar's links and the tabs) at each of
    SIZES: overlapping figure texts, a screenshot at 1024x768; on the way, the code panel's expander of EXPANDER_VIEW
    opened at 1280x720. Walked once for the tests of figure texts and of the code panel off a slide (`normal_walk`)."""
    found = {}
    expander = Expander(0, 0, [], f"{EXPANDER_VIEW} not reached")
    shot_size = (1024, 768)  # measured last or first, so that its screenshot needs no resize of its own
    # Every other view goes through the sizes backwards: it starts at the size the one before ended at, a resize
    # (a relayout of the page and its figures) fewer each.
    forwards = sorted(SIZES, key=lambda size: size == shot_size)
    orders = itertools.cycle([forwards, forwards[::-1]])
    page.set_viewport_size(dict(zip(("width", "height"), forwards[0], strict=True)))  # drawn at it: no resize
    for path, tab in NORMAL_VIEWS:
        if page.url.split("?")[0] != f"{base_url}/{path}":
            if page.url.startswith(base_url):
                go_to(page, path.replace("_", " "))  # the same session: its pair and pickers as they came
            else:
                open_page(page, base_url, path)
        if tab:
            page.get_by_role("tab", name=tab).click()
        figure_box(page)
        for width, height in next(orders):
            resize_to(page, width, height)
            found.update({f"{path}/{tab} {width}x{height}": overlaps(page)} if overlaps(page) else {})
            if (width, height) == shot_size:
                name = f"normal_1024x768_{path.lower()}_{(tab or 'page').lower().replace(' ', '_')}.png"
                page.screenshot(path=str(ARTIFACTS / name))
            if (path, tab) == EXPANDER_VIEW and (width, height) == SLIDE_SIZES[0]:
                expander = open_expander(page)
    return NormalWalk(found, exception_shown(page), expander)


def test_no_figure_text_overlaps_in_normal_mode_at_three_screen_sizes(normal_walk):
    """Read from the walk through the normal views (`normal_walk`) that the code panel's expander test reads too."""
    assert not normal_walk.found, normal_walk.found
    assert normal_walk.exception is None, normal_walk.exception


# The head view's two token columns (each label's [top, bottom], top to bottom), the bottoms of its legend's
# entries that are drawn (plotly clips a legend too tall for the figure) and the figure's bottom, in page pixels.
_HEAD_VIEW_BOXES = """() => {
  const gd = document.querySelector('.st-key-head_view .js-plotly-plot'), r = e => e.getBoundingClientRect();
  const columns = [...gd.querySelectorAll('.scatterlayer .trace')].filter(t => t.querySelector('.textpoint'))
    .map(t => [...t.querySelectorAll('.textpoint text')].map(e => [r(e).top, r(e).bottom]).sort((a, b) => a[0] - b[0]));
  const clip = r(gd.querySelector('.legend .scrollbox') || gd.querySelector('.legend'));
  const entries = [...gd.querySelectorAll('.legend .traces')].map(e => r(e))
    .filter(e => e.bottom <= clip.bottom + 1).map(e => e.bottom);
  return [columns, entries, r(gd).bottom];
}"""


LONG_A = "The quick brown fox jumps over the lazy dog and runs far away into the woods."
LONG_B = "It was not amused at all by the noise."  # with LONG_A: 31 tokens, more than a slide's 22


@pytest.mark.parametrize(
    "pair", ["", f"&a={quote(LONG_A)}&b={quote(LONG_B)}"], ids=["default pair", "31 tokens"]
)
def test_presentation_mode_puts_the_head_view_pickers_below_the_figure(streamlit_url, page, pair):
    page.set_viewport_size({"width": 1280, "height": 720})
    # The link opens the Head view tab itself: the default Heatmap tab is not computed and drawn on the way.
    open_page(page, streamlit_url, f"Attention?present=1&tab=Head+view{pair}")
    expect(page.get_by_role("tab", name="Head view")).to_have_attribute("aria-selected", "true")
    page.wait_for_function(
        "() => document.querySelector('.st-key-head_view .js-plotly-plot')?._fullLayout",
        timeout=30_000,
        polling=50,
    )
    figure_top = page.locator(".st-key-head_view").bounding_box()["y"]
    assert figure_top < 720 - 200, figure_top
    assert page.locator(".st-key-hv_heads").bounding_box()["y"] > figure_top
    labels, legend, bottom = page.evaluate(_HEAD_VIEW_BOXES)
    # 22 tokens: the default pair's, or the first 22 of a longer pair and a slider (below) to move along it
    assert len(labels) == 2 and all(len(column) == 22 for column in labels), labels
    assert page.locator(".st-key-hv_start").count() == (1 if pair else 0)
    # A label's box is its line: 21 px for 16-px text, whose letters take ~16 px; more than a quarter of a box on
    # the next one, and letters touch (the rows were 13 px apart with plotly's default margins).
    crowded = [
        (a, b)
        for column in labels
        for a, b in zip(column, column[1:], strict=False)
        if b[0] < a[1] - 0.25 * (a[1] - a[0])
    ]
    assert not crowded, f"token labels run into each other on a slide: {crowded[:3]}"
    assert len(legend) == 12 and max(legend) <= bottom <= 720, (legend, bottom)  # every head's entry shows
    sidebar = page.locator('[data-testid="stSidebar"]').bounding_box()
    assert sidebar is None or sidebar["x"] + sidebar["width"] <= 1, sidebar  # folded away
    assert_no_exception(page)


# The code of st.button, which the browser loads when it first draws one (after the page's key script has run).
BUTTON_CODE = ["*/static/js/Button.*.js"]


def test_a_clicker_moves_the_walkthrough_and_nothing_is_fetched_from_outside_then_a_tile_click_opens_a_head(
    streamlit_url, page
):
    """Two claims on one page load: a clicker's keys move the walkthrough (from step 5 and back to it), and nothing
    is fetched from outside; then a click on a model view tile of step 5 opens that head in step 4."""
    with HeldScripts(page, BUTTON_CODE) as scripts:
        open_page(page, streamlit_url, "?step=5")
        heading = page.get_by_role("heading", level=2).first
        expect(heading).to_contain_text(f"Step 5 of {len(walk.STEPS)}")
        page.wait_for_function(
            "() => window.__bvlStepKeys === true", timeout=10_000, polling=50
        )  # the page's key script is in
        # A press before the buttons are drawn (~0.4 s after the script here, seconds on a busy machine, as on CI)
        # waits for them: it was lost.
        expect(page.locator(".st-key-walk_next button")).to_have_count(0)
        page.keyboard.press("PageDown")
        assert scripts.held, "the buttons' code was not asked for"
        scripts.release()
        expect(heading).to_contain_text(f"Step 6 of {len(walk.STEPS)}")
        wait_for_idle(page)
        for key, step in (("ArrowRight", 7), ("PageUp", 6), ("ArrowLeft", 5)):
            page.keyboard.press(key)
            expect(heading).to_contain_text(f"Step {step} of {len(walk.STEPS)}")
            wait_for_idle(page)
        page.locator(".st-key-sentence_a input").press("ArrowRight")  # typing in a box moves no step
        wait_for_idle(page)
        expect(heading).to_contain_text(f"Step 5 of {len(walk.STEPS)}")
        assert_no_exception(page)
    outside = [
        url for url in scripts.asked if not url.startswith((streamlit_url, "data:", "blob:", "about:"))
    ]
    assert outside == []  # a lecture hall may have no internet (the favicon was a Google font icon)

    # A walkthrough tile click opens that head in step four.
    figure_box(page)
    click_model_view_tile(page, layer=3, head=7, num_heads=12, key="walk_model_view")
    expect(page.get_by_role("heading", level=2).first).to_contain_text(f"Step 4 of {len(walk.STEPS)}")
    page.wait_for_function(
        "() => location.search.includes('layer=3') && location.search.includes('head=7')",
        timeout=10_000,
        polling=50,
    )
    expect(page.locator('[data-testid="stMain"] [data-testid="stRadio"]')).to_contain_text("layer 3, head 7")
    heading = page.get_by_role("heading", level=2).first
    page.get_by_role("button", name="Next").click()
    expect(heading).to_contain_text(f"Step 5 of {len(walk.STEPS)}")
    wait_for_idle(page)
    page.get_by_role("button", name="Previous").click()
    expect(heading).to_contain_text(f"Step 4 of {len(walk.STEPS)}")
    wait_for_idle(page)
    assert selected_option(page, "attn_layer") == "3" and selected_option(page, "attn_head") == "7", (
        "a tile click: layer and head kept after Next and Previous"
    )
    assert_no_exception(page)


def pick_filter(page, key: str, label: str) -> None:
    page.locator(f".st-key-{key} button", has_text=label).click()
    wait_for_idle(page)


def expect_filter(page, key: str, label: str) -> None:
    """The segmented control with this key shows `label` as the picked option."""
    expect(page.locator(f'.st-key-{key} button[aria-checked="true"]')).to_have_text(label, timeout=30_000)


def test_a_prepared_link_then_picks_that_survive_a_visit_and_a_copied_link_that_reopens_them(
    streamlit_url, page, visitor
):
    """One page load for three claims, each starting from the page state the one before left (none is about a
    second load of the Attention page): a prepared link reproduces pair, layer and head; a copied link reopens the
    tab and the filter in a fresh browser; picks survive a visit to another page. The tab picked is Rollout, which
    both later claims read: the Model view (144 tiles) drew 1.4-1.8 CPU-s a time, Rollout 0.4-0.7."""
    open_page(
        page, streamlit_url, f"Attention?a={quote(A)}&b={quote(B)}&model={DEFAULT_MODEL}&layer=2&head=5"
    )
    expect(page.locator(".st-key-sentence_a input")).to_have_value(A)
    expect(page.locator(".st-key-sentence_b input")).to_have_value(B)
    assert selected_option(page, "attn_layer") == "2" and selected_option(page, "attn_head") == "5", (
        "a prepared link: layer and head"
    )
    figure_box(page)
    expect(page.locator(".st-key-attention_heatmap .gtitle")).to_have_text("Layer 2, head 5 (All)")
    ticks = page.locator(".st-key-attention_heatmap .yaxislayer-above text").all_text_contents()
    assert "fox (4)" in ticks, f"a prepared link: the pair's tokens on the heatmap: {ticks}"
    assert_no_exception(page)

    # A copied link reopens the tab and the filter in a fresh browser.
    choose_option(page, "attn_layer", "3")
    choose_option(page, "attn_head", "7")
    pick_filter(page, "attn_sentence_filter", "A→B")
    open_tab(page, "Rollout")
    page.wait_for_function("() => location.search.includes('tab=Rollout')", timeout=10_000, polling=50)
    link = copied_link(page)
    assert "tab=Rollout" in link and "filter=A" in link and "layer=3" in link, f"a copied link: {link}"
    fresh = visitor(
        viewport={"width": 1280, "height": 720}
    )  # another browser: no cookie, no state of the first
    fresh.goto(link)
    expect(fresh.get_by_role("tab", name="Rollout")).to_have_attribute(
        "aria-selected", "true", timeout=60_000
    )
    wait_for_idle(fresh)
    expect_filter(fresh, "attn_sentence_filter", "A→B")
    assert selected_option(fresh, "attn_layer") == "3", "a copied link in a fresh browser: layer"
    fresh.wait_for_function(
        "() => document.querySelector('.st-key-rollout .js-plotly-plot')?._fullLayout",
        timeout=60_000,
        polling=50,
    )
    assert_no_exception(fresh)

    # The picks (layer 3, head 7, filter A→B, the Rollout tab) survive a visit to another page.
    go_to(page, "Predictions")
    expect(page.get_by_role("heading", level=2).first).to_contain_text("Predictions")
    go_to(page, "Attention")
    expect(page.get_by_role("tab", name="Rollout")).to_have_attribute("aria-selected", "true")
    page.screenshot(path=str(ARTIFACTS / "picks_after_a_visit.png"))
    expect(page.locator(".st-key-attn_layer input[role='combobox']")).to_have_value("3")
    assert selected_option(page, "attn_layer") == "3" and selected_option(page, "attn_head") == "7", (
        "picks after a visit to another page: layer and head"
    )
    expect_filter(page, "attn_sentence_filter", "A→B")
    assert_no_exception(page)


def test_presentation_mode_shows_a_runs_curves_on_the_slide(streamlit_url, page):
    """A lecturer watching a run: progress bar, then the loss and accuracy curves whole on a 1280x720 screen; how
    the run ended and its final numbers below them."""
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(page, streamlit_url, "train?present=1&run=demo-tiny")
    for key in ("train_loss_chart", "train_accuracy_chart"):
        wait_for_figure(page, key)
        box = page.locator(f".st-key-{key} .js-plotly-plot").bounding_box()
        assert box["y"] + box["height"] <= 720, (key, box)
    outcome = page.locator('[data-testid="stMain"] [data-testid="stAlert"]').first.bounding_box()
    assert outcome["y"] > box["y"] + box["height"], outcome  # "Finished 10000 steps…" under the curves
    page.screenshot(path=str(ARTIFACTS / "present_1280x720_train.png"))
    assert_no_exception(page)
