"""`python -m bertviz_lite.check FILE [--class NAME] [--part PART] [--json]`, `--new DIR`, or `check DIR`.

Exit codes: 0 the implementation matches BERT, 1 it differs (or their code failed while running), 2 the file cannot
be loaded or built, or the command line is wrong (one sentence on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bertviz_lite.check.checker import PARTS, CheckRequest, check_files
from bertviz_lite.check.sandbox import TIME_LIMIT_S
from bertviz_lite.check.skeleton import check_directory, progress_text, write_skeleton


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit code 2
        self.exit(2, f"bertviz_lite.check: {message}\n")


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="python -m bertviz_lite.check", description="Check your BERT against ours, stage by stage."
    )
    p.add_argument("file", nargs="?", help="your .py file, or a folder made by --new")
    p.add_argument("--class", dest="class_name", help="your class (or masking function) to check")
    p.add_argument("--part", choices=PARTS, default="model", help="check one piece on its own")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--new", metavar="DIR", help="write the exercise's outline into DIR")
    p.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="THEIRS=OURS",
        help="place your parameter THEIRS on our OURS (a+b+c stacks ours), overriding the guess",
    )
    p.add_argument("--time-limit", type=float, default=TIME_LIMIT_S, help="seconds your code may run")
    return p


def _override(pairs: list[str]) -> dict[str, str] | None:
    override = {}
    for pair in pairs:
        theirs, sep, ours = pair.partition("=")
        if not sep or not theirs or not ours:
            raise ValueError(f"--map takes THEIRS=OURS, got {pair!r}")
        override[theirs.strip()] = ours.strip()
    return override or None


def main(argv: list[str] | None = None) -> int:
    try:
        args = parser().parse_args(argv)
    except SystemExit as stop:  # argparse's own exit: 2 after its one line, 0 after --help
        return int(stop.code or 0)
    try:
        if args.new:
            path = write_skeleton(Path(args.new))
            print(f"Wrote {path}. Fill in the TODOs, then run: python -m bertviz_lite.check {args.new}")
            return 0
        if not args.file:
            raise ValueError("give a FILE to check, or --new DIR")
        target = Path(args.file)
        if target.is_dir():
            return _progress(target, args)
        if not target.is_file():
            raise ValueError(f"there is no file {target}")
        request = CheckRequest(target, args.part, args.class_name, _override(args.map))
        report = check_files([request], time_limit=args.time_limit)[0]
    except (ValueError, OSError) as error:
        print(f"bertviz_lite.check: {error}", file=sys.stderr)
        return 2
    if report.verdict == "error" and not args.json:
        print(report.findings[0].message, file=sys.stderr)
    else:
        print(json.dumps(report.to_json(), indent=1) if args.json else report.to_text())
    return report.exit_code


def _progress(folder: Path, args: argparse.Namespace) -> int:
    statuses = check_directory(folder, time_limit=args.time_limit)
    if args.json:
        print(json.dumps([vars(s) for s in statuses], indent=1))
    else:
        print(progress_text(statuses))
    return 0 if all(s.status == "done" for s in statuses) else 1


if __name__ == "__main__":
    sys.exit(main())
