"""Where a warm rerun of the Attention page goes: building the figure, styling it, and st.plotly_chart's serialisation.

Runs app.py in AppTest (in this process, no browser) on the Attention page with a sentence of more than 512 tokens
and max length 512 (minilm-english), once to fill the caches, then --repeats warm reruns of the Heatmap tab and of
the Model view tab (the mosaic and the opened head). Each rerun is timed whole, and by accumulating timers wrapped
around the figure builders, figures/style.py's readable, and inside st.plotly_chart plotly's to_dict and to_json
(what Streamlit does with every figure, on every rerun). Prints key=value lines.

Then what readable costs a figure against serialising it (plotly.io.to_json, which st.plotly_chart does to each figure
it sends): every figure the runs above handed to readable, and those of each explore page in --readable-pages, in
normal and in presentation mode (a figure is made readable once per input and size: a new sentence, a first visitor),
made readable again from fresh copies; readable_ms and to_json_ms are per figure, the mean of each figure's median.

    python bench/figure_cost.py [--repeats 5] [--max-length 512] [--readable-pages pages_app/explore/3_Attention.py …]
"""

from __future__ import annotations

import argparse
import collections
import functools
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import plotly.io  # noqa: E402
import plotly.tools  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

import pages_app.common._ui as ui  # noqa: E402
from bench._smoke import add_smoke_flag  # noqa: E402
from bertviz_lite import figures  # noqa: E402
from bertviz_lite.figures.style import readable  # noqa: E402

FILLER = "and then the story went on for a long while without any end in sight " * 40  # > 512 tokens
SPENT: collections.Counter = collections.Counter()
PAGES = sorted(str(path.relative_to(REPO)) for path in (REPO / "pages_app" / "explore").glob("[0-9]_*.py"))
# Every figure handed to readable, as JSON, with readable's keyword arguments.
KEPT: list[tuple[str, dict]] = []


def timed(owner, name: str, label: str) -> None:
    """Replace owner.name by a wrapper that adds its seconds to SPENT[label]."""
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            SPENT[label] += time.perf_counter() - started

    setattr(owner, name, wrapper)


def keep_readable_figures() -> None:
    """Keep a copy of each figure the pages hand to ui.readable (KEPT), before it is made readable."""
    original = ui.readable

    @functools.wraps(original)
    def keeping(fig, **options):
        KEPT.append((plotly.io.to_json(fig, validate=False), options))
        return original(fig, **options)

    ui.readable = keeping


def open_pages(pages: list[str]) -> None:
    """Each page on the default pair, in normal and in presentation mode."""
    for present in (False, True):
        for page in pages:
            at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
            at.session_state["present"] = present
            at.switch_page(page)
            at.run()
            assert not at.exception, (page, at.exception)


def median_seconds(work, inputs: list) -> float:
    """The median seconds of work(x) over the inputs."""
    times = []
    for given in inputs:
        started = time.perf_counter()
        work(given)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def readable_against_to_json(repeats: int) -> str:
    """readable's and to_json's mean seconds per figure of KEPT (each figure's median), as key=value lines."""
    styled, serialised = [], []
    for spec, options in KEPT:
        styled.append(
            median_seconds(
                functools.partial(readable, **options), [plotly.io.from_json(spec) for _ in range(repeats)]
            )
        )
        shown = readable(plotly.io.from_json(spec), **options)
        serialised.append(
            median_seconds(functools.partial(plotly.io.to_json, validate=False), [shown] * repeats)
        )
    readable_ms = 1000 * statistics.mean(styled)
    to_json_ms = 1000 * statistics.mean(serialised)
    return (
        f"readable_figures={len(KEPT)}\n"
        f"readable_ms={readable_ms:.2f} to_json_ms={to_json_ms:.2f} readable_x_to_json={readable_ms / to_json_ms:.2f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--readable-pages", nargs="*", default=PAGES, help="explore pages (default: all)")
    add_smoke_flag(parser, argv, repeats=1, max_length=16, readable_pages=[])
    args = parser.parse_args(argv)
    keep_readable_figures()
    for builder in ("attention_map_figure", "model_view_figure"):
        timed(figures, builder, "build")
    timed(ui, "readable", "readable")
    timed(plotly.tools, "return_figure_from_figure_or_data", "to_dict")
    timed(plotly.io, "to_json", "to_json")
    timed(ui.st, "plotly_chart", "plotly_chart")
    for tab in ("Heatmap", "Model view"):
        at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
        for key, value in {
            "sentence_a": "The cat sat on the mat. " + FILLER,
            "sentence_b": "",
            "max_length": args.max_length,
            "attn_view": tab,
        }.items():
            at.session_state[key] = value
        at.switch_page("pages_app/explore/3_Attention.py")
        at.run()
        assert not at.exception, at.exception
        runs = []
        for _ in range(args.repeats):
            SPENT.clear()
            started = time.perf_counter()
            at.run()
            runs.append({"rerun": time.perf_counter() - started, **SPENT})
        medians = {key: statistics.median(run.get(key, 0.0) for run in runs) for key in runs[0]}
        name = tab.lower().replace(" ", "_")
        print("\n".join(f"{name}_{key}_ms={value * 1000:.1f}" for key, value in medians.items()))
    open_pages(args.readable_pages)
    print(readable_against_to_json(args.repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
