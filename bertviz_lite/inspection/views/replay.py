"""The data of the training replay: what the probe pair's snapshots say over a run's steps.

A run saves, every few steps, the probe pair's attention [L, H, T, T] and (when the model has MLM/NSP
heads) the heads' answers on it (`checkpoints.save_snapshot`). Each snapshot is summarised once
(`summarise_snapshot`: a few numbers per head, its largest weight, its predictions); `replay`
gathers the summaries into series over steps. Figures: `bertviz_lite.figures.replay`.

Pattern shares (`pattern_shares`), per layer and head, on one snapshot's attention A [T, T]:
    the query rows are every position whose token is not [PAD];
    "[CLS]": sum of A[i, j] over keys j whose token is [CLS], averaged over the query rows;
    "[SEP]": the same for keys whose token is [SEP] (both [SEP]s of a pair together);
    "previous": A[i, i - 1], averaged over the query rows i > 0 whose previous token is not [PAD];
    "next": A[i, i + 1], averaged over the query rows i < T - 1 whose next token is not [PAD];
    "self": A[i, i], averaged over the query rows.
So a head that sends every row wholly to its previous token scores exactly 1 on "previous"; a uniform
head over T tokens scores 1/T on "previous", "next" and "self". These are analysis.attention_statistics' numbers
(0 where no row qualifies).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from bertviz_lite.inspection import analysis
from bertviz_lite.inspection.views.attention import ModelView, model_view_tiles
from bertviz_lite.loading.checkpoints import load_snapshot, load_snapshot_predictions

PATTERNS = ("[CLS]", "[SEP]", "previous", "next", "self")
PATTERN_LABELS = {
    "[CLS]": "[CLS]",
    "[SEP]": "[SEP]",
    "previous": "previous token",
    "next": "next token",
    "self": "itself",
}
PAD_TOKEN = "[PAD]"
COLOUR_SCALES = ("0 to 1", "largest weight of the run")


# ---------------------------------------------------------------- one snapshot


# The head_statistics columns of each pattern, in PATTERNS order.
_STATISTIC_OF = {
    "[CLS]": "to_cls",
    "[SEP]": "to_sep",
    "previous": "to_prev",
    "next": "to_next",
    "self": "to_self",
}


def pattern_shares(attentions, tokens: Sequence[str]) -> np.ndarray:
    """[L, H, P] share of each head's attention that goes to each of PATTERNS (see the module docstring).

    Args:
        attentions: [L, H, T, T] attention probabilities (rows are queries).
        tokens: the T token strings.
    Returns:
        float64 [L, H, len(PATTERNS)]: analysis.attention_statistics' to_cls, to_sep, to_prev, to_next, to_self.
    """
    attentions = np.asarray(attentions)
    if (
        attentions.ndim != 4
        or attentions.shape[-1] != attentions.shape[-2]
        or attentions.shape[-1] != len(tokens)
    ):
        raise ValueError(
            f"attentions must be [layers, heads, T, T] with T = {len(tokens)}, got {list(attentions.shape)}"
        )
    real = np.array([token != PAD_TOKEN for token in tokens], dtype=int)
    stats = analysis.attention_statistics(attentions, tokens, attention_mask=real)
    columns = stats[[_STATISTIC_OF[pattern] for pattern in PATTERNS]].to_numpy(dtype=np.float64)
    return columns.reshape(*attentions.shape[:2], len(PATTERNS))


@dataclass(frozen=True)
class SnapshotSummary:
    """What the replay keeps of one snapshot: a few numbers per head, not its [L, H, T, T] maps."""

    step: int
    shares: np.ndarray  # [L, H, P] pattern_shares
    largest_weight: float  # the largest attention weight of any head, query and key
    predictions: dict | None  # evaluation.probe_predictions, or None (an old run, a model without heads)


def summarise_snapshot(
    step: int, attentions, tokens: Sequence[str], predictions: dict | None = None
) -> SnapshotSummary:
    """The SnapshotSummary of one snapshot (checkpoints.load_snapshot and load_snapshot_predictions)."""
    attentions = np.asarray(attentions)
    largest = float(attentions.max()) if attentions.size else 0.0
    return SnapshotSummary(int(step), pattern_shares(attentions, tokens), largest, predictions)


# ---------------------------------------------------------------- over the steps


@dataclass(frozen=True)
class HeadSpecialisation:
    """Pattern shares of every head at every snapshot step."""

    steps: tuple[int, ...]  # [S]
    shares: np.ndarray  # [S, L, H, P]
    patterns: tuple[str, ...] = PATTERNS

    def pattern(self, name: str) -> np.ndarray:
        """[S, L, H] shares of one pattern."""
        if name not in self.patterns:
            raise ValueError(f"pattern ({name!r}) must be one of {', '.join(self.patterns)}")
        return self.shares[..., self.patterns.index(name)]

    def to_frame(self) -> pd.DataFrame:
        """Long table: step, layer, head, pattern, share."""
        steps, layers, heads, patterns = np.meshgrid(
            self.steps, *map(np.arange, self.shares.shape[1:3]), np.arange(len(self.patterns)), indexing="ij"
        )
        return pd.DataFrame(
            {
                "step": steps.ravel(),
                "layer": layers.ravel(),
                "head": heads.ravel(),
                "pattern": np.asarray(self.patterns, dtype=object)[patterns.ravel()],
                "share": self.shares.ravel(),
            }
        )


def head_specialisation(summaries: Sequence[SnapshotSummary]) -> HeadSpecialisation:
    """Stack the summaries' pattern shares over their steps (every snapshot of a run has the same shape)."""
    shapes = {summary.shares.shape for summary in summaries}
    if len(shapes) > 1:
        raise ValueError(f"the snapshots disagree on the number of layers and heads: {sorted(shapes)}")
    if not summaries:
        return HeadSpecialisation((), np.zeros((0, 0, 0, len(PATTERNS))))
    return HeadSpecialisation(tuple(s.step for s in summaries), np.stack([s.shares for s in summaries]))


