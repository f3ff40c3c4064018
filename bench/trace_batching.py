"""What batching traces saves: one padded traced pass for many short sentences (bertviz_lite/model/batching.py).

Loads the default model (checkpoints/minilm-english) and times, on sentences of a dozen tokens each:
- one lone `model.trace` (what trace_pair did per visitor);
- one padded pass of 8, 16 and 32 sentences, split back into one trace each, per sentence;
- 32 threads calling `explore.trace_pair` at the same moment (a lecture hall typing together), with and without
  batching: wall time until the last trace is back, and each caller's latency (p50, p95).

    python bench/trace_batching.py [--repeats 5] [--threads 32]

Prints key=value lines (milliseconds).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._smoke import add_smoke_flag  # noqa: E402
from bertviz_lite.inspection import explore  # noqa: E402
from bertviz_lite.loading.pretrained import ENGLISH, load  # noqa: E402
from bertviz_lite.model.batching import batcher_for, pad_inputs, split_trace  # noqa: E402

SUBJECTS = [
    "The cat",
    "A student",
    "My neighbour",
    "The old teacher",
    "Her brother",
    "The small dog",
    "A farmer",
    "The pilot",
]
ACTIONS = [
    "sat on the mat",
    "read a long book",
    "ran to the station",
    "cooked dinner for everyone",
    "painted the fence",
    "slept in the sun",
]


def sentences(count: int) -> list[str]:
    """`count` different sentences of about a dozen tokens each."""
    return [
        f"{SUBJECTS[i % len(SUBJECTS)]} {ACTIONS[i % len(ACTIONS)]} because it was day {i}."
        for i in range(count)
    ]


def best_ms(run, repeats: int) -> float:
    """The median of `repeats` timings of run(), in milliseconds (after one warm-up)."""
    run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def batched_ms(model, tokenizer, size: int, repeats: int) -> float:
    requests = [explore.encode(tokenizer, text, None, 128).to_tensors() for text in sentences(size)]

    def run():
        batch, lengths = pad_inputs(requests, model.config.pad_token_id)
        with torch.inference_mode():
            split_trace(model.trace(**batch, heads=False), lengths)

    return best_ms(run, repeats) / size


def together(model, tokenizer, threads: int, batched: bool, round_: int) -> tuple[float, list[float]]:
    """`threads` threads call trace_pair at once (new sentences each round); (wall ms, each caller's ms)."""
    texts = [f"{text} Round {round_}." for text in sentences(threads)]
    barrier = threading.Barrier(threads + 1)
    latencies: list[float] = []

    def visitor(text):
        barrier.wait()
        start = time.perf_counter()
        explore.trace_pair(model, tokenizer, text, None, 128, batched=batched)
        latencies.append((time.perf_counter() - start) * 1000)

    workers = [threading.Thread(target=visitor, args=(text,)) for text in texts]
    for worker in workers:
        worker.start()
    barrier.wait()
    start = time.perf_counter()
    for worker in workers:
        worker.join()
    return (time.perf_counter() - start) * 1000, latencies


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=32)
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 16, 32], help="sentences per padded pass")
    add_smoke_flag(parser, argv, repeats=1, threads=2, sizes=[2])
    args = parser.parse_args(argv)
    model, tokenizer = load(ENGLISH)
    model.eval()
    lone = explore.encode(tokenizer, sentences(1)[0], None, 128).to_tensors()
    print(f"tokens_per_sentence={lone['input_ids'].shape[1]} torch_threads={torch.get_num_threads()}")

    def trace_lone():
        with torch.inference_mode():
            model.trace(**lone, heads=False)

    print(f"lone_trace_ms={best_ms(trace_lone, 4 * args.repeats):.1f}")
    for size in args.sizes:
        print(f"batched_{size}_per_sentence_ms={batched_ms(model, tokenizer, size, args.repeats):.2f}")
    for batched in (False, True):
        name = "batched" if batched else "unbatched"
        passes_before = batcher_for(model).passes
        walls = []
        latencies = []
        for round_ in range(args.repeats):
            wall, each = together(model, tokenizer, args.threads, batched, round_)
            walls.append(wall)
            latencies.extend(each)
        latencies.sort()
        p95 = latencies[int(0.95 * (len(latencies) - 1))]
        print(
            f"{args.threads}_threads_{name}_wall_ms={statistics.median(walls):.0f} "
            f"p50_ms={statistics.median(latencies):.0f} p95_ms={p95:.0f} "
            f"passes_per_round={(batcher_for(model).passes - passes_before) / args.repeats:.1f}"
        )


if __name__ == "__main__":
    main()
