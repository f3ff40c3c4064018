"""A check's stages as a ladder: every stage in order, its max abs difference, the tolerance, the first that fails;
and its weight mapping as a table.

The Your BERT page draws it (figures/check.py) and offers it as CSV; a notebook can do the same with a Report.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from bertviz_lite.check.compare import TOLERANCE
from bertviz_lite.check.report import Report


@dataclass
class StageLadder:
    """The stages in the order the reference computes them; `max_abs_diff` None where they cannot be compared."""

    stages: list[str]
    max_abs_diff: list[float | None]
    ok: list[bool]
    tolerance: float = TOLERANCE

    @property
    def first_failing(self) -> int | None:
        """The index of the first stage that differs, or None when every stage matches."""
        return next((i for i, ok in enumerate(self.ok) if not ok), None)

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "stage": self.stages,
                "max_abs_diff": self.max_abs_diff,
                "tolerance": self.tolerance,
                "ok": self.ok,
            }
        )


def stage_ladder(report: Report) -> StageLadder:
    """The ladder of a report (empty for a file that could not be loaded, built or run)."""
    return StageLadder(
        [s.name for s in report.stages],
        [s.max_abs_diff for s in report.stages],
        [s.ok for s in report.stages],
    )


def mapping_frame(report: Report) -> pd.DataFrame:
    """The weight mapping as a table: each of their parameters and the one of ours it was given."""
    return pd.DataFrame({"theirs": list(report.mapping), "ours": list(report.mapping.values())})
