"""Where a rerun's time goes under a burst: bench/live_class_load.py's rounds with py-spy sampling the server.

Starts the app (devtools/server.py), lets one visitor open the fresh server, starts the classroom training
run beside it, then attaches py-spy (`pip install py-spy`; it reads the process from outside, so the app has no
hook) to the server and runs the visitor rounds. Every sample of a busy server thread (idle threads, and threads
waiting for the GIL, are not sampled) is put in the first bucket that one of its frames matches, in this order:

    model trace, model load, serialisation (plotly JSON, protobuf), figure building (figures/ and plotly),
    view data (inspection/), Streamlit's caches (hashing, lookups), imports, page script (our code and the
    Streamlit calls it makes: widgets, sidebar, layout), Streamlit's own work (script runner, sessions, server)

    python bench/rerun_profile.py [--visitors 30 30 30] [--rate 200]

Prints key=value lines: the share of samples per bucket, and the top functions of the largest buckets. py-spy is in
requirements-dev.txt; without it, --smoke runs the rest (server, visitor, training run, rounds) unprofiled.
"""

from __future__ import annotations

import argparse
import collections
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import live_class_load as load  # noqa: E402 - the same visitors, server and training run
from _smoke import add_smoke_flag  # noqa: E402

# (bucket, substrings of a frame "function (file:line)"); the first bucket any frame of a sample matches wins.
BUCKETS = (
    ("model trace", ("get_trace (", "trace_encoding (")),
    ("model load", ("load_model (", "loading/pretrained.py")),
    (
        "serialisation (plotly JSON, protobuf)",
        (
            "plotly/io/_json.py",
            "/json/encoder.py",
            "SerializeToString",
            "serialize_forward_msg",
            "PlotlyJSONEncoder",
            "orjson",
        ),
    ),
    ("figure building (figures/, plotly)", ("bertviz_lite/figures/", "/plotly/", "/_plotly_utils/")),
    ("view data (inspection/)", ("bertviz_lite/inspection/",)),
    ("Streamlit caches (hash, lookup)", ("streamlit/runtime/caching/",)),
    ("imports", ("<frozen importlib._bootstrap",)),
    ("page script (pages_app/, app.py, the widgets it draws)", ("/pages_app/", "/app.py")),
)
OWN = "Streamlit's own (script runner, sessions, server, messages)"


def bucket(frames: list[str]) -> str:
    for name, needles in BUCKETS:
        if any(needle in frame for frame in frames for needle in needles):
            return name
    return OWN if any("streamlit/" in frame or "tornado/" in frame for frame in frames) else "other"


def read_samples(path: Path) -> list[tuple[list[str], int]]:
    """py-spy's raw format: `frame;frame;...;leaf count` per line, root first."""
    samples = []
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            samples.append((stack.split(";"), int(count)))
    return samples


def split(samples: list[tuple[list[str], int]], top: int) -> str:
    """key=value lines: each bucket's share, then its heaviest leaf functions."""
    totals = collections.Counter()
    leaves = collections.defaultdict(collections.Counter)
    for frames, count in samples:
        name = bucket(frames)
        totals[name] += count
        leaves[name][frames[-1].split(" (")[0] + " (" + frames[-1].rsplit("/", 1)[-1]] += count
    everything = sum(totals.values()) or 1
    lines = [f"samples={everything}"]
    for name, count in totals.most_common():
        lines.append(f"share[{name}]={100 * count / everything:.1f}%")
        lines.append(f"share_{_key(name)}_percent={100 * count / everything:.1f}")
        for leaf, leaf_count in leaves[name].most_common(top):
            lines.append(f"    {100 * leaf_count / everything:5.1f}%  {leaf}")
    return "\n".join(lines)


def _key(bucket_name: str) -> str:
    """A bucket's name as a key: its first words, e.g. "model trace" -> model_trace, "Streamlit's own" -> streamlits_own."""
    words = bucket_name.split(" (")[0].replace("'", "").replace(",", "").lower().split()
    return "_".join(words[:3])


def attach(pid: int, out: Path, rate: int) -> subprocess.Popen:
    command = [
        "py-spy",
        "record",
        "--pid",
        str(pid),
        "--format",
        "raw",
        "--output",
        str(out),
        "--rate",
        str(rate),
        "--full-filenames",
        "--nonblocking",
    ]
    spy = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Once attached it says "py-spy> Sampling process 200 times a second. …" on stdout; if it cannot, it ends.
    said = spy.stdout.readline()
    if "Sampling process" not in said:
        spy.wait(timeout=60)
        raise SystemExit(f"py-spy could not attach to the server: {said.strip()} {spy.stderr.read().strip()}")
    return spy


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--visitors", type=int, nargs="+", default=[30, 30, 30])
    parser.add_argument("--rate", type=int, default=200, help="py-spy samples per second")
    parser.add_argument("--train-steps", type=int, default=100_000)
    parser.add_argument("--top", type=int, default=6, help="leaf functions listed per bucket")
    parser.add_argument(
        "--read", type=Path, help="only split a raw profile written before (tests/artifacts/...)"
    )
    add_smoke_flag(parser, argv, visitors=[1], rate=50, train_steps=2, top=2)
    ours = parser.parse_args(argv)
    profiled = shutil.which("py-spy") is not None
    if not profiled and not ours.smoke:
        raise SystemExit("py-spy is not installed: pip install py-spy (requirements-dev.txt)")
    if ours.read:
        print(split(read_samples(ours.read), ours.top))
        return 0
    args = load.parse_args(["--visitors", *map(str, ours.visitors), "--train-steps", str(ours.train_steps)])
    print(load.describe_machine())
    load.ARTIFACTS.mkdir(parents=True, exist_ok=True)
    port = load.free_port()
    raw = load.ARTIFACTS / "rerun_profile.txt"
    server = load.start_streamlit(port, load.ARTIFACTS / "rerun_profile_streamlit.log")
    deadline = time.monotonic() + args.max_runtime
    with tempfile.TemporaryDirectory(prefix="rerun_profile_") as tmp:
        run_dir = Path(tmp) / "run"
        training = None
        spy = None
        try:
            load.wait_until_healthy(f"http://{load.LOOPBACK}:{port}", server)
            load.cold_start(port, args, deadline)
            smaller = ("--num-documents", "200", "--eval-pairs", "16") if ours.smoke else ()
            training = load.start_training(run_dir, args.train_steps, *smaller)
            print(f"Training run: {load.wait_for_training(run_dir, training)}")
            if profiled:
                spy = attach(server.pid, raw, ours.rate)  # the rounds start once it samples
            print(load.HEADER)
            load.load_rounds(port, server.pid, run_dir, args, deadline)
        finally:
            if spy is not None:
                spy.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
                spy.wait(timeout=60)
            if training is not None:
                load.stop(training)
            load.stop(server)
    print(split(read_samples(raw), ours.top) if profiled else "profiled=false (py-spy is not installed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
