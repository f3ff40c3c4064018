"""The shapes the package's own code gives, line by line, when it runs on one sentence pair.

`record_shapes(run)` calls `run()` with a line tracer on the package's functions: after each line, every local name
that now holds a new tensor (or array) is written down with its shape, and so is each return value. Nothing is
guessed from the code's text: a shape is what that line made for this pair. `pair_shapes` runs the pair as the app
does (tokenizer, the traced pass, the fast pass with both heads, BERT's masking) and is cached per pair by the pages.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any

import numpy as np
import torch

from bertviz_lite.inspection.explore import encode
from bertviz_lite.inspection.views.tokens import mask_encoding
from bertviz_lite.model.modeling import BertForPreTraining
from bertviz_lite.text.tokenization import BertTokenizer

# The installed bertviz_lite/, spelled as its modules' code objects spell their files (not resolved: a link stays).
PACKAGE = os.path.dirname(os.path.dirname(__file__)) + os.sep
RETURN = "return"  # the name a return value is recorded under
SKIPPED_NAMES = {"_", "self"}
MASKING_SEED = 0  # the masking recorded is BERT's 15% draw with this seed (the Tokens page's first draw)


@dataclass
class LiveShapes:
    """What each line of the package made in one run: (file, line) -> [(name, shape text)], in order, no repeats."""

    lines: dict[tuple[str, int], list[tuple[str, str]]] = field(default_factory=dict)
    num_tokens: int = 0  # T of the pair the shapes belong to

    def add(self, filename: str, line: int, name: str, shape: str) -> None:
        found = self.lines.setdefault((filename, line), [])
        if (name, shape) not in found:
            found.append((name, shape))

    def at(self, filename: str, line: int) -> list[tuple[str, str]]:
        """The (name, shape) pairs recorded at one line of a file; empty when it made no tensor."""
        return self.lines.get((filename, line), [])


def shape_text(value: Any) -> str | None:
    """A tensor's or array's shape as `(1, 12, 17, 32)`; for a tuple, list, dict or dataclass holding tensors, theirs
    (`q, k: (1, 12, 17, 32)`, `7 × (1, 17, 384)`); None for anything else (numbers, strings, modules)."""
    if isinstance(value, torch.Tensor | np.ndarray):
        return str(tuple(int(size) for size in value.shape))
    if isinstance(value, dict):
        return _named_shapes(value.items())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _named_shapes((f.name, getattr(value, f.name)) for f in dataclasses.fields(value))
    if isinstance(value, tuple | list):
        inner = _items_text(value)
        return f"[{inner}]" if inner is not None and isinstance(value, list) else inner
    return None


def _nested_text(value: Any) -> str | None:
    """An item inside a container: a tensor's shape, a sequence's items in brackets, a dataclass by its class."""
    if isinstance(value, tuple | list):
        inner = _items_text(value)
        return None if inner is None else f"[{inner}]"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return type(value).__name__ if shape_text(value) is not None else None
    return shape_text(value)


def _items_text(items: tuple | list) -> str | None:
    """'7 × (1, 17, 384)' or '(1, 17, 384), LayerAttention'; None unless every item has a shape."""
    texts = [_nested_text(item) for item in items]
    if not texts or any(text is None for text in texts):
        return None
    if len(texts) > 1 and len(set(texts)) == 1:
        return f"{len(texts)} × {texts[0]}"
    return ", ".join(texts)


def _named_shapes(items) -> str | None:
    """'a, b: (1, 17); c: (1, 2)' for the items that have a shape, names with one shape grouped."""
    groups: dict[str, list[str]] = {}
    for name, value in items:
        if (shape := _nested_text(value)) is not None:
            groups.setdefault(shape, []).append(str(name))
    return "; ".join(f"{', '.join(names)}: {shape}" for shape, names in groups.items()) or None


class _Recorder:
    """sys.settrace hooks: trace the package's named functions only (no comprehensions), diff locals line by line."""

    def __init__(self, shapes: LiveShapes, folder: str):
        self.shapes = shapes
        self.folder = folder

    def wanted(self, code: CodeType) -> bool:
        return code.co_filename.startswith(self.folder) and not code.co_name.startswith("<")

    def on_call(self, frame: FrameType, event: str, arg: Any):
        if event != "call" or not self.wanted(frame.f_code):
            return None
        before = dict(frame.f_locals)  # the arguments: given, not made here
        line = frame.f_lineno

        def on_line(frame: FrameType, event: str, arg: Any):
            nonlocal before, line
            now = dict(frame.f_locals)
            self.changed(frame.f_code.co_filename, line, before, now)
            if event == "return" and (shape := shape_text(arg)) is not None:
                self.shapes.add(frame.f_code.co_filename, frame.f_lineno, RETURN, shape)
            before = now
            line = frame.f_lineno
            return on_line

        return on_line

    def changed(self, filename: str, line: int, before: dict, now: dict) -> None:
        """Record the names that the line just run bound to a new value with a shape."""
        for name, value in now.items():
            if name in SKIPPED_NAMES or before.get(name, _UNSET) is value:
                continue
            if (shape := shape_text(value)) is not None:
                self.shapes.add(filename, line, name, shape)


_UNSET = object()


def record_shapes(run: Callable[[], Any], folder: str = PACKAGE) -> LiveShapes:
    """Call run() and record, for every line of a function under `folder` that ran, the shapes it made."""
    shapes = LiveShapes()
    recorder = _Recorder(shapes, folder)
    previous = sys.gettrace()
    sys.settrace(recorder.on_call)
    try:
        run()
    finally:
        sys.settrace(previous)  # a debugger's or coverage's tracer comes back
    return shapes


def pair_shapes(
    model: BertForPreTraining, tokenizer: BertTokenizer, *, text_a: str, text_b: str | None, max_length: int
) -> LiveShapes:
    """The shapes every line of the package makes for one pair: tokenized, traced, the fast pass with both heads (a
    model without trained heads runs them all the same: shapes do not depend on weights), masked as BERT does."""
    encoding = None

    def run_pair() -> None:
        nonlocal encoding
        encoding = encode(tokenizer, text_a, text_b, max_length)
        inputs = encoding.to_tensors()
        with torch.inference_mode():
            # The heads run once, in the fast pass: the decoder over the vocabulary costs as much as the encoder.
            model.trace(**inputs, heads=False)
            model(inputs["input_ids"], inputs["token_type_ids"], attention_mask=inputs["attention_mask"])
        mask_encoding(encoding, tokenizer, mask_prob=0.15, seed=MASKING_SEED)

    shapes = record_shapes(run_pair)
    shapes.num_tokens = len(encoding)
    return shapes
