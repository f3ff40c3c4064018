"""Page latency of the Attention page in Debian's chromium: from entering a pair to the figure drawn.

Starts `streamlit run app.py` on a free port (devtools/server.py's running_streamlit, as the browser tests do),
opens the Attention page with the default model (minilm-english: MiniLM's sizes, 6 layers × 12 heads) and, for
pairs of exactly 32, 128 and 512 tokens, times from pressing Enter in sentence A to the single-head heatmap drawn
with the new pair; then the same for the model view (all layers × heads) at 128 and 512 tokens. Each pair is new (a
different first word), so nothing comes from the trace cache. It also reports the longest main-thread task in the
browser during each measurement (a "freeze" is a long task that blocks scrolling and clicks), and, as a reference
measured in the same run, a rerun that redraws the heatmap without running the model (clicking a sentence filter):
the "× reference" column is load-independent where the seconds are not.

    python bench/page_latency.py [--repeats 5] [--heatmap-tokens 32 128 512] [--model-view-tokens 128 512]

Goals: < 1.5 s at 32 tokens, < 3 s for the model view at 128 tokens, no freeze at 512. Prints a markdown table,
then the same figures as key=value lines (heatmap_32_median_s=…).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench._smoke import add_smoke_flag  # noqa: E402
from bertviz_lite.loading.pretrained import MINILM, load_tokenizer  # noqa: E402
from devtools.server import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    browser_for_tests,
    open_front_page,
    running_streamlit,
)
from tests.browser.driver import new_page, open_page, open_tab, type_into, wait_for_idle  # noqa: E402

WORDS = (
    "the quick brown fox jumps over the lazy dog while a small bird sings in the tall green tree "
    "and children play near the old river bank on a warm summer afternoon"
).split()
HEATMAP_GOALS = {32: "< 1.5 s", 512: "no freeze"}
MODEL_VIEW_GOALS = {128: "< 3 s", 512: "no freeze"}
SALTS = "alpha bravo delta echo golf hotel india kilo lima mike oscar papa quebec romeo sierra tango".split()

# Remember the figure's current data, so that "ready" means: new data, drawn.
_MARK = """(key) => {
  const gd = document.querySelector(`.st-key-${key} .js-plotly-plot`);
  window.__benchOld = gd && gd.data ? gd.data[0] : null;
  window.__benchLongest = 0;
  if (!window.__benchObserver) {
    window.__benchObserver = new PerformanceObserver(list => {
      for (const e of list.getEntries()) window.__benchLongest = Math.max(window.__benchLongest, e.duration);
    });
    window.__benchObserver.observe({entryTypes: ['longtask']});
  }
}"""
_READY = """([key, rows, images]) => {
  const gd = document.querySelector(`.st-key-${key} .js-plotly-plot`);
  if (!gd || !gd.data || !gd._fullLayout || gd.data[0] === window.__benchOld) return false;
  if (rows !== null && !(gd.data[0].y && gd.data[0].y.length === rows)) return false;
  return gd.querySelectorAll('.heatmaplayer image').length >= images;
}"""


def pair_of(tokenizer, num_tokens: int, salt: str) -> tuple[str, str]:
    """Sentences A and B whose pair is exactly num_tokens WordPiece tokens ([CLS]/[SEP] included)."""
    words = [salt] + [WORDS[i % len(WORDS)] for i in range(num_tokens)]
    for size in range(max(2, num_tokens - 3), 1, -1):
        chosen = words[:size]
        text_a = " ".join(chosen[: size // 2])
        text_b = " ".join(chosen[size // 2 :])
        if len(tokenizer.encode_pair(text_a, text_b, max_length=512)) <= num_tokens:
            break
    assert len(tokenizer.encode_pair(text_a, text_b, max_length=512)) == num_tokens, num_tokens
    return text_a, text_b


def time_pair(page, text_a: str, text_b: str, key: str, rows: int | None, images: int) -> tuple[float, float]:
    """Seconds from Enter in sentence A to the figure drawn, and the longest browser task (s) meanwhile."""
    type_into(page, "sentence_b", text_b)
    wait_for_idle(page)
    page.evaluate(_MARK, key)
    box = page.locator(".st-key-sentence_a input")
    box.fill(text_a)
    start = time.perf_counter()
    box.press("Enter")
    page.wait_for_function(_READY, arg=[key, rows, images], timeout=120_000, polling="raf")
    elapsed = time.perf_counter() - start
    wait_for_idle(page)
    return elapsed, page.evaluate("() => window.__benchLongest") / 1000


def time_filter_click(page, label: str, rows: int) -> float:
    """Reference: seconds from clicking a sentence filter to the heatmap redrawn (cached trace, no model run)."""
    page.evaluate(_MARK, "attention_heatmap")
    button = page.locator(".st-key-attn_sentence_filter button", has_text=label)
    start = time.perf_counter()
    button.click()
    page.wait_for_function(_READY, arg=["attention_heatmap", rows, 1], timeout=120_000, polling="raf")
    elapsed = time.perf_counter() - start
    wait_for_idle(page)
    return elapsed


def reference(page, tokenizer, repeats: int) -> float:
    """Median seconds of a rerun that draws the heatmap again without running the model."""
    text_a, text_b = pair_of(tokenizer, 32, "zulu")
    time_pair(page, text_a, text_b, "attention_heatmap", 32, 1)
    rows_a = len(tokenizer.encode_pair(text_a).tokens)
    times = []
    for _ in range(repeats):
        times.append(time_filter_click(page, "A→A", rows_a))
        times.append(time_filter_click(page, "All", 32))
    return statistics.median(times)


def measure(
    page, tokenizer, num_tokens: int, key: str, images: int, repeats: int, salts
) -> list[tuple[float, float]]:
    rows = num_tokens if key == "attention_heatmap" else None
    return [
        time_pair(page, *pair_of(tokenizer, num_tokens, next(salts)), key, rows, images)
        for _ in range(repeats)
    ]


def report(
    name: str, goal: str, samples: list[tuple[float, float]], ref: float, values: dict[str, str]
) -> str:
    """The table row; its figures also go into values under the key `name` (heatmap_32_median_s, …)."""
    times = [s[0] for s in samples]
    longest = [s[1] for s in samples]
    median = statistics.median(times)
    key = name.replace(",", "").replace(" tokens", "").replace(" ", "_")
    values |= {
        f"{key}_median_s": f"{median:.2f}",
        f"{key}_max_s": f"{max(times):.2f}",
        f"{key}_x_reference": f"{median / ref:.1f}",
        f"{key}_longest_task_s": f"{max(longest):.2f}",
    }
    return f"| {name} | {median:.2f} | {max(times):.2f} | {median / ref:.1f} | {max(longest):.2f} | {goal} |"


def measure_all(browser, url: str, tokenizer, args) -> tuple[list[str], dict[str, str]]:
    """The table's rows and the same figures as {key: value}: the reference, then each heatmap and model view."""
    salts = iter(SALTS * 10)
    rows = []
    values = {}
    if not args.smoke:  # warm-ups: the smoke run goes through the same calls once, cold
        open_front_page(browser, url)
    page = new_page(browser, viewport={"width": 1400, "height": 1000})
    open_page(page, url, "Attention")
    type_into(page, "max_length", "512")
    wait_for_idle(page)
    if not args.smoke:
        measure(page, tokenizer, 32, "attention_heatmap", 1, 1, salts)  # warm-up: imports, first figures
    ref = reference(page, tokenizer, args.repeats)
    rows.append(f"| reference: filter click, heatmap redrawn, no model run | {ref:.2f} | | 1.0 | | |")
    values["reference_s"] = f"{ref:.2f}"
    print(rows[-1], flush=True)
    for count in args.heatmap_tokens:
        samples = measure(page, tokenizer, count, "attention_heatmap", 1, args.repeats, salts)
        rows.append(report(f"heatmap, {count} tokens", HEATMAP_GOALS.get(count, "—"), samples, ref, values))
        print(rows[-1], flush=True)
    open_tab(page, "Model view")
    for count in args.model_view_tokens:  # the long ones take half the repeats
        repeats = args.repeats if count <= 128 else max(1, args.repeats // 2)
        samples = measure(page, tokenizer, count, "model_view", 1, repeats, salts)
        rows.append(
            report(f"model view, {count} tokens", MODEL_VIEW_GOALS.get(count, "—"), samples, ref, values)
        )
        print(rows[-1], flush=True)
    return rows, values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--heatmap-tokens", type=int, nargs="+", default=[32, 128, 512])
    parser.add_argument("--model-view-tokens", type=int, nargs="+", default=[128, 512])
    # The smoke run times no heatmap row of its own: the reference's first pair is a 32-token heatmap timed by the
    # same time_pair, and the model view's row goes through measure and report.
    parser.add_argument(
        "--browser",
        default=CHROMIUM,
        help="the browser to time (Debian's chromium; the smoke run: the tests' own)",
    )
    add_smoke_flag(
        parser, argv, repeats=1, heatmap_tokens=[], model_view_tokens=[32], browser=browser_for_tests()
    )
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    ready = {}

    def while_starting() -> None:  # chromium and the tokenizer while the server starts
        ready["browser"] = playwright.chromium.launch(executable_path=args.browser, args=CHROMIUM_ARGS)
        ready["tokenizer"] = load_tokenizer(MINILM)

    with sync_playwright() as playwright, running_streamlit("bench_streamlit.log", while_starting) as url:
        rows, values = measure_all(ready["browser"], url, ready["tokenizer"], args)
        ready["browser"].close()
    load_average = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"\n{platform.machine()}, {os.cpu_count()} cores, load average {load_average:.1f} · Python {platform.python_version()}"
    )
    print(
        "| view | median s | max s | × reference | longest browser task s | goal |\n|---|---|---|---|---|---|"
    )
    print("\n".join(rows))
    print("\n".join(f"{key}={value}" for key, value in values.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
