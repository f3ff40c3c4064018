"""Does bf16 autocast on the CPU train as well as float32? Held-out loss curves side by side.

    python bench/bf16_loss_match.py --preset tiny
    python bench/bf16_loss_match.py --preset small --steps 300

Trains the preset three times on the same data: float32 with seed 0 and seed 1 (their gap is the
noise), and bf16 autocast with seed 0. Prints the held-out loss at every evaluation, then
`max_gap_seed` (float32 seed 0 vs seed 1) and `max_gap_bf16` (bf16 vs float32, same seed) over the
second half of the run, and the wall time of each run. bf16 "matches within noise" when
max_gap_bf16 <= max_gap_seed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._smoke import add_smoke_flag  # noqa: E402
from bertviz_lite.loading.run_folder import read_metrics  # noqa: E402
from bertviz_lite.training.trainer import Trainer  # noqa: E402
from bertviz_lite.training.training_args import TrainingArguments  # noqa: E402

RUNS = {"fp32 seed 0": ("fp32", 0), "fp32 seed 1": ("fp32", 1), "bf16 seed 0": ("bf16", 0)}


def held_out_losses(
    preset: str, dtype: str, seed: int, steps: int | None, eval_every: int, **sizes: int | None
) -> tuple[dict, float]:
    """{step: held-out loss} of one run, and its wall seconds; sizes: TrainingArguments' (None: the preset's)."""
    with tempfile.TemporaryDirectory() as folder:
        given = {name: value for name, value in sizes.items() if value is not None}
        args = TrainingArguments(
            preset=preset,
            dtype=dtype,
            seed=seed,
            steps=steps,
            eval_every=eval_every,
            snapshot_every=10_000_000,
            save_every=0,
            device="cpu",
            out=f"{folder}/run",
            **given,
        )
        trainer = Trainer(args)
        started = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - started
        records = read_metrics(Path(folder) / "run", "eval")
    return {r["step"]: r["eval_loss"] for r in records}, seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--eval-every", type=int, default=50)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=None, help="default: the preset's")
    parser.add_argument(
        "--eval-pairs", type=int, default=None, help="held-out pairs (default: the trainer's)"
    )
    parser.add_argument(
        "--num-documents", type=int, default=None, help="built-in stories (default: the trainer's)"
    )
    add_smoke_flag(parser, argv, steps=4, eval_every=2, batch_size=4, eval_pairs=16, num_documents=200)
    options = parser.parse_args(argv)
    torch.set_num_threads(options.threads)
    curves, seconds = {}, {}
    for name, (dtype, seed) in RUNS.items():
        curves[name], seconds[name] = held_out_losses(
            options.preset,
            dtype,
            seed,
            options.steps,
            options.eval_every,
            batch_size=options.batch_size,
            eval_pairs=options.eval_pairs,
            num_documents=options.num_documents,
        )
    steps = sorted(curves["fp32 seed 0"])
    print(f"preset={options.preset} threads={torch.get_num_threads()} torch={torch.__version__}")
    print("step  " + "  ".join(f"{name:>12s}" for name in RUNS))
    for step in steps:
        print(f"{step:5d} " + "  ".join(f"{curves[name][step]:12.4f}" for name in RUNS))
    late = steps[len(steps) // 2 :]
    gap = lambda a, b: max(abs(curves[a][s] - curves[b][s]) for s in late)  # noqa: E731
    for name in RUNS:
        print(f"wall_s_{name.replace(' ', '_')}={seconds[name]:.1f}")
    print(f"max_gap_seed={gap('fp32 seed 0', 'fp32 seed 1'):.4f}")
    print(f"max_gap_bf16={gap('fp32 seed 0', 'bf16 seed 0'):.4f}")


if __name__ == "__main__":
    main()
