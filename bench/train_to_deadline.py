"""Train with `python -m bertviz_lite.train`'s options, but fit the schedule to a wall-clock budget.

    python bench/train_to_deadline.py --minutes 6 -- --init .gpu/minilm --corpus english+everyday ... --steps 6000

For a lent GPU, whose minutes are counted: after `--measure-after` steps the step rate is measured and `--steps`
set (never above the given number) to the steps that end before the deadline, rounded down to a hundred; the
learning rate then warms up and decays over that number, as if it had been given. Every 500 steps after that the
fit is made again from the rate of the last 500 steps, so a slow start (other work on the machine, the first
kernels compiled) does not cut the run short; each new fit bends the decay a little. The run folder is an
ordinary one: train_args.json records the steps the run really had. Prints key=value lines.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._smoke import add_smoke_flag  # noqa: E402
from bertviz_lite.training.cli import prepare  # noqa: E402
from bertviz_lite.training.distributed import Distributed  # noqa: E402
from bertviz_lite.training.trainer import Trainer, TrainerCallback  # noqa: E402

RECHECK_EVERY = 500
SAFETY = 0.93  # evaluations, snapshots and saves cost time the first measurement does not see
# --smoke without training options: a few steps of the tiny preset on a little data, in a temporary folder.
SMOKE_RUN = (
    "--preset",
    "tiny",
    "--steps",
    "6",
    "--batch-size",
    "4",
    "--num-documents",
    "200",
    "--eval-pairs",
    "16",
    "--eval-every",
    "3",
    "--log-every",
    "3",
    "--snapshot-every",
    "1000",
    "--save-every",
    "0",
    "--device",
    "cpu",
    "--threads",
    "1",
)


def fitted_steps(step: int, seconds_per_step: float, seconds_left: float, planned: int, warmup: int) -> int:
    """The total steps that end before the deadline: at most `planned`, a multiple of 100, past the warm-up."""
    fits = step + int(max(0.0, seconds_left) * SAFETY / seconds_per_step)
    fits = max(warmup + 100, fits // 100 * 100, step + 1)
    return min(planned, fits)


class FitToDeadline(TrainerCallback):
    """Sets trainer.args.steps so that the run ends by `deadline` (a time.monotonic() value)."""

    def __init__(self, deadline: float, measure_after: int, planned: int):
        self.deadline = deadline
        self.measure_after = measure_after
        self.planned = planned
        self.mark: tuple[int, float] | None = None

    def on_step(self, trainer: Trainer) -> None:
        step = trainer.step
        now = time.monotonic()
        if self.mark is None:  # the first step compiles kernels and fills caches: measure from the second
            self.mark = (step, now)
        due = step == self.measure_after or (step > self.measure_after and step % RECHECK_EVERY == 0)
        if not due or step == self.mark[0]:
            return
        per_step = (now - self.mark[1]) / (step - self.mark[0])
        self.mark = (step, now)
        steps = fitted_steps(step, per_step, self.deadline - now, self.planned, trainer.args.warmup or 0)
        if steps != trainer.args.steps:
            print(
                f"fit step={step} seconds_per_step={per_step:.4f} steps={trainer.args.steps}->{steps}",
                flush=True,
            )
            trainer.args.steps = steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--minutes", type=float, help="wall-clock budget from the start of this script (required)"
    )
    parser.add_argument(
        "--measure-after", type=int, default=60, help="steps before the first fit (default 60)"
    )
    parser.add_argument(
        "train_args", nargs=argparse.REMAINDER, help="-- then python -m bertviz_lite.train's options"
    )
    add_smoke_flag(parser, argv, minutes=0.05, measure_after=2)
    args = parser.parse_args(argv)
    if args.minutes is None:
        parser.error("--minutes is required")
    deadline = time.monotonic() + args.minutes * 60
    train_argv = args.train_args[1:] if args.train_args[:1] == ["--"] else args.train_args
    if args.smoke and not train_argv:
        with tempfile.TemporaryDirectory() as folder:
            return fit_and_train([*SMOKE_RUN, "--out", f"{folder}/run"], deadline, args.measure_after)
    return fit_and_train(train_argv, deadline, args.measure_after)


def fit_and_train(train_argv: list[str], deadline: float, measure_after: int) -> int:
    """Train with these options, the steps fitted to the deadline; print the outcome as key=value lines."""
    trainer = prepare(train_argv, Distributed(), quiet=True)
    trainer.callbacks.append(FitToDeadline(deadline, measure_after, trainer.args.steps))
    started = time.monotonic()
    result = trainer.train()
    print(f"state={result.state}\nsteps={result.step}\nseconds={time.monotonic() - started:.1f}")
    print(f"message={result.message}")
    return 0 if result.state in ("finished", "stopped") else 1


if __name__ == "__main__":
    sys.exit(main())
