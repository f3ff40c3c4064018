"""Our training step in bf16 against our own float32 step, in one run (issue 34: bf16 at least 2x float32 on the CPU).

    python bench/bf16_speed.py                        # the small size, 16 x 128, 2 threads
    python bench/bf16_speed.py --reps 7 --threads 1

Three sides from the same initial weights on the same random-token batches, in interleaved repetitions: float32; bf16
as the trainer runs it on a CPU (`--dtype bf16`: a bf16 copy of the weights, the float32 model as master weights,
optimization.Bf16Weights); and bf16 autocast over the float32 weights (the CPU's bf16 step before 2026-11-28, and
the GPU's). Prints key=value lines: each side's median tokens/s, then `bf16_over_fp32` and `autocast_over_fp32`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._smoke import add_smoke_flag  # noqa: E402
from bench.train_throughput import (  # noqa: E402
    SMOKE_STEPS,
    Side,
    add_step_options,
    model_config,
    our_side,
    random_batches,
    time_steps,
)
from bertviz_lite.model.modeling import BertForPreTraining  # noqa: E402
from bertviz_lite.training.optimization import BF16_EMULATED, cpu_has_bf16  # noqa: E402

# side: (the dtype optimizer_step is told, whether it steps a bf16 copy)
SIDES = {"fp32": ("fp32", False), "bf16": ("bf16", True), "autocast": ("bf16", False)}


def build(size: str, batch: int, seq_len: int, vocab: int | None, steps: int) -> tuple[dict[str, Side], int]:
    """The three sides (SIDES), each its own copy of one model and its own AdamW, and the tokens of their batches."""
    config = model_config(size, seq_len, vocab)
    batches = random_batches(steps, batch, seq_len, config.vocab_size)
    torch.manual_seed(0)
    model = BertForPreTraining(config)
    sides = {name: our_side(name, model, torch.device("cpu"), copied) for name, (_, copied) in SIDES.items()}
    for side in sides.values():
        side.batches = batches
    return sides, sum(int(b["attention_mask"].sum()) for b in batches)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_step_options(parser, warmup=2)
    add_smoke_flag(parser, argv, **SMOKE_STEPS)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    cpu = torch.device("cpu")
    sides, tokens = build(args.size, args.batch, args.seq_len, args.vocab_size, args.steps_per_rep)
    native = cpu_has_bf16()
    print(
        f"size={args.size} batch={args.batch}x{args.seq_len} threads={args.threads} reps={args.reps} "
        f"cpu_has_bf16={int(native)}"
    )
    if not native:  # the bf16 sides then take minutes: say why before they start
        print(f"# {BF16_EMULATED}", flush=True)
    for name, side in sides.items():
        time_steps(side, cpu, SIDES[name][0], side.batches[: args.warmup])
    rates: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(args.reps):  # interleaved, so that a busy moment hits every side alike
        for name, side in sides.items():
            rates[name].append(tokens / time_steps(side, cpu, SIDES[name][0]))
    medians = {name: statistics.median(values) for name, values in rates.items()}
    for name, values in rates.items():
        print(f"{name}_tokens_per_s={medians[name]:.0f} all={[round(v) for v in values]}")
    print(f"autocast_over_fp32={medians['autocast'] / medians['fp32']:.2f}")
    print(f"bf16_over_fp32={medians['bf16'] / medians['fp32']:.2f}")


if __name__ == "__main__":
    main()
