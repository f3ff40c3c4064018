"""One stage of a check, theirs beside ours and their difference, for one sentence pair (and head): the page's heatmaps."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from bertviz_lite.check.compare import aligned
from bertviz_lite.check.report import Report


@dataclass
class StageSides:
    """Two equal-shaped matrices (rows × columns) of one stage, pair and head; `which` says which ones."""

    stage: str
    which: str  # "pair 1, head 2"
    theirs: np.ndarray
    ours: np.ndarray
    rows: str  # what a row is: "query token", "token", "pair"
    columns: str  # "key token", "hidden unit", "logit"

    @property
    def difference(self) -> np.ndarray:
        return self.theirs - self.ours

    def to_frame(self) -> pd.DataFrame:
        row, col = np.indices(self.theirs.shape)
        return pd.DataFrame(
            {
                self.rows: row.ravel(),
                self.columns: col.ravel(),
                "theirs": self.theirs.ravel(),
                "ours": self.ours.ravel(),
                "difference": self.difference.ravel(),
            }
        )


def _pair(report: Report, stage: str) -> tuple[np.ndarray, np.ndarray]:
    theirs = report.tensors.get("theirs", {}).get(stage)
    ours = report.tensors.get("ours", {}).get(stage)
    if theirs is None or ours is None:
        raise ValueError(f"The check kept no numbers of both sides for {stage}.")
    both = aligned(theirs, ours)
    if both is None:
        raise ValueError(
            f"Your {stage} has shape {tuple(theirs.shape)} and ours {tuple(ours.shape)}: they cannot be "
            "laid side by side."
        )
    return both[0].numpy(), both[1].numpy()


def stage_shape(report: Report, stage: str) -> tuple[int, int]:
    """(sentence pairs, heads) a stage offers to pick from; heads 1 where it has none."""
    theirs, _ = _pair(report, stage)
    return (theirs.shape[0], theirs.shape[1] if theirs.ndim == 4 else 1) if theirs.ndim >= 3 else (1, 1)


def stage_sides(report: Report, stage: str, pair: int = 0, head: int = 0) -> StageSides:
    """The stage's matrices for one pair (attention: one pair and head; pooler and logits: every pair at once)."""
    theirs, ours = _pair(report, stage)
    pairs, heads = stage_shape(report, stage)
    pair = min(max(pair, 0), pairs - 1)
    head = min(max(head, 0), heads - 1)
    if theirs.ndim == 4:  # (B, nh, T, T) attention probabilities
        return StageSides(
            stage,
            f"pair {pair + 1}, head {head + 1}",
            theirs[pair, head],
            ours[pair, head],
            "query token",
            "key token",
        )
    if theirs.ndim == 3:  # (B, T, H) hidden states, or (B, T, T) head-averaged probabilities
        square = stage.endswith("probs")
        return StageSides(
            stage,
            f"pair {pair + 1}" + (", mean of heads" if square else ""),
            theirs[pair],
            ours[pair],
            "query token" if square else "token",
            "key token" if square else "unit",
        )
    return StageSides(stage, "every pair", np.atleast_2d(theirs), np.atleast_2d(ours), "pair", "unit")
