"""The `--smoke` flag every bench script declares: its smallest run through the same code paths.

tests/bench/test_bench_smoke.py runs `python bench/X.py --smoke` for every script in bench/ and checks that it ends well
and prints key=value lines. A smoke run's numbers are not figures of record (bench/RESULTS.md, "Smoke runs").
"""

from __future__ import annotations

import argparse
import sys

HELP = "the smallest run through the same code paths, for the test suite (seconds; its numbers mean nothing)"


def add_smoke_flag(parser: argparse.ArgumentParser, argv: list[str] | None = None, **smaller) -> None:
    """Declare --smoke; with it, each named option defaults to its smaller value (an option given still wins).

    argv: the arguments the parser will read (None: sys.argv[1:]); only those before a bare `--` count.
    """
    parser.add_argument("--smoke", action="store_true", help=HELP)
    unknown = set(smaller) - {action.dest for action in parser._actions}
    if unknown:
        raise ValueError(f"--smoke sets options the parser does not have: {sorted(unknown)}")
    arguments = sys.argv[1:] if argv is None else argv
    if "--" in arguments:  # what follows a bare -- is another program's (bench/train_to_deadline.py)
        arguments = arguments[: arguments.index("--")]
    if "--smoke" in arguments:
        parser.set_defaults(**smaller)
