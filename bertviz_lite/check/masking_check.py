"""What the learner's masking function did over many batches, against BERT's 15% / 80-10-10, with confidence
intervals (`--part masking`)."""

from __future__ import annotations

import math
from typing import Any

from torch import Tensor

from bertviz_lite.check.compare import Finding, Stage
from bertviz_lite.check.masking_worker import CLS, MASK, PAD, SEP
from bertviz_lite.check.report import Report
from bertviz_lite.model.loss_rows import IGNORE_INDEX

Z = 3.89  # a 99.99% interval: with six shares tested, a correct function is refused about once in 1,700 seeds


def share(count: int, total: int) -> tuple[float, float, float]:
    """(share, low, high): the measured share and its 99.99% Wilson interval."""
    if total == 0:
        return 0.0, 0.0, 1.0
    p = count / total
    centre = (p + Z * Z / (2 * total)) / (1 + Z * Z / total)
    half = Z * math.sqrt(p * (1 - p) / total + Z * Z / (4 * total * total)) / (1 + Z * Z / total)
    return p, max(0.0, centre - half), min(1.0, centre + half)


def _rate(name: str, count: int, total: int, expected: float) -> tuple[Stage, str]:
    p, low, high = share(count, total)
    ok = low <= expected <= high
    return (
        Stage(name, [], [], abs(p - expected), ok),
        f"{name}: {p:.2%} of {total} (99.99% interval {low:.2%} to {high:.2%}), BERT {expected:.0%}",
    )


def _count(name: str, count: int, total: int, what: str) -> tuple[Stage, str]:
    return Stage(name, [], [], float(count), count == 0), f"{name}: {count} of {total} {what}"


# A check: (its stage, its note), the finding's code, and what the finding says when the stage fails.
Check = tuple[tuple[Stage, str], str, str]
# The finding's code, stage and message when labels hold a token at (almost) every position.
LABELS_EVERYWHERE = (
    "labels-every-position",
    "masking.labels",
    "Your labels hold a token at (almost) every position; BERT's are -100 except where a token was chosen, so the "
    "loss reads only those. (Below, 'chosen' is estimated from the changed tokens.)",
)


def _choice_checks(chosen: Tensor, ordinary: Tensor, special: Tensor, padding: Tensor) -> list[Check]:
    """Which positions were chosen: 15% of the ordinary tokens, never a special token, never padding."""
    return [
        (
            _rate("masking.chosen", int((chosen & ordinary).sum()), int(ordinary.sum()), 0.15),
            "masking-rate",
            "Your function does not choose 15% of the ordinary tokens.",
        ),
        (
            _count(
                "masking.special",
                int((chosen & special).sum()),
                int(special.sum()),
                "[CLS]/[SEP] tokens chosen",
            ),
            "masks-special",
            "Your function chooses [CLS] and [SEP] tokens; BERT never masks a special token.",
        ),
        (
            _count(
                "masking.padding",
                int((chosen & padding).sum()),
                int(padding.sum()),
                "padding positions chosen",
            ),
            "masks-padding",
            "Your function chooses padding positions; BERT chooses among the real tokens only.",
        ),
    ]


def _split_checks(picked: Tensor, masked: Tensor, ids: Tensor) -> list[Check]:
    """What the chosen (picked) tokens became: 80% [MASK], 10% a random token, 10% kept."""
    total = int(picked.sum())
    return [
        (
            _rate("masking.mask", int((picked & (masked == MASK)).sum()), total, 0.8),
            "split-80-10-10",
            "Of the chosen tokens, not 80% become [MASK].",
        ),
        (
            _rate("masking.random", int((picked & (masked != MASK) & (masked != ids)).sum()), total, 0.1),
            "split-80-10-10",
            "Of the chosen tokens, not 10% become a random token.",
        ),
        (
            _rate("masking.kept", int((picked & (masked == ids)).sum()), total, 0.1),
            "split-80-10-10",
            "Of the chosen tokens, not 10% are kept as they were.",
        ),
    ]


def _labels_check(labelled: Tensor, labels: Tensor, ids: Tensor) -> Check:
    """The labels at the chosen positions are the original tokens."""
    wrong = int((labelled & (labels != ids)).sum())
    return (
        _count("masking.labels", wrong, int(labelled.sum()), "labels that are not the original token"),
        "labels-wrong",
        "Your labels are not the original token ids at the chosen positions.",
    )


def masking_report(result: dict[str, Any], tensors: dict[str, Tensor], subject: str) -> Report:
    """Chosen share of ordinary tokens, never a special one or padding, the 80/10/10 split, labels on the chosen only."""
    ids = tensors["input_ids"]
    masked = tensors["masked"]
    labels = tensors["labels"]
    special = (ids == CLS) | (ids == SEP)
    padding = ids == PAD
    ordinary = ~special & ~padding
    labelled = labels != IGNORE_INDEX
    labels_everywhere = bool(labelled.float().mean() > 0.9)
    chosen = (masked != ids) if labels_everywhere else labelled
    findings = [Finding(*LABELS_EVERYWHERE)] if labels_everywhere else []
    checks = _choice_checks(chosen, ordinary, special, padding)
    if labels_everywhere:  # 'chosen' is only estimated: the shares would blame the labels' mistake twice
        checks = checks[1:]
    else:
        checks += [*_split_checks(chosen & ordinary, masked, ids), _labels_check(labelled, labels, ids)]
    stages = [stage for (stage, _), _, _ in checks]
    notes = [note for (_, note), _, _ in checks]
    for (stage, note), code, message in checks:
        if not stage.ok and code not in [f.code for f in findings]:
            findings.append(Finding(code, stage.name, f"{message} ({note})"))
    verdict = "match" if not findings else "differs"
    return Report(verdict, stages, findings, {}, {"theirs": [], "ours": []}, notes, subject, "masking")
