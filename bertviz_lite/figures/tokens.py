"""Token "chips": one coloured HTML span per token, with position and segment beneath."""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np

# What `bertviz_lite.figures` offers at its top (its __init__ lists them by name).
__all__ = ["token_chip_html"]

# Masking decisions made by the MLM data collator for each position.
DECISION_CLASSES = {0: "", 1: "bvl-dec-mask", 2: "bvl-dec-random", 3: "bvl-dec-kept"}

CHIP_CSS = """<style>
.bvl-chips {display:flex; flex-wrap:wrap; gap:4px; font-family:monospace; font-size:13px;}
.bvl-chip {display:inline-flex; flex-direction:column; align-items:center; padding:2px 6px;
  border-radius:6px; border:2px solid transparent; min-width:1.5em;}
.bvl-chip .bvl-meta {font-size:10px; opacity:0.7;}
.bvl-seg-a {background:#dbeafe;} .bvl-seg-b {background:#ffedd5;}
.bvl-cls {background:#bbf7d0; font-weight:bold;} .bvl-sep {background:#e5e7eb; font-weight:bold;}
.bvl-pad {background:#f3f4f6; color:#9ca3af;} .bvl-unk {background:#fecaca;}
.bvl-special {background:#e9d5ff;} .bvl-masktoken {background:#fde68a; font-weight:bold;}
.bvl-piece {font-style:italic; border-left:2px dotted #6b7280;}
.bvl-dec-mask {border-color:#dc2626;} .bvl-dec-random {border-color:#7c3aed; border-style:dashed;}
.bvl-dec-kept {border-color:#059669; border-style:dotted;}
.bvl-legend {display:flex; flex-wrap:wrap; gap:4px; margin-top:6px; font-size:11px;}
</style>"""

LEGEND = [
    ("bvl-cls", "[CLS]"),
    ("bvl-sep", "[SEP]"),
    ("bvl-pad", "[PAD]"),
    ("bvl-unk", "[UNK]"),
    ("bvl-masktoken", "[MASK]"),
    ("bvl-special", "other special"),
    ("bvl-seg-a", "sentence A"),
    ("bvl-seg-b", "sentence B"),
    ("bvl-seg-a bvl-piece", "##piece"),
    ("bvl-dec-mask", "→ [MASK]"),
    ("bvl-dec-random", "→ random token"),
    ("bvl-dec-kept", "kept, still predicted"),
]

_NAMED_CLASSES = {
    "[CLS]": "bvl-cls",
    "[SEP]": "bvl-sep",
    "[PAD]": "bvl-pad",
    "[UNK]": "bvl-unk",
    "[MASK]": "bvl-masktoken",
}
_DECISION_TITLES = {1: "replaced by [MASK]", 2: "replaced by a random token", 3: "kept, still predicted"}


def chip_classes(token: str, segment: int, is_special: bool, decision: int = 0) -> list[str]:
    """CSS classes of one chip: kind of token, sentence, masking decision."""
    if token in _NAMED_CLASSES:
        classes = [_NAMED_CLASSES[token]]
    elif is_special:
        classes = ["bvl-special"]
    else:
        classes = ["bvl-seg-b" if segment else "bvl-seg-a"]
        if token.startswith("##"):
            classes.append("bvl-piece")
    if decision not in DECISION_CLASSES:
        raise ValueError(
            f"masking decision {decision} is not one of 0 (none), 1 ([MASK]), 2 (random), 3 (kept)"
        )
    if DECISION_CLASSES[decision]:
        classes.append(DECISION_CLASSES[decision])
    return ["bvl-chip", *classes]


def _chip(token: str, position: int, segment: int, is_special: bool, decision: int) -> str:
    classes = " ".join(chip_classes(token, segment, is_special, decision))
    sentence = "B" if segment else "A"
    title = f"position {position}, segment {segment} ({sentence})"
    if decision:
        title += f", {_DECISION_TITLES[decision]}"
    return (
        f'<span class="{classes}" title="{html.escape(title)}">{html.escape(token)}'
        f'<span class="bvl-meta">{position} · {segment}</span></span>'
    )


def _legend() -> str:
    items = "".join(f'<span class="bvl-chip {css}">{html.escape(text)}</span>' for css, text in LEGEND)
    return f'<div class="bvl-legend">{items}</div>'


def token_chip_html(
    tokens: Sequence[str],
    token_type_ids: Sequence[int],
    special_tokens_mask: Sequence[int],
    decisions: Sequence[int] | None = None,
    legend: bool = True,
) -> str:
    """HTML for a row of token chips, with position · segment id under each and a legend.

    Args:
        tokens: T token strings (escaped here, so any text is safe).
        token_type_ids: T segment ids (0 = sentence A, 1 = sentence B).
        special_tokens_mask: T flags, 1 for special tokens ([CLS], [SEP], [PAD], [MASK]...).
        decisions: optional T masking decisions: 0 none, 1 [MASK], 2 random token, 3 kept.
        legend: append a legend of the chip styles.
    """
    length = len(tokens)
    segments = np.asarray(token_type_ids).astype(int).reshape(-1)
    special = np.asarray(special_tokens_mask).astype(bool).reshape(-1)
    chosen = np.zeros(length, dtype=int) if decisions is None else np.asarray(decisions).astype(int)
    for name, values in (
        ("token_type_ids", segments),
        ("special_tokens_mask", special),
        ("decisions", chosen),
    ):
        if values.shape[0] != length:
            raise ValueError(f"{name} has {values.shape[0]} entries but there are {length} tokens")
    chips = "".join(
        _chip(str(tokens[i]), i, int(segments[i]), bool(special[i]), int(chosen[i])) for i in range(length)
    )
    return f'{CHIP_CSS}<div class="bvl-chips">{chips}</div>' + (_legend() if legend else "")
