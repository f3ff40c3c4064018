"""Training in a real browser: start a tiny run, watch the loss plot grow, stop it, find it on the Checkpoints page.

The shared server trains into the repository's checkpoints/ folder, so the run has a unique name and is
deleted at the end, through the page, or by the fixture if the test failed half-way.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from bertviz_lite.loading.run_folder import CHECKPOINTS_DIR, RunFolder
from bertviz_lite.runs import lifecycle
from bertviz_lite.training.training_args import PRESETS
from devtools.server import ARTIFACTS
from devtools.waiting import wait_until
from tests.browser.driver import (
    assert_no_exception,
    click_model_view_tile,
    open_page,
    screenshot,
    selected_option,
    wait_for_idle,
)

pytestmark = pytest.mark.browser

# The tiny preset with more steps than a test watches (it stops the run), on one thread (a core of its own at most),
# its attention snapshotted only at the start and at the stop (the replay's tile needs one, not the five charts
# redrawn every 5 s while the test watches the curves). The preset's corpus and sizes give the first metrics line
# as soon as smaller ones did (1.4-1.9 CPU-s of the trainer), and each field typed costs a rerun of the form
# (0.5 CPU-s of chromium).
OPTIONS = {"steps": 5000, "threads": 1, "snapshot_every": 5000}
# A run started and stopped through two servers needs no curves: logged and evaluated only when it stops, the pages
# watching it redraw no chart while it trains (four curves every 2 s).
QUIET = {**OPTIONS, "log_every": 5000, "eval_every": 5000}
POINTS = """() => {
  const gd = document.querySelector('.st-key-train_loss_chart .js-plotly-plot');
  return gd && gd.data && gd.data[0] && gd.data[0].x ? gd.data[0].x.length : 0;
}"""


def loss_points_grow(page, times: int = 2, timeout_ms: float = 60_000) -> list[int]:
    """Wait until the loss curve has gained points `times` times; returns the counts seen."""
    counts = [page.evaluate(POINTS)]
    for _ in range(times):
        more = f"() => {{ const n = ({POINTS})(); return n > {counts[-1]} ? n : false; }}"
        counts.append(page.wait_for_function(more, timeout=timeout_ms, polling=100).json_value())
    return counts


def wait_for_run_to_show(page) -> None:
    """Until the new run's progress shows (a first step on a busy machine can take a while); else what the page says."""
    try:
        page.get_by_text(f"of {OPTIONS['steps']}").first.wait_for(timeout=120_000)
    except PlaywrightTimeout:
        alerts = page.locator('[data-testid="stMain"] [data-testid="stAlert"]').all_inner_texts()
        pytest.fail(f"the run's progress never showed; the page says: {alerts}")


def start_run(page, run_name: str, options: dict = OPTIONS) -> None:
    """On the Train page: fill these fields in the form, name the run, start it, wait until it shows; the run's
    command line carries every option filled in."""
    form = page.locator('[data-testid="stExpander"] details', has_text="Start a new run")
    if form.get_attribute("open") is None:  # with a run to show, its curves come first and the form is folded
        form.locator("summary").click()
    # One field after another without waiting for each rerun, as a user tabs through the form (a rerun asked for
    # while one runs is folded into it); the command line checked below shows that the form sent every value.
    for key in options:
        box = page.locator(f".st-key-opt_{key} input")
        box.fill(str(options[key]))
        box.press("Enter")
    page.locator(".st-key-train_run_name input").fill(run_name)
    page.locator(".st-key-train_run_name input").press("Enter")
    wait_for_idle(page)
    for key in options:
        expect(page.locator(f".st-key-opt_{key} input")).to_have_value(str(options[key]))
    start = page.locator(".st-key-train_start button")
    if start.is_disabled():
        # Streamlit can drop a number field's value on the server when fields change faster than its reruns (the box
        # still shows it; streamlit#9056, #9163): the form then says which option it holds wrong, and Start stays
        # disabled. Type each again and let each rerun land, as a user who read the message would: the fields typed,
        # and a field the message names that was not typed, with what its box shows (a batch size once held 0 so).
        said = form.locator('[data-testid="stAlert"]').all_inner_texts()
        print("Start disabled after fast typing; the form said:", said)
        named = [key for key in re.findall(r"\b([a-z][a-z_]*) \(", " ".join(said)) if key not in options]
        for key in [*options, *named]:
            box = page.locator(f".st-key-opt_{key} input")
            if not box.count():
                continue
            box.fill(str(options.get(key, box.input_value())))
            box.press("Enter")
            wait_for_idle(page)
    expect(start).to_be_enabled(timeout=30_000)
    start.click()
    wait_for_run_to_show(page)  # until the rerun lands, the page still shows the run it watched before
    command = json.loads(RunFolder(CHECKPOINTS_DIR / run_name).launch.read_text(encoding="utf-8"))["command"]
    for key in options:
        flags = lifecycle.option_flags({key: options[key]})
        assert any(command[i : i + 2] == flags for i in range(len(command))), (key, command)


def test_start_watch_stop_and_find_the_run(streamlit_url, page, run_name):
    # An earlier test's run may still be saving its last step: wait for the slot (the browser tests run one by one).
    wait_until(
        lambda: len(lifecycle.active_runs(CHECKPOINTS_DIR)) < lifecycle.max_concurrent_runs(),
        120,
        "the training slot to be free (no run left training in checkpoints/)",
    )
    open_page(page, streamlit_url, "train")
    start_run(page, run_name)
    counts = loss_points_grow(page)
    assert counts[0] < counts[1] < counts[2]
    assert f"run={run_name}" in page.url and selected_option(page, "train_run") == run_name
    assert_no_exception(page)
    screenshot(page, ARTIFACTS / "train_running.png")

    page.reload()  # the run keeps going and the URL brings the page back to it
    stop = page.locator(".st-key-train_stop button").first  # a button with help text draws two
    stop.wait_for(timeout=60_000)
    assert selected_option(page, "train_run") == run_name
    stop.click()
    page.get_by_text("Stopped at step").wait_for(timeout=60_000)
    # The full rerun that ends the timer removes the old elements (Stop) when it is done.
    page.locator(".st-key-train_stop").wait_for(state="detached", timeout=60_000)
    layers, heads = (PRESETS["tiny"]["config"][k] for k in ("num_hidden_layers", "num_attention_heads"))
    page.locator(".st-key-replay_open label").click()  # the replay is drawn when opened
    wait_for_idle(page)
    click_model_view_tile(page, layer=layers - 1, head=heads - 1, num_heads=heads, key="replay_mosaic")
    for key, value in (
        ("replay_layer", layers - 1),
        ("replay_head", heads - 1),
    ):  # the state the click must give
        expect(page.locator(f".st-key-{key} input[role='combobox']")).to_have_value(f"{value}")
    assert (selected_option(page, "replay_layer"), selected_option(page, "replay_head")) == (
        f"{layers - 1}",
        f"{heads - 1}",
    )
    screenshot(page, ARTIFACTS / "train_stopped.png")

    open_page(page, streamlit_url, "checkpoints")
    page.locator(".st-key-ckpt_selected").wait_for()
    assert selected_option(page, "ckpt_selected") == run_name  # the newest run comes first
    assert_no_exception(page)
    screenshot(page, ARTIFACTS / "checkpoints.png")
    page.locator(".st-key-ckpt_confirm_delete label").click()
    wait_for_idle(page)
    page.locator(".st-key-ckpt_delete button").click()
    page.get_by_text(f"Deleted {run_name}.").wait_for(timeout=30_000)
    assert not (CHECKPOINTS_DIR / run_name).exists()
