"""Training steps with the batches made one by one vs made ahead in a thread (training/prefetch.py).

    python bench/prefetch_overlap.py --device cuda      # minilm-english's steps on a GPU, batch 256 x 128
    python bench/prefetch_overlap.py --stand-in-ms 70   # on a CPU: a GIL-free stand-in for a GPU's step

The batches are the English corpus (english+everyday) collated as a GPU run of the English model does it (whole-word
masking, repeated words masked, 128 tokens) by the trainer's own collator; the step is the trainer's optimizer_step on
minilm-english's architecture. A GPU step leaves the CPU idle while it waits for the GPU, and the collator (~50 ms a
batch of 256 on these CPUs) then runs beside it. On a CPU a real step keeps the cores busy itself, so --stand-in-ms
replaces it with matrix products of about that length in which the thread holds no GIL (what a GPU step is to the
CPU): it shows the overlap, not a training speed. Repetitions alternate the two ways. Prints steps_per_s for each
and, last, speedup_made_ahead=<made ahead / one by one>.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._smoke import add_smoke_flag  # noqa: E402
from bertviz_lite.loading.pretrained import DEFAULT_MODEL, load  # noqa: E402
from bertviz_lite.text.corpora import english_corpus, everyday_corpus  # noqa: E402
from bertviz_lite.text.pretraining_data import PretrainingCollator, make_nsp_pairs  # noqa: E402
from bertviz_lite.training.optimization import PretrainingStep, make_optimizer, optimizer_step  # noqa: E402
from bertviz_lite.training.prefetch import PREFETCH_DEPTH, made_ahead  # noqa: E402


def batch_maker(batch_size: int, tokenizer, documents: int | None = None):
    """A function that collates the next batch of English pairs, as a GPU run of the English model does.

    documents: only the first N documents of the corpus (None: all)."""
    pairs = make_nsp_pairs((english_corpus() + everyday_corpus())[:documents], seed=0)
    collate = PretrainingCollator(tokenizer, 128, 0.15, whole_word_mask=True, mask_repeats=True)
    generator = torch.Generator().manual_seed(0)
    starts = itertools.cycle(range(0, len(pairs) - batch_size, batch_size))
    return lambda: collate(pairs[(start := next(starts)) : start + batch_size], generator)


def step_function(args, model, device):
    """One training step on a batch: the trainer's optimizer_step, or the GIL-free stand-in."""
    if args.stand_in_ms:
        matrix = torch.randn(512, 512)
        matrix @ matrix  # warm-up
        started = time.perf_counter()
        for _ in range(20):
            matrix @ matrix
        repeats = max(1, round(args.stand_in_ms / 1000 / ((time.perf_counter() - started) / 20)))
        return lambda batch: [matrix @ matrix for _ in range(repeats)]
    module = PretrainingStep(model.to(device))
    optimizer = make_optimizer(model, 1e-5, 0.01)
    dtype = torch.bfloat16 if device.type == "cuda" else None

    def step(batch):
        batch = {name: tensor.to(device, non_blocking=True) for name, tensor in batch.items()}
        optimizer_step(module, optimizer, batch, 1.0, dtype)
        if device.type == "cuda":
            torch.cuda.synchronize()

    return step


def steps_per_s(step, make, depth: int, steps: int) -> float:
    with made_ahead(make, depth) as next_batch:
        step(next_batch())  # warm-up, and the first batch made
        started = time.perf_counter()
        for _ in range(steps):
            step(next_batch())
        return steps / (time.perf_counter() - started)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--model", default=DEFAULT_MODEL, help="a model name or folder (its tokenizer and size)"
    )
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads on the CPU (the other core collates)"
    )
    parser.add_argument(
        "--stand-in-ms", type=float, default=0.0, help="a GIL-free stand-in step of this many ms"
    )
    parser.add_argument(
        "--documents", type=int, default=None, help="only the first N documents (default: all)"
    )
    add_smoke_flag(parser, argv, model="demo-tiny", batch_size=4, steps=2, reps=1, documents=200)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    model, tokenizer = load(args.model)
    make = batch_maker(args.batch_size, tokenizer, args.documents)
    step = step_function(args, model, torch.device(args.device))
    collating = time.perf_counter()
    make()
    print(f"collate_ms={1000 * (time.perf_counter() - collating):.1f}")
    batch = make()
    stepping = time.perf_counter()
    step(batch)
    print(f"step_ms={1000 * (time.perf_counter() - stepping):.1f}")  # the first: with any warm-up
    rates: dict[int, list[float]] = {0: [], PREFETCH_DEPTH: []}
    for _ in range(args.reps):
        for depth in rates:
            rates[depth].append(steps_per_s(step, make, depth, args.steps))
    one_by_one, ahead = (statistics.median(rates[depth]) for depth in rates)
    print(f"device={args.device} batch_size={args.batch_size} stand_in_ms={args.stand_in_ms:g}")
    print(f"one_by_one_steps_per_s={one_by_one:.2f}")
    print(f"made_ahead_steps_per_s={ahead:.2f}")
    print(f"speedup_made_ahead={ahead / one_by_one:.2f}")


if __name__ == "__main__":
    main()
