"""`--new DIR`: the exercise's outline to start from; `check DIR`: each part done, wrong or not started, in order."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from bertviz_lite.check.report import Report

SKELETON_FILE = "bert.py"
# (part, the skeleton's name for it), in the order the exercise builds them.
OUTLINE = (
    ("embedding", "BertEmbedding"),
    ("attention", "BertAttention"),
    ("mlp", "BertMLP"),
    ("layer", "BertLayer"),
    ("model", "Bert"),
    ("masking", "mask_tokens"),
)

SKELETON = '''"""Build your own BERT. Fill in each TODO, then run:  python -m bertviz_lite.check {folder}

Shapes: B batch, T tokens, H hidden_size, nh num_heads, hd = H // nh, I intermediate_size, V vocab_size.
The checker builds each class with small sizes, loads the same weights into it and ours, and compares.
"""

import torch
from torch import nn


class BertEmbedding(nn.Module):
    def __init__(self, vocab_size, hidden_size, max_len):
        super().__init__()
        # TODO: a word table (V, H), a learned position table (max_len, H), a segment table (2, H), a LayerNorm(H)

    def forward(self, input_ids, token_type_ids):
        # input_ids, token_type_ids: (B, T) -> (B, T, H): LayerNorm(word + position + segment)
        raise NotImplementedError("TODO: BertEmbedding.forward")


class BertAttention(nn.Module):
    def __init__(self, hidden_size, num_heads):
        super().__init__()
        # TODO: query, key, value and output projections, each nn.Linear(H, H)

    def forward(self, x, mask):
        # x: (B, T, H); mask: (B, 1, 1, T), 1 where a key is a real token and 0 on padding.
        # q, k, v: (B, nh, T, hd); scores (B, nh, T, T) scaled by 1/sqrt(hd); masked keys get a very negative score;
        # softmax over the keys; context (B, nh, T, hd) -> (B, T, H); then the output projection.
        raise NotImplementedError("TODO: BertAttention.forward")


class BertMLP(nn.Module):
    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        # TODO: nn.Linear(H, I), GELU (exact, not tanh), nn.Linear(I, H)

    def forward(self, x):
        # x: (B, T, H) -> (B, T, I) -> (B, T, H)
        raise NotImplementedError("TODO: BertMLP.forward")


class BertLayer(nn.Module):
    def __init__(self, hidden_size, num_heads, intermediate_size):
        super().__init__()
        # TODO: a BertAttention, a LayerNorm, a BertMLP, a second LayerNorm

    def forward(self, x, mask):
        # post-LN, as BERT: x = LayerNorm(x + attention(x, mask)); x = LayerNorm(x + mlp(x)). (B, T, H) -> (B, T, H)
        raise NotImplementedError("TODO: BertLayer.forward")


class Bert(nn.Module):
    def __init__(self, vocab_size, hidden_size, num_layers, num_heads, intermediate_size, max_len):
        super().__init__()
        # TODO: BertEmbedding, num_layers BertLayers (nn.ModuleList), and the MLM head: dense(H, H), GELU,
        # LayerNorm, then a decoder to V tied to the word table, with its own bias (V,)

    def forward(self, input_ids, token_type_ids):
        # (B, T), (B, T) -> MLM logits (B, T, V). Padding is id 0: build the (B, 1, 1, T) mask from input_ids.
        raise NotImplementedError("TODO: Bert.forward")


def mask_tokens(input_ids, vocab_size, mask_token_id, special_tokens_mask):
    # input_ids (B, T); special_tokens_mask (B, T) True at [CLS], [SEP] and padding.
    # Choose 15% of the other tokens; of those 80% -> mask_token_id, 10% -> a random id, 10% unchanged.
    # Returns (masked_ids (B, T), labels (B, T)): labels are the original id where chosen, -100 elsewhere.
    raise NotImplementedError("TODO: mask_tokens")
'''


def write_skeleton(folder: Path) -> Path:
    """The outline file in `folder` (created if needed); refuses to overwrite one that is there."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / SKELETON_FILE
    if path.exists():
        raise FileExistsError(f"{path} already exists; choose another folder or remove it first.")
    path.write_text(SKELETON.replace("{folder}", str(folder)), encoding="utf-8")
    return path


def defined_names(folder: Path) -> dict[str, Path]:
    """Each class and function name defined at the top of the folder's .py files, read without running them."""
    names = {}
    for path in sorted(folder.glob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in tree.body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
                names.setdefault(node.name, path)
    return names


@dataclass
class PartStatus:
    part: str
    name: str
    status: str  # "done" | "wrong" | "not started"
    detail: str = ""


def part_status(part: str, name: str, report: Report | None) -> PartStatus:
    """done when it matches; not started while it raises NotImplementedError or is missing; else wrong."""
    if report is None:
        return PartStatus(part, name, "not started", "not in the folder yet")
    if report.verdict == "match":  # its findings, if any, are design differences
        design = ", ".join(dict.fromkeys(report.codes))
        return PartStatus(part, name, "done", f"design differences from BERT: {design}" if design else "")
    first = report.findings[0] if report.findings else None
    if first is not None and "NotImplementedError" in first.message:
        return PartStatus(part, name, "not started")
    detail = f"[{first.code}] at {first.stage}: {first.message}" if first else "differs"
    return PartStatus(part, name, "wrong", detail)


def progress_text(statuses: list[PartStatus]) -> str:
    marks = {"done": "[x]", "wrong": "[!]", "not started": "[ ]"}
    lines = [
        f"{marks[s.status]} {s.name:<14} {s.status}" + (f": {s.detail}" if s.detail else "") for s in statuses
    ]
    return "\n".join(lines)


def check_directory(folder: Path, **limits) -> list[PartStatus]:
    """Each part of the outline, found by its name in the folder's files, checked in one child process."""
    from bertviz_lite.check.checker import CheckRequest, check_files

    names = defined_names(folder)
    present = [(part, name) for part, name in OUTLINE if name in names]
    reports = check_files([CheckRequest(names[name], part, name) for part, name in present], **limits)
    by_name = {name: report for (_, name), report in zip(present, reports, strict=True)}
    return [part_status(part, name, by_name.get(name)) for part, name in OUTLINE]
