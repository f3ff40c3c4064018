"""Live class load: one `streamlit run app.py` for a lecture hall, a training run beside it, N visitors.

Starts the app on a free loopback port (devtools/server.py) and times, first, one visitor on the
fresh server right after /_stcore/health answers. Then it starts one classroom training run as its own
process (in a temporary folder, killed at the end) and, for each N, lets N visitors start together
(with a small random jitter). A visitor is not a browser but a client of Streamlit's own websocket
protocol (`websockets`, BackMsg/ForwardMsg protobufs over /_stcore/stream, one connection per visitor,
all in this process): it opens the Attention page, waits for the heatmap and the end of that script
run, then enters its own new sentence A (every visitor's sentence is new, so the model runs) and
times until the heatmap with its words arrives.

    python bench/live_class_load.py [--visitors 1 10 30] [--model all-MiniLM-L6-v2] [--workers N]

With --workers N the app runs as `python -m bertviz_lite.serve --workers N` (N streamlit processes behind
haproxy) and the visitors talk to haproxy's port; each visitor is one websocket, so it stays on one worker.

Per N it prints p50/p95/max seconds to the new figure and to the first page (connect to heatmap),
errors (exceptions or st.error shown by the app, timeouts, disconnects), the server's RSS and peak
RSS; at the end, its RSS when the visitors arrived, its peak, and --settle seconds after they left; and,
from the order in which the deltas of a script run arrive, where a run's time went.

Goals (issue "One server for a lecture hall", 2 cores): N = 30 with p95 < 5 s and no errors; a
fresh server's first page < 2 s.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import math
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import streamlit  # imported before its protos, which otherwise hit a circular import
import streamlit.config
import websockets
from streamlit.proto.Alert_pb2 import Alert
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.asyncio.client import connect

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench._smoke import add_smoke_flag  # noqa: E402
from bertviz_lite.loading.pretrained import DEFAULT_MODEL, MINILM  # noqa: E402
from bertviz_lite.loading.run_folder import read_metrics, read_status  # noqa: E402
from devtools.server import (  # noqa: E402
    ARTIFACTS,
    free_port,
    serve_command,
    start_streamlit,
    stop,
    wait_until_healthy,
)

LOOPBACK = "127.0.0.1"  # the only address this script talks to
ATTENTION_PAGE = "Attention"  # url_path of pages_app/explore/3_Attention.py (app.py gives it no other)
HEATMAP_KEY = "attention_heatmap"
SENTENCE_A_KEY = "sentence_a"
MODEL_KEY = "model_picker"
MAX_LENGTH_KEY = "max_length"
LONG_FILLER = "and then the story went on for a long while without any end in sight " * 40  # > 512 tokens
MODEL_CARD = " layers · "  # in the sidebar caption written once the model is loaded (explore.model_card)
CLIENT = f"websocket protocol client (`websockets` {websockets.__version__}, asyncio; no browser)"
# Single WordPiece tokens of BERT's uncased vocabulary: (adjective, noun) makes every sentence A new.
NOUNS = (
    "cat dog horse bird fish lion tiger bear wolf fox rabbit mouse duck goat sheep cow pig frog snake owl "
    "eagle whale shark deer monkey camel donkey parrot spider bee ant turtle zebra elephant penguin "
    "dolphin chicken pony bull"
).split()
ADJECTIVES = "red blue green yellow brown black white small large young quiet happy tired hungry".split()
# Milestones of one script run, in the order the page sends them (pages_app/explore/3_Attention.py).
MILESTONES = ("started", "sidebar", "model", "trace", "figure", "finished")
MILESTONE_HELP = {
    "started": "new_session: the server started the script run",
    "sidebar": "sentence A drawn: app.py, st.navigation and the sidebar ran (imports on a fresh server)",
    "model": "model card in the sidebar: load_context (model load when not cached)",
    "trace": "page header: the trace (cached per input)",
    "figure": "heatmap delivered: controls, figure built and serialised",
    "finished": "script_finished",
}


@dataclass
class Run:
    """What one script run sent back; times are time.perf_counter() values."""

    sent: float
    marks: dict[str, float] = field(default_factory=dict)
    widget_ids: dict[str, str] = field(default_factory=dict)  # user key -> widget id
    page_hash: str = ""
    errors: list[str] = field(default_factory=list)
    page_not_found: bool = False

    def since_sent(self) -> dict[str, float]:
        return {name: at - self.sent for name, at in self.marks.items()}


@dataclass
class Visit:
    """One visitor's outcome: seconds to the first page and to the new figure, or the errors met."""

    first_page_s: float | None = None
    new_figure_s: float | None = None
    errors: list[str] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)
    stage: str = "connect"  # where it is: connect, first page, model switch, new figure


