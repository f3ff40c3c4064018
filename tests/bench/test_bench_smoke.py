"""Every bench script runs: `python bench/X.py --smoke` ends with exit code 0 and prints key=value lines.

A script joins by being in bench/ (private helper modules start with `_`); it must then accept --smoke, declared
with bench/_smoke.py's add_smoke_flag. No timing is asserted: a smoke run's numbers mean nothing. Each script runs in a
child forked from one interpreter that has imported torch, transformers and the other heavy third-party modules
already, and so do the Python processes it starts (the app's server, a training run, a timed case): each runs its
own command line in a fork of the script instead of a fresh interpreter (devtools/preloaded.py says what that
keeps and what it saves). The scripts run on one worker, one after another (the xdist group below): spread over both,
each worker started its own preloaded interpreter (5 CPU-s of imports each).
bench/gpu_english.sh is left out: it trains two MiniLM-sized runs for minutes from .gpu/minilm, a float16 copy made
on the lent GPU's machine that no checkout has, so there is no cheap run of it here.
"""

from __future__ import annotations

import argparse
import os
import re
import time
from pathlib import Path

import pytest

from bench._smoke import add_smoke_flag
from devtools.preloaded import Preloaded
from devtools.server import browser_for_tests

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p.name for p in (REPO / "bench").glob("*.py") if not p.name.startswith("_"))
KEY_VALUE = re.compile(r"[a-z0-9_]+=\S+(?:\s|$)")  # a line that begins with key=value
# They start the app's server on a port of their own (and the first two Debian's chromium): the browser marker keeps
# them out of the quick loop (pytest -m 'not slow and not browser').
CHROMIUM = {"browser_memory.py", "page_latency.py"}
SERVER = CHROMIUM | {"live_class_load.py", "live_class.py", "rerun_profile.py"}
TIMEOUT_S = 240
# PyTorch on one thread in the script and the processes it starts (scripts with --threads say so in their smoke
# setting too): on a busy 2-core machine two threads' spin-waits cost more CPU than a smoke run's work (time_to_learn's
# two steps: 0.1 s of CPU on one thread, 2.4 s on two).
ONE_THREAD = {"OMP_NUM_THREADS": "1"}
# Scripts whose Python children start as fresh interpreters, as a user's run starts them: train_memory_estimate's claim
# is about a fresh process's memory (and its child, started from a worker thread, ended with SIGABRT when forked).
COLD_CHILDREN = {"train_memory_estimate.py"}


def _within_budget(lines: list[str]) -> None:
    """input_bounds: every worst input is refused within 1 s of CPU and 100 MB (issue 30's acceptance)."""
    assert not [line for line in lines if line.startswith("case=") and "within_budget=True" not in line]
    worst = dict(pair.split("=", 1) for pair in lines[-1].split())
    assert float(worst["worst_cpu_s"]) <= 1.0 and float(worst["worst_peak_mb"]) <= 100


def _within_2x(lines: list[str]) -> None:
    """train_memory_estimate: the estimate within 2x of a real run's peak growth."""
    assert "within_2x=True" in lines[-1]


# Scripts whose smoke run also answers a question of their own (the output lines that hold key=value pairs).
CLAIMS = {"input_bounds.py": _within_budget, "train_memory_estimate.py": _within_2x}


def _param(name: str):
    return pytest.param(
        name, marks=[pytest.mark.browser] if name in SERVER else [], id=name.removesuffix(".py")
    )


@pytest.fixture(scope="module")
def preloaded():
    interpreter = Preloaded(env={**os.environ, **ONE_THREAD, "PYTHONUNBUFFERED": "1"})
    yield interpreter
    interpreter.close()


@pytest.mark.parametrize("script", [_param(name) for name in SCRIPTS])
def test_bench_script_runs_its_smoke_setting(script, preloaded):
    if script in CHROMIUM and not Path(browser_for_tests()).exists():
        pytest.skip("Debian's chromium is not installed (apt-get install chromium chromium-headless-shell)")
    started = time.perf_counter()
    done = preloaded.run(f"bench/{script}", timeout=TIMEOUT_S, fork_children=script not in COLD_CHILDREN)
    print(f"{script}: {time.perf_counter() - started:.1f} s")
    assert done.returncode == 0, (
        f"{script} --smoke exited with {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    lines = [line for line in done.stdout.splitlines() if KEY_VALUE.match(line)]
    assert lines, f"{script} --smoke printed no key=value line:\n{done.stdout[-3000:]}"
    CLAIMS.get(script, lambda _: None)([line for line in done.stdout.splitlines() if "=" in line])


def test_every_bench_script_declares_the_smoke_flag_through_the_helper():
    missing = [
        name
        for name in SCRIPTS
        if "add_smoke_flag(" not in (REPO / "bench" / name).read_text(encoding="utf-8")
    ]
    assert missing == []


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("rest", nargs=argparse.REMAINDER)
    add_smoke_flag(parser, argv, repeats=1)
    return parser.parse_args(argv)


def test_smoke_makes_the_smaller_values_the_defaults_and_an_option_given_still_wins():
    assert (_parse([]).repeats, _parse(["--smoke"]).repeats) == (5, 1)
    assert _parse(["--repeats", "3", "--smoke"]).repeats == _parse(["--smoke", "--repeats", "3"]).repeats == 3
    assert _parse(["--", "--smoke"]).repeats == 5  # another program's option (bench/train_to_deadline.py)
    with pytest.raises(ValueError, match="repets"):
        add_smoke_flag(argparse.ArgumentParser(), [], repets=1)
