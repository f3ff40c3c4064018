"""Does bf16 autocast on the CPU (or the compiled step) train as well as float32's eager step? Held-out loss curves.

    python bench/bf16_loss_match.py --preset tiny
    python bench/bf16_loss_match.py --preset small --steps 300
    python bench/bf16_loss_match.py --preset small --steps 300 --against compiled   # the --compile step (issue 34)

Trains the preset three times on the same data: float32 with seed 0 and seed 1 (their gap is the
noise), and the variant with seed 0: bf16 autocast, or with `--against compiled` the compiled, sync-free step in
float32 (`--compile on`: pairs padded to seq_len, the MLM head on a fixed number of rows, torch.compile). Prints the
held-out loss at every evaluation, then `max_gap_seed` (float32 seed 0 vs seed 1) and `max_gap_<variant>` (the
variant vs float32, same seed) over the second half of the run, and the wall time of each run. The variant
"matches within noise" when max_gap_<variant> <= max_gap_seed.
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

# name: (dtype, seed, compile); the last run is the variant, chosen by --against
BASELINE = {"fp32 seed 0": ("fp32", 0, "off"), "fp32 seed 1": ("fp32", 1, "off")}
VARIANTS = {"bf16": ("bf16 seed 0", ("bf16", 0, "off")), "compiled": ("compiled seed 0", ("fp32", 0, "on"))}


def held_out_losses(
    preset: str, dtype: str, seed: int, compile: str, steps: int | None, eval_every: int, **sizes: int | None
) -> tuple[dict, float]:
    """{step: held-out loss} of one run, and its wall seconds; sizes: TrainingArguments' (None: the preset's)."""
    with tempfile.TemporaryDirectory() as folder:
        given = {name: value for name, value in sizes.items() if value is not None}
        args = TrainingArguments(
            preset=preset,
            dtype=dtype,
            seed=seed,
            compile=compile,
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
    parser.add_argument(
        "--against", default="bf16", choices=list(VARIANTS), help="the third run (default: bf16)"
    )
    add_smoke_flag(
        parser, argv, steps=2, eval_every=2, batch_size=4, eval_pairs=16, num_documents=200, threads=1
    )
    options = parser.parse_args(argv)
    torch.set_num_threads(options.threads)
    variant, run = VARIANTS[options.against]
    runs = {**BASELINE, variant: run}
    curves = {}
    seconds = {}
    for name, (dtype, seed, compile) in runs.items():
        curves[name], seconds[name] = held_out_losses(
            options.preset,
            dtype,
            seed,
            compile,
            options.steps,
            options.eval_every,
            batch_size=options.batch_size,
            eval_pairs=options.eval_pairs,
            num_documents=options.num_documents,
        )
    steps = sorted(curves["fp32 seed 0"])
    print(
        f"preset={options.preset} threads={torch.get_num_threads()} torch={torch.__version__} load={_load()}"
    )
    print("step  " + "  ".join(f"{name:>15s}" for name in runs))
    for step in steps:
        print(f"{step:5d} " + "  ".join(f"{curves[name][step]:15.4f}" for name in runs))
    late = steps[len(steps) // 2 :]
    gap = lambda a, b: max(abs(curves[a][s] - curves[b][s]) for s in late)  # noqa: E731
    for name in runs:
        print(f"wall_s_{name.replace(' ', '_')}={seconds[name]:.1f}")
    print(
        f"final_{options.against}={curves[variant][steps[-1]]:.4f} final_fp32_seed_0={curves['fp32 seed 0'][steps[-1]]:.4f}"
    )
    print(f"max_gap_seed={gap('fp32 seed 0', 'fp32 seed 1'):.4f}")
    print(f"max_gap_{options.against}={gap('fp32 seed 0', variant):.4f}")


def _load() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "unknown"


if __name__ == "__main__":
    main()