@dataclass(frozen=True)
class PredictionSeries:
    """The MLM head's guesses for the probe pair's masked word and the NSP probability, at the steps that saved them."""

    steps: tuple[int, ...]  # [S] steps whose snapshot holds predictions
    answer: str  # the masked probe word
    position: int
    top_tokens: tuple[tuple[str, ...], ...]  # [S][k]
    top_probs: np.ndarray  # [S, k]
    answer_prob: np.ndarray  # [S] the probability the MLM head gives the answer
    is_next_prob: np.ndarray  # [S] the NSP head's probability that B follows A
    missing_steps: tuple[int, ...] = ()  # snapshot steps without predictions

    def at(self, step: int) -> int | None:
        """Index of `step` in steps, or None if that snapshot has no predictions."""
        return self.steps.index(step) if step in self.steps else None

    def to_frame(self) -> pd.DataFrame:
        """One row per step: step, answer, answer_prob, is_next_prob, guess_1, prob_1, … guess_k, prob_k."""
        frame = pd.DataFrame(
            {
                "step": list(self.steps),
                "answer": self.answer,
                "answer_prob": self.answer_prob,
                "is_next_prob": self.is_next_prob,
            }
        )
        for rank in range(self.top_probs.shape[1] if self.top_probs.ndim == 2 else 0):
            frame[f"guess_{rank + 1}"] = [tokens[rank] for tokens in self.top_tokens]
            frame[f"prob_{rank + 1}"] = self.top_probs[:, rank]
        return frame


def predictions_over_steps(summaries: Sequence[SnapshotSummary]) -> PredictionSeries:
    """The probe predictions of the summaries that have them, in step order; the others' steps as missing."""
    kept = sorted((s for s in summaries if s.predictions), key=lambda s: s.step)
    missing = tuple(sorted(s.step for s in summaries if not s.predictions))
    if not kept:
        return PredictionSeries((), "", -1, (), np.zeros((0, 0)), np.zeros(0), np.zeros(0), missing)
    first = kept[0].predictions
    return PredictionSeries(
        steps=tuple(s.step for s in kept),
        answer=str(first["answer"]),
        position=int(first["position"]),
        top_tokens=tuple(tuple(s.predictions["top_tokens"]) for s in kept),
        top_probs=np.array([s.predictions["top_probs"] for s in kept], dtype=np.float64),
        answer_prob=np.array([s.predictions["answer_prob"] for s in kept], dtype=np.float64),
        is_next_prob=np.array([s.predictions["is_next_prob"] for s in kept], dtype=np.float64),
        missing_steps=missing,
    )


@dataclass(frozen=True)
class Replay:
    """Everything the replay draws over the steps of a run, from its snapshot summaries."""

    steps: tuple[int, ...]
    specialisation: HeadSpecialisation
    predictions: PredictionSeries
    largest_weight: float  # over every snapshot: the top of the "largest weight of the run" colour scale


def replay(summaries: Sequence[SnapshotSummary]) -> Replay:
    """Gather snapshot summaries (any order) into the series over steps."""
    summaries = sorted(summaries, key=lambda s: s.step)
    largest = max((s.largest_weight for s in summaries), default=1.0)
    return Replay(
        tuple(s.step for s in summaries),
        head_specialisation(summaries),
        predictions_over_steps(summaries),
        largest,
    )


def colour_range(scale: str, largest_weight: float) -> tuple[float, float]:
    """(zmin, zmax) of the replay at every step: (0, 1), or (0, the run's largest weight) for COLOUR_SCALES[1]."""
    if scale not in COLOUR_SCALES:
        raise ValueError(f"colour scale ({scale!r}) must be one of {', '.join(COLOUR_SCALES)}")
    if scale == COLOUR_SCALES[0] or not largest_weight > 0:
        return 0.0, 1.0
    return 0.0, float(min(largest_weight, 1.0))


# ---------------------------------------------------------------- reading snapshot files


def read_summary(path: str | os.PathLike) -> SnapshotSummary | None:
    """The summary of one snapshot file, or None when it cannot be read (being written, or not a snapshot)."""
    try:
        step, attentions, tokens = load_snapshot(path)
    except ValueError:
        return None
    return summarise_snapshot(step, attentions, tokens, load_snapshot_predictions(path))


@dataclass(frozen=True)
class ReplayFrame:
    """One snapshot as the replay draws it: every head's map and the model view of them all."""

    attentions: np.ndarray  # [L, H, T, T] float16
    tokens: list[str]
    overview: ModelView


def replay_frame(path: str | os.PathLike) -> ReplayFrame:
    """The ReplayFrame of one snapshot file; ValueError when it cannot be read."""
    _, attentions, tokens = load_snapshot(path)
    return ReplayFrame(attentions, tokens, model_view_tiles(attentions, tokens))


def next_step(steps: Sequence[int], step: int | None) -> int | None:
    """The first of `steps` after `step` (the very first for None); None after the last one: play ends."""
    return next((s for s in steps if step is None or s > step), None)