def sentence_for(index: int) -> tuple[str, tuple[str, str]]:
    """The index-th unique sentence A and the two words that mark it in the heatmap's labels."""
    noun = NOUNS[index % len(NOUNS)]
    adjective = ADJECTIVES[(index // len(NOUNS)) % len(ADJECTIVES)]
    return f"The {adjective} {noun} waited by the river.", (adjective, noun)


def _element_id(element) -> str:
    kind = element.WhichOneof("type")
    return getattr(getattr(element, kind), "id", "") if kind else ""


def _note_element(run: Run, element, markers: tuple[str, ...], now: float) -> None:
    """Record widget ids, errors shown by the app and the milestones an element stands for."""
    kind = element.WhichOneof("type")
    element_id = _element_id(element)
    if element_id:
        run.widget_ids[element_id.rsplit("-", 1)[-1]] = element_id
    if kind == "exception":
        run.errors.append(f"exception shown: {element.exception.message[:200]}")
    elif kind == "alert" and element.alert.format == Alert.ERROR:
        run.errors.append(f"error shown: {element.alert.body[:200]}")
    elif kind == "text_input" and element_id.endswith(SENTENCE_A_KEY):
        run.marks.setdefault("sidebar", now)
    elif kind == "markdown" and MODEL_CARD in element.markdown.body:
        run.marks.setdefault("model", now)
    elif kind == "heading":
        run.marks.setdefault("trace", now)
    elif kind == "plotly_chart" and element_id.endswith(HEATMAP_KEY):
        # The heatmap's axis labels read "word (position)": the new words must be among them.
        if all(f'"{word} (' in element.plotly_chart.spec for word in markers):
            run.marks.setdefault("figure", now)


def note_message(run: Run, msg: ForwardMsg, markers: tuple[str, ...]) -> None:
    """Update `run` with one ForwardMsg."""
    now = time.perf_counter()
    kind = msg.WhichOneof("type")
    if kind == "new_session":
        run.marks.setdefault("started", now)
    elif kind == "navigation":
        run.page_hash = msg.navigation.page_script_hash
    elif kind == "page_not_found":
        run.page_not_found = True
    elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
        _note_element(run, msg.delta.new_element, markers, now)
    elif kind == "script_finished":
        run.marks["finished"] = now
        if msg.script_finished != ForwardMsg.FINISHED_SUCCESSFULLY:
            run.errors.append(f"script finished with status {msg.script_finished}")


async def script_run(ws, back: BackMsg, markers: tuple[str, ...], timeout: float) -> Run:
    """Send one rerun request and read until its script_finished; a run without the new heatmap is an error."""
    run = Run(sent=time.perf_counter())
    await ws.send(back.SerializeToString())
    deadline = run.sent + timeout
    while "finished" not in run.marks:
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            raise TimeoutError(f"no script_finished within {timeout:.0f} s")
        msg = ForwardMsg()
        msg.ParseFromString(await asyncio.wait_for(ws.recv(), remaining))
        note_message(run, msg, markers)
    if "figure" not in run.marks:
        run.errors.append(f"the run ended without the heatmap of {' '.join(markers) or 'the page'}")
    return run


def rerun_request(
    page_name: str = "", page_hash: str = "", widgets: dict[str, str | int] | None = None
) -> BackMsg:
    """A BackMsg asking to run the page, with string (or int: a number input's) widget values keyed by widget id."""
    back = BackMsg()
    back.rerun_script.query_string = ""
    back.rerun_script.page_name = page_name
    back.rerun_script.page_script_hash = page_hash
    for widget_id, value in (widgets or {}).items():
        state = back.rerun_script.widget_states.widgets.add()
        state.id = widget_id
        if isinstance(value, int):
            state.int_value = value
        else:
            state.string_value = value
    return back


async def _visit_steps(
    ws,
    outcome: Visit,
    started: float,
    sentence: str,
    markers,
    model: str,
    timeout: float,
    long_input: bool = False,
):
    """First page, optionally another model, then the timed new sentence A."""
    outcome.stage = "first page"
    first = await script_run(ws, rerun_request(page_name=ATTENTION_PAGE), (), timeout)
    outcome.runs.append(first)
    if "figure" in first.marks:
        outcome.first_page_s = first.marks["figure"] - started
    ids = first.widget_ids
    page_hash = first.page_hash
    widgets = {}
    if model != DEFAULT_MODEL:
        outcome.stage = "model switch"
        widgets[ids[MODEL_KEY]] = model
        outcome.runs.append(
            await script_run(ws, rerun_request(page_hash=page_hash, widgets=widgets), (), timeout)
        )
    outcome.stage = "new figure"
    if long_input:  # the memory case: 512-token inputs, each one new
        widgets[ids[MAX_LENGTH_KEY]] = 512
        sentence = f"{sentence} {LONG_FILLER}"
    widgets[ids[SENTENCE_A_KEY]] = sentence
    new = await script_run(ws, rerun_request(page_hash=page_hash, widgets=widgets), markers, timeout)
    outcome.runs.append(new)
    if "figure" in new.marks:
        outcome.new_figure_s = new.marks["figure"] - new.sent


async def visit(
    port: int, sentence: str, markers: tuple[str, str], args, delay: float, outcome: Visit
) -> None:
    """One visitor, from connecting to its new figure; fills `outcome` as it goes."""
    await asyncio.sleep(delay)
    started = time.perf_counter()
    url = f"ws://{LOOPBACK}:{port}/_stcore/stream"
    try:
        # No proxy (loopback only); no protocol pings, as a browser sends none.
        async with connect(
            url,
            subprotocols=["streamlit"],
            max_size=None,
            proxy=None,
            ping_interval=None,
            open_timeout=args.timeout,
        ) as ws:
            await _visit_steps(ws, outcome, started, sentence, markers, args.model, args.timeout, args.long)
    except (TimeoutError, asyncio.TimeoutError) as err:
        outcome.errors.append(
            f"timeout ({outcome.stage}): {str(err) or f'no answer within {args.timeout:g} s'}"
        )
    except websockets.ConnectionClosed as err:
        outcome.errors.append(f"disconnected ({outcome.stage}): {err}")
    except (OSError, KeyError) as err:
        outcome.errors.append(f"{type(err).__name__} ({outcome.stage}): {err}")
    for run in outcome.runs:
        outcome.errors.extend(run.errors)


async def lecture_hall(port: int, first_index: int, delays: list[float], args, cap_s: float) -> list[Visit]:
    """One visitor per delay (s), all at once, each with its own new sentence A; unfinished at cap_s: cancelled."""
    visits = [Visit() for _ in delays]
    tasks = []
    for i, (delay, outcome) in enumerate(zip(delays, visits, strict=True)):
        sentence, markers = sentence_for(first_index + i)
        tasks.append(asyncio.create_task(visit(port, sentence, markers, args, delay, outcome)))
    _, pending = await asyncio.wait(tasks, timeout=max(1.0, cap_s))
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    for task, outcome in zip(tasks, visits, strict=True):
        if task in pending:
            outcome.errors.append("cancelled: the total runtime cap was reached")
    return visits


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (p95 of 10 values is the largest, of 30 the second largest)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def _process_memory_mib(pid: int) -> tuple[float, float]:
    """(RSS, peak RSS) of one process in MiB, from /proc/<pid>/status."""
    fields = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            fields[name] = value.split()
    except OSError:
        return math.nan, math.nan
    kib = lambda name: float(fields[name][0]) if name in fields else math.nan  # noqa: E731
    return kib("VmRSS") / 1024, kib("VmHWM") / 1024


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    return found


def server_memory_mib(pid: int) -> tuple[float, float]:
    """(RSS, peak RSS) in MiB of the app: one streamlit process, or with --workers the serve process, its workers
    and haproxy, summed (the peak is the sum of each one's peak: an upper bound of the peak of the sum)."""
    pids = [pid, *_children(pid)]
    values = [_process_memory_mib(p) for p in pids]
    return sum(v[0] for v in values), sum(v[1] for v in values)


def memory_after_leaving(pid: int, rss_start: float, settle_s: float) -> str:
    """The server's RSS when the visitors arrived, its peak, and settle_s seconds after the last one left."""
    peak = server_memory_mib(pid)[1]
    time.sleep(settle_s)
    after = server_memory_mib(pid)[0]
    return (
        f"Server RSS: {rss_start:.0f} MiB at start (after the first page), peak {peak:.0f} MiB, "
        f"{after:.0f} MiB {settle_s:.0f} s after the visitors left ({after - rss_start:+.0f} MiB)"
    )


def start_training(run_dir: Path, steps: int, *options: str) -> subprocess.Popen:
    """One classroom training run as its own process, as a user would start it, writing only to run_dir.

    options: more of the CLI's options (a smoke run's smaller data)."""
    command = [
        sys.executable,
        "-m",
        "bertviz_lite.train",
        "--preset",
        "classroom",
        "--steps",
        str(steps),
        "--out",
        str(run_dir),
        "--threads",
        "1",
        "--quiet",
        *options,
    ]
    with open(run_dir.parent / "train.log", "w") as log:  # the child keeps its own copy of the handle
        return subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)


def wait_for_training(run_dir: Path, process: subprocess.Popen, timeout: float = 60.0) -> str:
    """Wait until the trainer reports its first step (data and tokenizer prepared), or say why not."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return f"exited with code {process.returncode}"
        if (read_status(run_dir) or {}).get("step"):
            return "training"
        time.sleep(0.5)
    return f"no step reported within {timeout:.0f} s"


# The classroom preset's promise (bench/time_to_learn.py measures it alone): held-out NSP >= 80% and MLM >= 2x the
# most-frequent-token baseline, 9.56% for the preset's seed 0 (bench/RESULTS.md).
CLASSROOM_NSP_GOAL = 0.80
CLASSROOM_MLM_GOAL = 2 * 0.0956
CLASSROOM_PROMISE_S = 120.0


def time_to_goal(
    run_dir: Path, process: subprocess.Popen | None, limit_s: float = CLASSROOM_PROMISE_S
) -> str:
    """Wait (at most limit_s of the run's own time) for the classroom goal; the trainer's seconds when it was met."""
    while True:
        evals = read_metrics(run_dir, "eval")
        for record in evals:
            if (
                record.get("eval_nsp_acc", 0) >= CLASSROOM_NSP_GOAL
                and record.get("eval_mlm_acc", 0) >= CLASSROOM_MLM_GOAL
            ):
                return (
                    f"classroom run reached its goal at step {record['step']} after {record['elapsed_s']:.1f} s "
                    f"(promise < {limit_s:.0f} s): {'met' if record['elapsed_s'] < limit_s else 'NOT met'}"
                )
        elapsed = max((r.get("elapsed_s", 0) for r in read_metrics(run_dir)), default=0)
        if process is None or process.poll() is not None or elapsed > limit_s:
            return f"classroom run: goal NOT reached within {elapsed:.0f} s of training"
        time.sleep(1.0)


def training_step(run_dir: Path) -> int:
    return int((read_status(run_dir) or {}).get("step") or 0)


def timeline(run: Run) -> str:
    marks = run.since_sent()
    return ", ".join(f"{name} {marks[name]:.2f}" for name in MILESTONES if name in marks)


def median_timeline(runs: list[Run]) -> str:
    """Median seconds from the rerun request to each milestone, over runs that reached it."""
    parts = []
    for name in MILESTONES:
        values = [run.since_sent()[name] for run in runs if name in run.marks]
        if values:
            parts.append(f"{name} {statistics.median(values):.2f}")
    return ", ".join(parts)


def round_row(count: int, visits: list[Visit], memory: tuple[float, float], step: int, wall_s: float) -> str:
    new = [v.new_figure_s for v in visits if v.new_figure_s is not None]
    first = [v.first_page_s for v in visits if v.first_page_s is not None]
    errors = sum(len(v.errors) for v in visits)
    cells = [
        count,
        *(f"{percentile(new, q):.2f}" for q in (50, 95, 100)),
        *(f"{percentile(first, q):.2f}" for q in (50, 95, 100)),
        errors,
        f"{memory[0]:.0f} ({memory[1]:.0f})",
        step,
        f"{wall_s:.1f}",
    ]
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def print_errors(visits: list[Visit]) -> None:
    errors = [error for v in visits for error in v.errors]
    for error in sorted(set(errors)):
        print(f"    {errors.count(error)} x {error}")


def apply_server_config(settings: list[str]) -> None:
    """Hand NAME=VALUE config options to the server through its environment (app files stay as they are)."""
    options = streamlit.config.get_config_options()
    for setting in settings:
        option, _, value = setting.partition("=")
        if option not in options:
            raise SystemExit(f"--server-config: streamlit has no config option {option!r}")
        os.environ[options[option].env_var] = value  # e.g. STREAMLIT_RUNNER_POST_SCRIPT_GC


def warm_up(port: int, timeout: float) -> None:
    """Ask /_stcore/script-health-check, which runs app.py once in a detached session (imports, model, trace)."""
    start = time.perf_counter()
    url = f"http://{LOOPBACK}:{port}/_stcore/script-health-check"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - loopback only
            answer = f"{response.status} {response.read().decode()[:80]}"
    except urllib.error.HTTPError as err:
        answer = f"{err.code} {err.read().decode()[:80]}"
    except OSError as err:
        answer = f"failed: {err}"
    print(
        f"Warm-up: /_stcore/script-health-check answered {answer} after {time.perf_counter() - start:.2f} s"
    )


def cold_start(port: int, args, deadline: float) -> Visit:
    """One visitor on the fresh server, right after it said it is up."""
    [result] = asyncio.run(lecture_hall(port, 0, [0.0], args, deadline - time.monotonic()))
    print(
        f"Fresh server, one visitor: first page {result.first_page_s or math.nan:.2f} s (goal < 2 s), "
        f"new figure {result.new_figure_s or math.nan:.2f} s, errors {len(result.errors)}"
    )
    if result.runs:
        first = result.runs[0]
        print(
            f"  first run, seconds after the request: {timeline(first)}"
            + (
                "; a page_not_found came first (Streamlit's pages/-folder mode on a fresh server)"
                if first.page_not_found
                else ""
            )
        )
    print_errors([result])
    return result


def load_rounds(port: int, server_pid: int, run_dir: Path, args, deadline: float) -> tuple[list[str], dict]:
    """Every N of args.visitors in turn on the same server; returns the table rows and the visits per N."""
    rng = random.Random(args.seed)
    rows = []
    rounds = {}
    next_index = 1
    for count in args.visitors:
        if deadline - time.monotonic() <= 0:
            print(f"N = {count}: skipped, the total runtime cap ({args.max_runtime:.0f} s) was reached")
            break
        start = time.monotonic()
        load_before = os.getloadavg()[0]
        delays = [rng.uniform(0, args.jitter) for _ in range(count)]
        visits = rounds[count] = asyncio.run(
            lecture_hall(port, next_index, delays, args, deadline - time.monotonic())
        )
        wall_s = time.monotonic() - start
        next_index += count
        rows.append(round_row(count, visits, server_memory_mib(server_pid), training_step(run_dir), wall_s))
        print(rows[-1], flush=True)
        timed = [v.runs[-1] for v in visits if v.new_figure_s is not None]
        print(
            f"    new-figure run, median seconds after the request: {median_timeline(timed)}; "
            f"load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after"
        )
        print_errors(visits)
    return rows, rounds


def key_values(cold: Visit, rounds: dict[int, list[Visit]], rss_start: float) -> str:
    """The figures of record as key=value lines: the fresh server's first page, then per N the new figure's p95 and
    the errors."""
    nan = math.nan
    lines = [
        f"fresh_first_page_s={cold.first_page_s or nan:.2f}",
        f"fresh_new_figure_s={cold.new_figure_s or nan:.2f}",
        f"rss_start_mib={rss_start:.0f}",
    ]
    for count, visits in rounds.items():
        new = [v.new_figure_s for v in visits if v.new_figure_s is not None]
        lines += [
            f"visitors_{count}_new_figure_p95_s={percentile(new, 95):.2f}",
            f"visitors_{count}_errors={sum(len(v.errors) for v in visits)}",
        ]
    return "\n".join(lines)


def goals(cold: Visit, rounds: dict[int, list[Visit]]) -> str:
    """The issue's goals, met or not: fresh first page < 2 s; at the largest N, p95 < 5 s and no errors."""
    met = {True: "met", False: "NOT met"}
    first = cold.first_page_s if cold.first_page_s is not None else math.inf
    lines = [f"Goals: fresh server's first page {first:.2f} s < 2 s: {met[first < 2]}"]
    if rounds:
        count = max(rounds)
        p95 = percentile([v.new_figure_s for v in rounds[count] if v.new_figure_s is not None], 95)
        errors = sum(len(v.errors) for v in rounds[count])
        lines.append(
            f"N = {count}: new figure p95 {p95:.2f} s < 5 s: {met[p95 < 5]}; errors {errors}: {met[errors == 0]}"
        )
    return "; ".join(lines)


HEADER = (
    "| visitors | new figure p50 s | p95 s | max s | first page p50 s | p95 s | max s | errors "
    "| server RSS MiB (peak) | training step | round wall s |\n|---|---|---|---|---|---|---|---|---|---|---|"
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--visitors",
        type=int,
        nargs="+",
        default=[1, 10, 30],
        help="visitor counts, one round each, in this order on the same server",
    )
    parser.add_argument(
        "--model",
        choices=[DEFAULT_MODEL, MINILM],
        default=DEFAULT_MODEL,
        help="the model every visitor picks in the sidebar (default: the app's)",
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds allowed for each script run")
    parser.add_argument("--max-runtime", type=float, default=1200.0, help="seconds for the whole benchmark")
    parser.add_argument("--jitter", type=float, default=0.5, help="visitors start within this many seconds")
    parser.add_argument(
        "--train-steps",
        type=int,
        default=100_000,
        help="steps of the classroom training run (more than the bench lasts, so it trains throughout)",
    )
    parser.add_argument("--no-training", action="store_true", help="no training run beside the server")
    parser.add_argument(
        "--server-config",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a streamlit config option for the server, e.g. runner.postScriptGC=false (repeatable)",
    )
    parser.add_argument(
        "--warm-up",
        action="store_true",
        help="enable and call /_stcore/script-health-check before the first visitor",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--workers",
        type=int,
        default=0,
        help="start the app as `python -m bertviz_lite.serve --workers N` (haproxy in front, sticky "
        "sessions) instead of one streamlit; RSS is then the sum over its processes",
    )
    parser.add_argument(
        "--long",
        action="store_true",
        help="512-token inputs: each visitor's new sentence A is padded and max length set to 512",
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=30.0,
        help="seconds to wait after the last visitor left before reading the server's RSS again",
    )
    add_smoke_flag(parser, argv, visitors=[1], no_training=True, settle=0.0)
    args = parser.parse_args(argv)
    if max(args.visitors) + sum(args.visitors) >= len(NOUNS) * len(ADJECTIVES):
        parser.error(f"at most {len(NOUNS) * len(ADJECTIVES) - 1} visitors in all")
    return args


def describe_machine() -> str:
    load = os.getloadavg()
    return (
        f"{datetime.date.today()}, {platform.machine()}, {os.cpu_count()} cores, load average "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, Python {platform.python_version()}, "
        f"streamlit {streamlit.__version__}"
    )


def start_app(port: int, workers: int) -> subprocess.Popen:
    """One `streamlit run app.py` on the port (workers 0), or `python -m bertviz_lite.serve --workers N` with
    haproxy on the port (its /_stcore/health answers once every worker does)."""
    if not workers:
        return start_streamlit(port, ARTIFACTS / "classroom_streamlit.log")
    command = serve_command(workers, port, ARTIFACTS / "classroom_serve")
    log = open(ARTIFACTS / "classroom_serve.log", "w")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    deadline = time.monotonic() + args.max_runtime
    print(describe_machine())
    print(f"Client: {CLIENT}. Model: {args.model}. Per-run timeout {args.timeout:g} s.")
    print(
        f"App: {f'{args.workers} workers behind haproxy (python -m bertviz_lite.serve)' if args.workers else 'one streamlit'}"
    )
    print(
        "Milestones of a script run: "
        + "; ".join(f"{name} = {text}" for name, text in MILESTONE_HELP.items())
    )
    if args.warm_up:
        args.server_config.append("server.scriptHealthCheckEnabled=true")
    if args.server_config:
        print(f"Server config: {' '.join(args.server_config)}")
    apply_server_config(args.server_config)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    port = free_port()
    server = start_app(port, args.workers)
    training = None
    with tempfile.TemporaryDirectory(prefix="classroom_load_") as tmp:
        run_dir = Path(tmp) / "run"
        try:
            wait_until_healthy(f"http://{LOOPBACK}:{port}", server, timeout=60.0 + 30.0 * args.workers)
            if args.warm_up:
                warm_up(port, args.timeout)
            cold = cold_start(port, args, deadline)
            if not args.no_training:
                training = start_training(run_dir, args.train_steps)
                print(
                    f"Training run (--preset classroom --threads 1): {wait_for_training(run_dir, training)}"
                )
            rss_start = server_memory_mib(server.pid)[0]
            print(HEADER, flush=True)
            rows, rounds = load_rounds(port, server.pid, run_dir, args, deadline)
            memory = memory_after_leaving(server.pid, rss_start, args.settle)
            print(memory, flush=True)
            learned = "no training run" if args.no_training else time_to_goal(run_dir, training)
            print(learned, flush=True)
        finally:
            if training is not None:
                stop(training)
            stop(server)
    print(
        f"\n{describe_machine()}\n{HEADER}\n"
        + "\n".join(rows)
        + f"\n\n{memory}\n{learned}\n{goals(cold, rounds)}"
    )
    print(key_values(cold, rounds, rss_start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
