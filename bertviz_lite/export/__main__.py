"""`python -m bertviz_lite.export --a "…" --b "…" --model NAME --out lesson.html`: the walkthrough of a pair (or one
attention view, `--view`) as one self-contained HTML file. Exit codes: 0 written; 2 bad input, said in one line.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from bertviz_lite.atomic import atomic_write_bytes
from bertviz_lite.export.lesson import lesson_html, lesson_trace
from bertviz_lite.export.page import About
from bertviz_lite.export.views import attention_map, head_view, model_view, view_html
from bertviz_lite.inspection.explore import PairTrace, effective_max_length, input_warnings
from bertviz_lite.limits import MAX_EXPORT_TOKENS, megabytes
from bertviz_lite.loading.pretrained import DEFAULT_MODEL, load

BAD_INPUT = 2
# What --view writes: the lesson, or one attention view with its layer and head pickers.
WRITERS: dict[str, Callable[[PairTrace, About], str]] = {
    "lesson": lesson_html,
    "head_view": lambda trace, about: view_html(head_view(trace), about),
    "model_view": lambda trace, about: view_html(model_view(trace), about),
    "attention": lambda trace, about: view_html(attention_map(trace), about),
}


class _OneLineParser(argparse.ArgumentParser):
    """argparse whose refusals are one line on stderr (no usage block) and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(BAD_INPUT, f"error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(
        prog="python -m bertviz_lite.export",
        description="Write the walkthrough of a sentence pair (or one attention view) as one HTML file that "
        "opens with no server and no network.",
    )
    parser.add_argument("--a", required=True, help="sentence A")
    parser.add_argument("--b", default="", help="sentence B (optional)")
    parser.add_argument(
        "--model", default=DEFAULT_MODEL, help=f"a model name or folder (default {DEFAULT_MODEL})"
    )
    parser.add_argument("--out", required=True, type=Path, help="the HTML file to write")
    parser.add_argument(
        "--view", choices=sorted(WRITERS), default="lesson", help="what to write (default lesson)"
    )
    parser.add_argument(
        "--max-length",
        type=int,
        default=MAX_EXPORT_TOKENS,
        help=f"tokens at most (default {MAX_EXPORT_TOKENS})",
    )
    return parser


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.max_length < 2:
            raise ValueError(f"--max-length must be at least 2 (got {args.max_length})")
        model, tokenizer = load(args.model)
        trace = lesson_trace(model, tokenizer, args.a, args.b, args.max_length)
        about = About(
            args.model, args.a, args.b, made_by=f"Made by python -m bertviz_lite.export ({args.view})"
        )
        text = WRITERS[args.view](trace, about).encode("utf-8")
        atomic_write_bytes(args.out, text)
    except (ValueError, OSError) as error:
        print(f"error: {_one_line(error)}", file=sys.stderr)
        return BAD_INPUT
    for note in input_warnings(trace.encoding, effective_max_length(model, args.max_length)):
        print(note)
    print(
        f"Wrote {args.out} ({megabytes(len(text))}): {args.view}, {trace.num_tokens} tokens, model {args.model}."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
