"""Seconds until the tiny (or classroom) preset learns the built-in corpus on CPU.

    python bench/time_to_learn.py                 # tiny preset defaults, 2 threads
    python bench/time_to_learn.py --lr 3e-3       # any TrainingArguments option, to tune
    python bench/time_to_learn.py --preset classroom --full   # the whole classroom run, start to finish

"Learnt" means: held-out NSP accuracy >= 90% (classroom: 80%) and held-out MLM accuracy >= 2x the
accuracy of always predicting the most frequent token of the training pairs (the baseline, printed).
With --full the run is not stopped at the goal, and the last lines give the whole run's wall time and
its final held-out accuracies (the classroom preset's promise: all of it within 120 s). The clock starts
before the corpus is generated and the tokenizer trained, and includes the evaluations that watch
for the goal (every --eval-every steps). Last line: seconds_to_learn=<s> (or "not reached").
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._smoke import add_smoke_flag  # noqa: E402
from bertviz_lite.model.loss_rows import IGNORE_INDEX  # noqa: E402
from bertviz_lite.training.trainer import Trainer, TrainerCallback  # noqa: E402
from bertviz_lite.training.training_args import TrainingArguments  # noqa: E402

NSP_GOALS = {"tiny": 0.90, "classroom": 0.80}
MLM_FACTOR = 2.0


def most_frequent_token_baseline(trainer: Trainer) -> tuple[str, float]:
    """(token, accuracy on the held-out masked positions) of always predicting the most frequent training token."""
    encodings = trainer.tokenizer.encode_batch_pairs(
        [(a, b) for a, b, _ in trainer.train_pairs], trainer.args.seq_len
    )
    counts = collections.Counter(
        i for e in encodings for i, s in zip(e.input_ids, e.special_tokens_mask, strict=True) if not s
    )
    token_id = counts.most_common(1)[0][0]
    labels = torch.cat([b["labels"][b["labels"] != IGNORE_INDEX].cpu() for b in trainer._eval_batches()])
    return trainer.tokenizer.convert_ids_to_tokens(token_id), float((labels == token_id).float().mean())


class Goal(TrainerCallback):
    """Stops the run at the first evaluation that reaches both goals."""

    def __init__(self, started: float, nsp_goal: float, full: bool):
        self.started = started
        self.nsp_goal = nsp_goal
        self.full = full
        self.mlm_goal = None
        self.untimed_s = 0.0
        self.last = None
        self.reached: tuple[int, float] | None = None

    def on_record(self, trainer: Trainer, record: dict) -> None:
        if record["split"] != "eval":
            return
        seconds = time.perf_counter() - self.started - self.untimed_s
        print(
            f"step {record['step']:5d}  {seconds:6.1f} s  held-out nsp_acc {record['eval_nsp_acc']:.3f}  "
            f"mlm_acc {record['eval_mlm_acc']:.3f}",
            flush=True,
        )
        self.last = record
        if (
            record["eval_nsp_acc"] >= self.nsp_goal
            and record["eval_mlm_acc"] >= self.mlm_goal
            and self.reached is None
        ):
            self.reached = (record["step"], seconds)
            if not self.full:
                trainer.request_stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", choices=list(NSP_GOALS), default="tiny")
    parser.add_argument("--full", action="store_true", help="train the whole preset, do not stop at the goal")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--eval-every", type=int, default=None, help="default: 20 (tiny), the preset's (classroom)"
    )
    for name in (
        "lr",
        "warmup",
        "steps",
        "batch_size",
        "seq_len",
        "vocab_size",
        "seed",
        "eval_pairs",
        "num_documents",
    ):
        parser.add_argument(f"--{name.replace('_', '-')}", type=float if name == "lr" else int, default=None)
    add_smoke_flag(
        parser, argv, steps=2, eval_every=2, batch_size=4, eval_pairs=16, num_documents=200, threads=1
    )
    options = parser.parse_args(argv)
    torch.set_num_threads(options.threads)
    untouched = ("threads", "eval_every", "preset", "full", "smoke")
    overrides = {k: v for k, v in vars(options).items() if v is not None and k not in untouched}
    if options.preset == "tiny":  # tuned for speed of learning; the classroom run keeps all its own settings
        eval_every = options.eval_every or 20
        overrides |= {
            "eval_every": eval_every,
            "log_every": eval_every,
            "snapshot_every": 10_000_000,
            "save_every": 0,
        }
    elif options.eval_every:
        overrides["eval_every"] = options.eval_every
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        args = TrainingArguments(preset=options.preset, out=f"{folder}/run", **overrides)
        goal = Goal(started, NSP_GOALS[options.preset], options.full)
        trainer = Trainer(args, callbacks=[goal])
        baseline_started = time.perf_counter()
        token, baseline = most_frequent_token_baseline(trainer)
        goal.untimed_s = time.perf_counter() - baseline_started  # the baseline is not part of learning
        goal.mlm_goal = MLM_FACTOR * baseline
        print(f"cpu={_cpu_name()!r} threads={torch.get_num_threads()} torch={torch.__version__}")
        print(
            f"args: steps={args.steps} lr={args.lr} warmup={args.warmup} batch_size={args.batch_size} "
            f"seq_len={args.seq_len} vocab_size={trainer.tokenizer.vocab_size} eval_every={args.eval_every} "
            f"eval_pairs={len(trainer.eval_pairs)}"
        )
        print(
            f"baseline_mlm_acc={baseline:.4f} (always {token!r}); goal: eval_nsp_acc>={goal.nsp_goal} "
            f"eval_mlm_acc>={goal.mlm_goal:.4f}"
        )
        trainer.train()
        total_s = time.perf_counter() - started - goal.untimed_s
    if options.full:
        last = goal.last
        print(
            f"whole_run_seconds={total_s:.1f} final eval_mlm_acc={last['eval_mlm_acc']:.3f} "
            f"({last['eval_mlm_acc'] / baseline:.1f}x baseline) eval_nsp_acc={last['eval_nsp_acc']:.3f}"
        )
    if goal.reached is None:
        print(f"steps_run={args.steps}\nseconds_to_learn=not_reached")
    else:
        print(f"steps_to_learn={goal.reached[0]}")
        print(f"seconds_to_learn={goal.reached[1]:.1f}")


def _cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


if __name__ == "__main__":
    main()
