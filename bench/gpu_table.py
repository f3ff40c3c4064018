"""Issue 34's acceptance table on a lent GPU, in one call of about 7 minutes: ours against transformers' best.

    python bench/gpu_table.py                    # on the GPU machine, from the repository root (about 6.5 minutes)
    python bench/gpu_table.py --dry-run          # on a CPU: every case at tiny sizes, compiled by dynamo alone
    python bench/gpu_table.py --cases base:64:128 --budget-s 200                 # some cases only

Each case is `bench/train_throughput.py` in its own process (a fresh compile cache and memory; one case failing
loses only itself): bf16 autocast, ours eager and compiled (the trainer's `--compile` step) against transformers'
eager, sdpa and compiled, 5 interleaved repetitions of 8 steps. Its key=value lines come out prefixed with
`case=SIZE:BATCH:SEQ[:MODE][:bf16-weights]`, then one `summary` line per case (our best, their best, the ratio, the
share of the device's bf16 peak, recompilations while timed, and whether it meets the acceptance: at least 45% of the peak and 2x
theirs for BERT-base, 2x for MiniLM; none for the others). The first case also profiles every side (`profile=`,
`profile_split=`: the GPU time per step by kernel category, `profile_top=`: the longest kernels). The graded cases
compile both sides' steps with CUDA graphs (torch.compile's reduce-overhead: the trainer's `--compile-mode auto` on one
GPU). The cases run in the order below while the budget lasts (--budget-s, the whole table's: a case starts only when
its estimate fits, and stops when the budget ends): the acceptance's three first (BERT-base at 64 x 128 and 16 x 512,
MiniLM at 256 x 128), then BERT-base at 64 x 128 in torch.compile's default mode (no CUDA graphs) for reference, then
large and the small preset, then the first case with our sides stepping a bf16 copy of the weights (the CPU's `--dtype
bf16` step, `case=base:64:128:reduce-overhead:bf16-weights`; it fits only a budget raised for it, or named in --cases).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._smoke import add_smoke_flag  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
KEY_VALUE = re.compile(r"([a-z0-9_]+)=(\S+)")


@dataclass(frozen=True)
class Case:
    """One row of the table: a size at a batch, how long it may take, and what it must reach."""

    size: str
    batch: int
    seq_len: int
    estimate_s: float  # compiling two models dominates: about a minute each on an H100's host
    min_share: float | None = None
    min_ratio: float | None = None
    compile_mode: str = "default"
    profile: bool = False
    # our sides step a bf16 copy of the weights (train_throughput --bf16-weights on)
    bf16_weights: bool = False

    @property
    def name(self) -> str:
        mode = "" if self.compile_mode == "default" else f":{self.compile_mode}"
        return f"{self.size}:{self.batch}:{self.seq_len}{mode}{':bf16-weights' if self.bf16_weights else ''}"


# Estimates: an H200's walls with a margin (bench/RESULTS.md: 118, 100, 71 and 54 s on 2026-11-27; 125, 96, 97, 78
# and 58 s on 2026-11-28 morning; 119 s for the first case without transformers' eager side, 74 s for MiniLM and
# ~150 s for large on 2026-11-28 afternoon). The graded cases are the trainer's compiled step on one GPU: CUDA graphs
# (`--compile-mode auto`), on both sides' compiled steps.
CASES = (
    Case("base", 64, 128, 140, min_share=0.45, min_ratio=2.0, compile_mode="reduce-overhead", profile=True),
    Case("base", 16, 512, 100, min_share=0.45, min_ratio=2.0, compile_mode="reduce-overhead"),
    Case("minilm", 256, 128, 85, min_ratio=2.0, compile_mode="reduce-overhead"),
    # torch.compile's default mode (no CUDA graphs: the step waits on the host's launches), for reference
    Case("base", 64, 128, 100),
    Case("large", 32, 128, 180, compile_mode="reduce-overhead"),
    Case("small", 16, 128, 60, compile_mode="reduce-overhead"),
    # the CPU's bf16 step (a bf16 copy of the weights, no autocast) tried on the GPU, as the first case otherwise
    Case("base", 64, 128, 100, compile_mode="reduce-overhead", bf16_weights=True),
)
BUDGET_S = 420  # the whole table: a lent GPU's 15 minutes less ~5 to start the machine, with a margin
DRY_RUN = [
    "--size",
    "tiny",
    "--batch",
    "2",
    "--seq-len",
    "32",
    "--device",
    "cpu",
    "--compile-backend",
    "eager",
]
DRY_RUN += ["--reps", "1", "--steps-per-rep", "1", "--warmup", "1", "--profile-steps", "1", "--threads", "1"]
THEIRS = ["eager", "sdpa", "compiled"]  # transformers' sides; the ratio is against their best


def command(case: Case, dry_run: bool, theirs: list[str] = THEIRS) -> list[str]:
    """The train_throughput command of one case (on a CPU for a dry run: tiny sizes, dynamo alone)."""
    sides = ["--ours", "eager", "compiled", "--theirs", *theirs]
    real = [
        "--size",
        case.size,
        "--batch",
        str(case.batch),
        "--seq-len",
        str(case.seq_len),
        "--device",
        "cuda",
    ]
    real += ["--reps", "5", "--steps-per-rep", "8", "--warmup", "3"]
    shape = DRY_RUN if dry_run else real
    extra = (["--profile"] if case.profile else []) + (["--bf16-weights", "on"] if case.bf16_weights else [])
    return (
        [sys.executable, "bench/train_throughput.py", *shape, *sides, "--dtype", "bf16"]
        + extra
        + [
            "--compile-mode",
            case.compile_mode,
        ]
    )


@dataclass
class Outcome:
    """What one case printed: per side its key=value pairs, the totals, and an error if it failed."""

    sides: dict[str, dict[str, str]]
    totals: dict[str, str]
    error: str | None
    wall_s: float


def parse(case: Case, out: str) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """Echo the case's key=value lines prefixed with it; a side's line starts `<side>_tokens_per_s=`."""
    sides: dict[str, dict[str, str]] = {}
    totals: dict[str, str] = {}
    for line in out.splitlines():
        pairs = KEY_VALUE.findall(line)
        if not KEY_VALUE.match(line):
            continue
        print(f"case={case.name} {line}", flush=True)
        first = pairs[0][0]
        if first.endswith("_tokens_per_s") and len(pairs) > 1:
            sides[first.removesuffix("_tokens_per_s")] = dict(pairs)
        else:
            totals.update(pairs)
    return sides, totals


def run_case(case: Case, dry_run: bool, timeout_s: float, theirs: list[str] = THEIRS) -> Outcome:
    """Run one case in its own process, within timeout_s."""
    started = time.perf_counter()
    error = None
    try:
        done = subprocess.run(
            command(case, dry_run, theirs),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=max(timeout_s, 1),
        )
        out = done.stdout
        if done.returncode != 0:
            error = " ".join((done.stderr.strip().splitlines() or ["failed"])[-1].split())[:200]
    except subprocess.TimeoutExpired as err:
        out = err.stdout.decode() if isinstance(err.stdout, bytes) else (err.stdout or "")
        error = f"timeout after {timeout_s:.0f} s"
    sides, totals = parse(case, out)
    return Outcome(sides, totals, error, time.perf_counter() - started)


def summary(case: Case, outcome: Outcome, dry_run: bool = False) -> str:
    """One line: our best side, its share of the peak, the ratio, recompilations, and the acceptance (n/a in a dry
    run: tiny sizes on a CPU say nothing about it)."""
    head = f"summary case={case.name} wall_s={outcome.wall_s:.0f}"
    if "speedup_vs_transformers" not in outcome.totals:
        return f"{head} error={outcome.error!r}"
    ours = {
        name: float(v[f"{name}_tokens_per_s"]) for name, v in outcome.sides.items() if name.startswith("ours")
    }
    best = max(ours, key=ours.get)
    share = float(outcome.sides[best]["share_of_peak"])
    ratio = float(outcome.totals["speedup_vs_transformers"])
    recompiles = sum(int(v.get("recompiles_while_timed", 0)) for v in outcome.sides.values())
    graded = not dry_run and (case.min_share is not None or case.min_ratio is not None)
    meets = (case.min_share is None or share >= case.min_share) and (
        case.min_ratio is None or ratio >= case.min_ratio
    )
    return (
        f"{head} ours_best={best} ours_tokens_per_s={outcome.totals['ours_tokens_per_s']} "
        f"transformers_tokens_per_s={outcome.totals['transformers_tokens_per_s']} ratio={ratio:.2f} "
        f"share_of_peak={share:.3f} recompiles_while_timed={recompiles} "
        f"meets_acceptance={meets if graded else 'n/a'}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cases", nargs="+", default=[c.name for c in CASES], choices=[c.name for c in CASES]
    )
    parser.add_argument(
        "--budget-s",
        type=float,
        default=BUDGET_S,
        help=f"the whole table's seconds: a case starts only if its estimate fits (default {BUDGET_S})",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="every case at tiny sizes on the CPU (dynamo alone)"
    )
    parser.add_argument(
        "--theirs",
        nargs="+",
        default=THEIRS,
        choices=THEIRS,
        help="transformers' sides to race (default: all; compiling theirs is the dry run's longest part)",
    )
    add_smoke_flag(parser, argv, cases=[CASES[0].name], theirs=["sdpa"])
    args = parser.parse_args(argv)
    dry_run = args.dry_run or args.smoke
    started = time.perf_counter()
    print(
        f"gpu_table dry_run={dry_run} budget_s={args.budget_s:.0f} cases={','.join(args.cases)}", flush=True
    )
    for case in (c for c in CASES if c.name in args.cases):
        left = args.budget_s - (time.perf_counter() - started)
        if not dry_run and left < case.estimate_s:  # and a case that runs stops when the budget does
            print(f"summary case={case.name} skipped=budget left_s={left:.0f}", flush=True)
            continue
        print(summary(case, run_case(case, dry_run, left, args.theirs), dry_run), flush=True)
    print(f"gpu_table_wall_s={time.perf_counter() - started:.0f}")


if __name__ == "__main__":
    main()
