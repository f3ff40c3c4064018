"""Seconds for a whole `python -m bertviz_lite.check` of a 2-layer learner's model on 4 sentence pairs, on one core.

The check runs the learner's code in a child process (a fork of the checker's zygote, which the process's first check
starts: it imports torch once), builds and fills the learner's model, runs it twice with hooks and searches the
mistakes; as a reference, one forward pass of our own model on the same batch is timed in the same run, and a bare
`python -c "import torch"` (what a fresh child pays first). Prints key=value lines: first_check_s (the zygote's
start included), check_s (the median of the checks after it, as every later check in a server); the goal is a check
under 5 s.

    python bench/check_speed.py [--repeats 3] [--file tests/check/learners/hf_style.py]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._smoke import add_smoke_flag  # noqa: E402
from bertviz_lite import Bert  # noqa: E402
from bertviz_lite.check import check_file  # noqa: E402
from bertviz_lite.check.reference import check_config, seeded_weights, sentence_pairs  # noqa: E402

GOAL_S = 5.0


def seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def forward_ms(repeats: int) -> float:
    """Median of one forward pass of our model (the check's config) on the check's batch."""
    config = check_config()
    model = Bert(config, init_weights=False)
    model.load_state_dict(seeded_weights(config), strict=False)
    model.eval()
    ids, segments = sentence_pairs(config)
    with torch.no_grad():
        model(ids, segments)
        return statistics.median(seconds(lambda: model(ids, segments)) for _ in range(max(repeats, 20))) * 1e3


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--file", type=Path, default=ROOT / "tests" / "check" / "learners" / "hf_style.py")
    add_smoke_flag(parser, argv, repeats=1)
    options = parser.parse_args(argv)
    torch.set_num_threads(1)
    verdicts = []
    first_s = seconds(lambda: verdicts.append(check_file(options.file).verdict))
    check_s = statistics.median(
        seconds(lambda: verdicts.append(check_file(options.file).verdict)) for _ in range(options.repeats)
    )
    import_s = statistics.median(
        seconds(lambda: subprocess.run([sys.executable, "-c", "import torch"], check=True))
        for _ in range(options.repeats)
    )
    reference_ms = forward_ms(options.repeats)
    print(f"file={options.file.name} verdict={verdicts[-1]} threads=1 repeats={options.repeats}")
    print(f"first_check_s={first_s:.2f}")
    print(f"check_s={check_s:.2f}")
    print(f"torch_import_s={import_s:.2f}")
    print(f"forward_ms={reference_ms:.3f}")
    print(f"ratio_check_to_forward={check_s * 1e3 / reference_ms:.0f}")
    print(f"ratio_check_to_torch_import={check_s / import_s:.2f}")
    print(f"goal_check_under_{GOAL_S:g}_s={'met' if check_s < GOAL_S else 'NOT met'}")


if __name__ == "__main__":
    main()
