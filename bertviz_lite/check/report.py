"""A check's report: verdict, stages, findings, the weight mapping; as text for a terminal and as one JSON object."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from bertviz_lite.check.compare import TOLERANCE, Finding, Stage

EXIT_CODES = {"match": 0, "differs": 1, "error": 2}


@dataclass
class Report:
    """What `python -m bertviz_lite.check` says about one file (or one part of it)."""

    verdict: str  # "match" | "differs" | "error"
    stages: list[Stage] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    mapping: dict[str, str] = field(default_factory=dict)
    unmapped: dict[str, list[str]] = field(default_factory=lambda: {"theirs": [], "ours": []})
    notes: list[str] = field(default_factory=list)
    subject: str = ""  # "Bert in my_bert.py"
    part: str = "model"
    # the stages' tensors, {"theirs": {stage: tensor}, "ours": {…}}, for a page's side by side; not in the JSON
    tensors: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False, compare=False)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    @property
    def codes(self) -> list[str]:
        return [f.code for f in self.findings]

    def to_json(self) -> dict[str, Any]:
        """The issue's schema: verdict, stages, findings, mapping, unmapped."""
        return {
            "verdict": self.verdict,
            "stages": [asdict(s) for s in self.stages],
            "findings": [asdict(f) for f in self.findings],
            "mapping": dict(self.mapping),
            "unmapped": {"theirs": list(self.unmapped["theirs"]), "ours": list(self.unmapped["ours"])},
        }

    def to_text(self) -> str:
        lines = [
            f"Checked {self.subject} ({self.part}) against bertviz_lite's BERT, tolerance {TOLERANCE:g}."
        ]
        if self.mapping:
            lines += ["", "Weights (theirs <- ours):"]
            width = max(len(k) for k in self.mapping)
            lines += [f"  {theirs:<{width}}  <- {ours}" for theirs, ours in self.mapping.items()]
        for side in ("theirs", "ours"):
            if self.unmapped[side]:
                lines.append(f"Not placed ({side}): {', '.join(self.unmapped[side])}")
        if self.stages and self.part != "masking":  # a masking check's measurements are its notes
            lines += ["", "Stages:", _stage_table(self.stages)]
        lines += [""] + [f"Note: {note}" for note in self.notes] if self.notes else []
        if self.findings:
            lines += ["", "Findings:"]
            lines += [f"  [{f.code}] at {f.stage}: {f.message}" for f in self.findings]
        design = ", ".join(dict.fromkeys(f.code for f in self.findings))
        suffix = (
            f" (design differences from BERT, not errors: {design})"
            if self.verdict == "match" and design
            else ""
        )
        lines += ["", f"Verdict: {self.verdict}{suffix}"]
        return "\n".join(lines)


def _stage_table(stages: list[Stage]) -> str:
    width = max(len(s.name) for s in stages)
    rows = [f"  {'stage':<{width}}  {'theirs':<14} {'ours':<14} {'max |diff|':>10}"]
    for s in stages:
        diff = "n/a" if s.max_abs_diff is None else f"{s.max_abs_diff:.2e}"
        shape_theirs = "x".join(map(str, s.shape_theirs))
        shape_ours = "x".join(map(str, s.shape_ours))
        rows.append(
            f"  {s.name:<{width}}  {shape_theirs:<14} {shape_ours:<14} {diff:>10}  {'ok' if s.ok else 'DIFFERS'}"
        )
    return "\n".join(rows)


def error_report(message: str, subject: str = "", part: str = "model") -> Report:
    """A file that cannot be loaded or built: one sentence, no traceback."""
    return Report("error", findings=[Finding("cannot-build", "load", message)], subject=subject, part=part)
