"""Stage-by-stage comparison of the learner's numbers with the reference, and naming the mistakes that explain them.

The search is greedy: at the first stage that differs, every registered mistake is tried on top of the mistakes
already found, and the one that lets the most stages (in the order they are computed) match is kept; then again,
until every stage matches or nothing known explains the next difference.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from bertviz_lite.check.mistakes import MISTAKES
from bertviz_lite.check.reference import Recipe

TOLERANCE = 1e-4  # max abs difference a stage may show and pass (float32 against a float64 reference: ~1e-6)
MAX_MISTAKES = 10


@dataclass
class Stage:
    name: str
    shape_ours: list[int]
    shape_theirs: list[int]
    max_abs_diff: float | None  # None where the shapes cannot be compared or theirs is not finite
    ok: bool


@dataclass
class Finding:
    code: str
    stage: str
    message: str


def aligned(theirs: Tensor, ours: Tensor) -> tuple[Tensor, Tensor] | None:
    """The two tensors in one shape: broadcast (a (T, H) position table), (T, B, H) turned, nn.MultiheadAttention's
    head-averaged (B, T, T) probabilities against our mean over heads; None where they cannot be."""
    ours = ours.to(torch.float64)
    theirs = theirs.to(torch.float64)
    if theirs.dim() == 3 and ours.dim() == 4 and theirs.shape == (ours.shape[0], *ours.shape[2:]):
        return theirs, ours.mean(1)
    if (
        theirs.dim() == ours.dim() == 3
        and theirs.shape == (ours.shape[1], ours.shape[0], ours.shape[2])
        and theirs.shape != ours.shape
    ):
        return theirs.transpose(0, 1), ours
    try:
        return torch.broadcast_to(theirs, ours.shape), ours
    except RuntimeError:
        return None


def compare(theirs: dict[str, Tensor], ours: dict[str, Tensor], tolerance: float = TOLERANCE) -> list[Stage]:
    """One Stage per reference stage the learner's run captured, in the order the reference computes them."""
    stages = []
    for name, reference in ours.items():
        if name not in theirs:
            continue
        pair = aligned(theirs[name], reference)
        diff = None
        if pair is not None:
            value = (pair[0] - pair[1]).abs().max().item() if pair[1].numel() else 0.0
            diff = value if value == value and value != float("inf") else None
        stages.append(
            Stage(
                name,
                list(reference.shape),
                list(theirs[name].shape),
                diff,
                diff is not None and diff <= tolerance,
            )
        )
    return stages


def first_failure(stages: list[Stage], order: list[str]) -> int:
    """The position, in `order`, of the first stage that fails; len(order) when none does."""
    failed = {s.name for s in stages if not s.ok}
    return next((i for i, name in enumerate(order) if name in failed), len(order))


def explain(
    theirs: dict[str, Tensor],
    reference: Callable[[Recipe], dict[str, Tensor]],
    recipe: Recipe,
    evidence: dict[str, Tensor],
    absent: set[str] = frozenset(),
) -> tuple[Recipe, list[Finding]]:
    """The mistakes their model's structure shows (`absent`: our parameters it has no place for), then those found
    one by one at the first stage that still differs, and the recipe they make."""
    order = list(reference(Recipe()).keys())
    recipe, findings = _structural(theirs, reference, recipe, evidence, absent)
    for _ in range(MAX_MISTAKES):
        now = first_failure(compare(theirs, reference(recipe)), order)
        if now == len(order):
            break
        best = _best_single(theirs, reference, recipe, evidence, order, now) or _best_pair(
            theirs, reference, recipe, evidence, order, now
        )
        if best is None:
            break
        findings += [Finding(m.code, order[now], m.message) for m in best[1]]
        recipe = best[2]
    return recipe, findings


def _structural(theirs, reference, recipe, evidence, absent) -> tuple[Recipe, list[Finding]]:
    findings = []
    for candidate in MISTAKES:
        changed = candidate.apply(recipe, evidence) if candidate.absent in absent else None
        if changed is None:
            continue
        before = reference(recipe)
        after = reference(changed)
        last = list(before)[
            -1
        ]  # a part's output: a part without its LayerNorm shows it by that stage's absence
        shown = [
            k
            for k in before
            if (k in theirs and (k not in after or not _same(before[k], after[k])))
            or (k == last and k not in after and k not in theirs)
        ]
        if shown:
            findings.append(Finding(candidate.code, shown[0], candidate.message))
            recipe = changed
    return recipe, findings


def _same(a: Tensor, b: Tensor) -> bool:
    return a.shape == b.shape and bool((a - b).abs().max() <= TOLERANCE) if a.numel() else True


def _best_single(theirs, reference, recipe, evidence, order, now):
    """(score, [mistake], recipe) of the one mistake that lets the most stages match, if any does better."""
    best = None
    for candidate in MISTAKES:
        changed = candidate.apply(recipe, evidence)
        if changed is None:
            continue
        score = first_failure(compare(theirs, reference(changed)), order)
        if score > now and (best is None or score > best[0]):
            best = (score, [candidate], changed)
    return best


def _best_pair(theirs, reference, recipe, evidence, order, now):
    """The same for two mistakes that show at one stage and only together explain it (pre-LN and no embedding
    LayerNorm both change the first attention's input)."""
    best = None
    for i, first in enumerate(MISTAKES):
        once = first.apply(recipe, evidence)
        for second in MISTAKES[i + 1 :] if once is not None else ():
            twice = second.apply(once, evidence)
            if twice is None or first.code == second.code:
                continue
            score = first_failure(compare(theirs, reference(twice)), order)
            if score > now and (best is None or score > best[0]):
                best = (score, [first, second], twice)
    return best


def unexplained(stages: list[Stage]) -> Finding | None:
    """A finding for the first stage no known mistake explains."""
    stage = next((s for s in stages if not s.ok), None)
    if stage is None:
        return None
    how = (
        f"max abs diff {stage.max_abs_diff:.3g}"
        if stage.max_abs_diff is not None
        else f"shape {tuple(stage.shape_theirs)} against {tuple(stage.shape_ours)}, or numbers that are not finite"
    )
    return Finding(
        "unexplained",
        stage.name,
        f"{stage.name} differs from BERT ({how}) in a way none of the known "
        f"mistakes explains: compare this step of your code with modeling.py.",
    )
