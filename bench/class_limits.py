"""A live class under stuffing and guessing (issue 30), through the package's own calls on a fresh SQLite file.

    python bench/class_limits.py [--fresh-ids 200]

Prints, as key=value lines:
  one_address_joined=, one_address_refused=   fresh visitor ids joining from one client address
  one_address_answers=, chart_counts=         their answers accepted, and counted on the class's chart
  other_address_joins=                        a real student from another address (1: joined)
  guessers_locked_after=                      wrong codes one address typed before its own lockout (30 ids x 10)
  qr_link_joins_during_guessing=              a student with the QR link from the guessers' own address (1: joined)
  seconds=                                    wall time of the whole run
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._smoke import add_smoke_flag  # noqa: E402
from bertviz_lite.server import class_joining, class_results, live_class  # noqa: E402
from bertviz_lite.server.live_class import CHOICE, ClassError, NewQuestion, Position  # noqa: E402

PAIR = Position("minilm-english", "The cat sat on the [MASK].", "It was warm.")


def _tries(call) -> bool:
    try:
        call()
    except ClassError:
        return False
    return True


def run(fresh_ids: int, path: Path) -> dict[str, int]:
    code, secret = live_class.start_class(PAIR, store=path)
    question = live_class.ask(
        code, secret, NewQuestion(CHOICE, "Does B follow A?", ("Yes", "No"), "Yes"), store=path
    )
    joined = [s for i in range(fresh_ids) if (s := _join(code, f"fresh-{i}", "203.0.113.7", path))]
    answers = sum(
        _tries(lambda s=s: class_joining.answer(code, s, question, "No", address="203.0.113.7", store=path))
        for s in joined
    )
    wrong = (
        "A" * live_class.CODE_LENGTH if code != "A" * live_class.CODE_LENGTH else "C" * live_class.CODE_LENGTH
    )
    counted = 0
    for guess in range(300):  # 30 fresh ids x 10 wrong codes from one address
        refusal = _refusal(
            lambda g=guess: class_joining.join(wrong, f"guesser-{g // 10}", "203.0.113.66", store=path)
        )
        counted += "no class with this code" in refusal
    token = live_class.join_token(code, secret)
    return {
        "one_address_joined": len(joined),
        "one_address_refused": fresh_ids - len(joined),
        "one_address_answers": answers,
        "chart_counts": class_results.answer_count(question, store=path),
        "other_address_joins": int(bool(_join(code, "student", "198.51.100.2", path))),
        "guessers_locked_after": counted,
        "qr_link_joins_during_guessing": int(
            _tries(lambda: class_joining.join(code, "neighbour", "203.0.113.66", token=token, store=path))
        ),
    }


def _join(code: str, browser: str, address: str, path: Path) -> str:
    try:
        return class_joining.join(code, browser, address, store=path)
    except ClassError:
        return ""


def _refusal(call) -> str:
    try:
        call()
    except ClassError as err:
        return str(err)
    return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fresh-ids", type=int, default=200)
    add_smoke_flag(parser, argv, fresh_ids=50)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        result = run(args.fresh_ids, Path(folder) / "class.sqlite3")
    for key, value in result.items():
        print(f"{key}={value}")
    print(f"seconds={time.perf_counter() - started:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
