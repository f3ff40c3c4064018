"""Server memory in a real browser: N different 512-token sentences typed on the Attention page, one after another.

Starts `streamlit run app.py` (as the browser tests do), opens the Attention page (Heatmap tab) in Debian's
Chromium, sets max length to 512 (--max-length) and types N sentences A that each run past 512 tokens and differ in
their first word (so nothing comes from the trace cache), waiting each time until the heatmap of the new pair is
drawn. Prints the server's RSS at start, after each sentence, its peak, and --settle seconds after the tab closed, as
key=value lines. Goal (issue "One server for a lecture hall, round 2"): 15 sentences grow the RSS by less than 800 MB
and most of it is given back.

    python bench/browser_memory.py [--sentences 15] [--settle 30] [--after-ttl 100] [--max-length 512]

--after-ttl reports the RSS once more that many seconds after the tab closed: set it past the cache's idle time
(BERTVIZ_LITE_CACHE_TTL_S, default 600; the server inherits the environment, so a shorter one can be set for a run).
--revisit then opens and closes one more tab (another visitor) and reports the RSS that many seconds later: Streamlit
keeps a closed tab's session for reconnection and removes expired ones only when another session is stored.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from playwright.sync_api import sync_playwright  # noqa: E402

from bench._smoke import add_smoke_flag  # noqa: E402
from bench.live_class_load import server_memory_mib  # noqa: E402
from devtools.server import (  # noqa: E402
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    browser_for_tests,
    free_port,
    start_streamlit,
    stop,
    wait_until_healthy,
)
from tests.browser.driver import new_page, open_page, type_into, wait_for_figure, wait_for_idle  # noqa: E402

FILLER = "and then the story went on for a long while without any end in sight " * 40  # > 512 tokens
WORDS = (
    "Anna",
    "Boris",
    "Clara",
    "David",
    "Elena",
    "Frank",
    "Greta",
    "Hugo",
    "Ines",
    "Jonas",
    "Karl",
    "Lena",
    "Marco",
    "Nina",
    "Oscar",
    "Paula",
    "Quentin",
    "Rosa",
    "Sven",
    "Tara",
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sentences", type=int, default=15, help="different 512-token sentences, one after another"
    )
    parser.add_argument(
        "--settle", type=float, default=30.0, help="seconds after the tab closed before the last RSS"
    )
    parser.add_argument(
        "--after-ttl",
        type=float,
        default=0.0,
        help="seconds after the tab closed for one more RSS (past BERTVIZ_LITE_CACHE_TTL_S); 0: none",
    )
    parser.add_argument(
        "--revisit",
        type=float,
        default=0.0,
        help="after that, one more visitor opens and closes the app; RSS this many seconds later",
    )
    parser.add_argument(
        "--max-length", type=int, default=512, help="the page's Max length: tokens kept of each sentence"
    )
    parser.add_argument(
        "--browser",
        default=CHROMIUM,
        help="the visitor's browser (Debian's chromium; the smoke run: the tests' own)",
    )
    add_smoke_flag(parser, argv, sentences=1, settle=0.0, max_length=32, browser=browser_for_tests())
    return parser.parse_args(argv)


def open_browser(playwright, path: str):
    return playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)


def revisit(base: str, pid: int, start: float, wait_s: float, browser_path: str) -> None:
    """Another visitor opens the first page and leaves; the RSS wait_s seconds later."""
    with sync_playwright() as playwright:
        browser = open_browser(playwright, browser_path)
        page = new_page(browser, viewport={"width": 1280, "height": 900})
        open_page(page, base)
        page.close()
        browser.close()
    time.sleep(wait_s)
    rss = server_memory_mib(pid)[0]
    print(
        f"revisit_after_s={wait_s:.0f} rss_after_revisit_mib={rss:.0f} growth_after_revisit_mib={rss - start:.0f}"
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    port = free_port()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    server = start_streamlit(port, ARTIFACTS / "browser_memory_streamlit.log")
    try:
        base = f"http://127.0.0.1:{port}"
        wait_until_healthy(base, server)
        with sync_playwright() as playwright:
            browser = open_browser(playwright, args.browser)
            page = new_page(browser, viewport={"width": 1280, "height": 900})
            open_page(page, base, "Attention")
            start = server_memory_mib(server.pid)[0]
            print(f"rss_start_mib={start:.0f}", flush=True)
            type_into(page, "max_length", str(args.max_length))
            wait_for_idle(page)
            for index in range(args.sentences):
                started = time.perf_counter()
                type_into(page, "sentence_a", f"{WORDS[index % len(WORDS)]} {index} {FILLER}")
                wait_for_idle(page, timeout_ms=120_000)
                wait_for_figure(page, "attention_heatmap", timeout_ms=120_000)
                rss = server_memory_mib(server.pid)[0]
                print(
                    f"sentence={index + 1} seconds={time.perf_counter() - started:.1f} rss_mib={rss:.0f}",
                    flush=True,
                )
            peak_during = server_memory_mib(server.pid)[1]
            page.close()
            browser.close()
        closed = time.monotonic()
        time.sleep(args.settle)  # the visitor is gone: what does the server keep?
        after, peak = server_memory_mib(server.pid)
        print(
            f"rss_peak_mib={peak:.0f} rss_after_mib={after:.0f} growth_after_mib={after - start:.0f} "
            f"growth_peak_mib={peak_during - start:.0f}"
        )
        print(
            f"goal_growth_under_800_mib={'met' if after - start < 800 else 'NOT met'} "
            f"given_back_share={(peak - after) / max(peak - start, 1):.2f}"
        )
        if args.after_ttl > args.settle:
            time.sleep(max(0.0, args.after_ttl - (time.monotonic() - closed)))
            later = server_memory_mib(server.pid)[0]
            print(
                f"after_ttl_s={args.after_ttl:.0f} rss_after_ttl_mib={later:.0f} growth_after_ttl_mib={later - start:.0f} "
                f"given_back_share_after_ttl={(peak - later) / max(peak - start, 1):.2f}"
            )
        if args.revisit:
            revisit(base, server.pid, start, args.revisit, args.browser)
    finally:
        stop(server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
