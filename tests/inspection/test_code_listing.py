"""The code panel beside every view: declared on each tab and step, read live from the package, with the pair's shapes."""

from __future__ import annotations

import inspect
import sys

import pytest

from bertviz_lite.figures.tabs import ALL_TABS, PAGE_ABOUT, ViewTab
from bertviz_lite.inspection.code_listing import NOTE, code_listing, note_text, shape_legend, statement_ends
from bertviz_lite.inspection.live_shapes import LiveShapes, pair_shapes, record_shapes, shape_text
from bertviz_lite.inspection.walkthrough import STEPS, Step
from bertviz_lite.model.embeddings import BertEmbeddings
from bertviz_lite.model.modeling import BertSelfAttention
from bertviz_lite.text.masking import mask_tokens
from tests.app.tiny_checkpoint import build_tiny

# hidden 32, 4 heads of 8, feed-forward 64; this pair is 19 tokens for the tiny vocabulary:
# [CLS] the cat sat on the mat . [SEP] the do ##g ran to the par ##k . [SEP]
PAIR = ("The cat sat on the mat.", "The dog ran to the park.")
T = 19


def every_view() -> dict[str, ViewTab | Step]:
    """Every explore view and walkthrough step, by a name for the test's messages."""
    views = {f"tab {tab.title}": tab for tab in ALL_TABS}
    views |= {f"page {name}": tab for name, tab in PAGE_ABOUT.items()}
    return views | {f"step {step.key}": step for step in STEPS}


def undeclared(views: dict[str, ViewTab | Step]) -> list[str]:
    """The views that declare no code, or declare something that is not a function of the package."""
    return [
        name
        for name, view in views.items()
        if not view.code
        or not all(inspect.isfunction(f) and f.__module__.startswith("bertviz_lite.") for f in view.code)
    ]


@pytest.fixture(scope="module")
def shapes() -> LiveShapes:
    model, tokenizer = build_tiny()
    return pair_shapes(model, tokenizer, text_a=PAIR[0], text_b=PAIR[1], max_length=64)


def test_every_view_and_step_declares_the_functions_behind_it():
    assert undeclared(every_view()) == []


def test_a_new_view_without_code_fails_the_declaration_check():
    planted = {
        "tab New": ViewTab("New"),
        "step new": Step("new", "New", "text"),
        "tab Named": ViewTab("N", code=("x",)),
    }
    assert undeclared({**every_view(), **planted}) == ["tab New", "step new", "tab Named"]


def test_each_panel_is_the_live_source_of_its_declared_functions(shapes):
    for name, view in every_view().items():
        blocks = code_listing(view.code, shapes)
        assert [block.source for block in blocks] == [inspect.getsource(f) for f in view.code], name
        for block, function in zip(blocks, view.code, strict=True):
            assert block.lines == tuple(inspect.getsourcelines(function)[0])
            assert block.name == function.__qualname__
            assert block.path.startswith("bertviz_lite/") and block.path.endswith(".py")
            # Take the shape notes off the shown text and the source is left, line for line.
            shown = block.text.splitlines()
            stripped = [
                line.removesuffix(NOTE + note) if note else line
                for line, note in zip(shown, block.notes, strict=True)
            ]
            assert stripped == block.source.splitlines(), name


def test_every_view_and_step_shows_live_shapes_for_the_pair(shapes):
    assert shapes.num_tokens == T
    missing = [
        name
        for name, view in every_view().items()
        if not any(b.has_shapes for b in code_listing(view.code, shapes))
    ]
    assert missing == []


def notes_by_line(function, shapes: LiveShapes) -> dict[str, str]:
    """{stripped source line: its shape note} for the lines of one function that made shapes."""
    (block,) = code_listing((function,), shapes)
    return {line.strip(): note for line, note in zip(block.lines, block.notes, strict=True) if note}


def test_the_attention_lines_carry_the_shapes_of_the_pair(shapes):
    notes = notes_by_line(BertSelfAttention.forward_with_attention, shapes)
    by_start = {line.split(" =")[0]: note for line, note in notes.items()}
    assert by_start == {
        "q, k, v": "q, k, v: (1, 4, 19, 8)",  # B = 1, 4 heads, 19 tokens, head size 8
        "scores": "(1, 4, 19, 19)",
        "probs": "(1, 4, 19, 19)",
        "context": "(1, 19, 32)",
        "return context, LayerAttention(q, k, v, probs)": "(1, 19, 32), LayerAttention",
    }
    split = notes_by_line(BertSelfAttention.split_heads, shapes)
    assert list(split.values()) == ["(1, 4, 19, 8)"]


def test_the_embeddings_and_masking_carry_the_shapes_of_the_pair(shapes):
    embeddings = notes_by_line(BertEmbeddings.parts, shapes)
    assert set(embeddings.values()) == {
        "(1, 19, 32)",
        "token, position, segment, sum, layer_norm: (1, 19, 32)",
    }
    assert len(embeddings) == 5  # token, position, segment, the sum, and the parts returned
    masking = notes_by_line(mask_tokens, shapes)
    assert masking["eligible = ~special_tokens_mask.bool()"] == "(19,)"  # one sentence pair, not a batch
    assert masking["return MaskingResult(input_ids=masked, labels=labels, decisions=decisions)"] == (
        "input_ids, labels, decisions: (19,)"
    )


def test_the_legend_names_the_numbers_in_the_shapes():
    model, _ = build_tiny()
    legend = shape_legend(model.config, T)
    for part in ("B = 1", "T = 19", "H = 32", "nh = 4", "hd = 8", "feed-forward 64"):
        assert part in legend


def test_a_multi_line_statement_takes_its_note_on_its_last_line():
    source = "def f(x):\n    y = g(\n        x,\n    )\n    for a, b in y:\n        pass\n    return y\n"
    ends, several = statement_ends(source)
    assert ends == [0, 3, 3, 3, 4, 5, 6]
    assert several == {4}  # the for header binds a and b


def test_a_method_is_parsed_as_it_is_indented_in_its_class():
    ends, several = statement_ends(inspect.getsource(BertSelfAttention.split_heads))
    assert len(ends) == 4 and ends[2:] == [2, 3]
    assert several == {2}  # batch, seq, _ = x.shape


def test_notes_name_what_they_hold_only_where_a_statement_binds_several_names():
    assert note_text([("x", "(1, 2)")]) == "(1, 2)"
    assert note_text([("x", "(1, 2)")], named=True) == "x: (1, 2)"
    assert note_text([("q", "(1, 2)"), ("k", "(1, 2)"), ("p", "(3,)")]) == "q, k: (1, 2); p: (3,)"
    assert note_text([("h", "(1, 2)"), ("h", "(1, 3)")]) == "(1, 2) | (1, 3)"  # a loop that changed shape
    assert note_text([]) == ""


def test_shapes_of_containers_and_of_what_has_none():
    import numpy as np
    import torch

    assert shape_text(torch.zeros(1, 4, 19, 8)) == "(1, 4, 19, 8)"
    assert shape_text(np.zeros(3)) == "(3,)"
    assert shape_text((torch.zeros(2), torch.zeros(2))) == "2 × (2,)"
    assert shape_text([torch.zeros(2)]) == "[(2,)]"
    assert shape_text({"a": torch.zeros(1), "b": torch.zeros(1)}) == "a, b: (1,)"
    assert shape_text(("name", torch.zeros(2))) is None  # a string has no shape: the tuple is not described
    assert shape_text(3) is None and shape_text("text") is None


def test_recording_gives_back_a_tracer_that_was_there():
    def tracer(frame, event, arg):
        return None

    sys.settrace(tracer)
    try:
        recorded = record_shapes(lambda: mask_tokens.__name__)
    finally:
        after = sys.gettrace()
        sys.settrace(None)
    assert after is tracer
    assert recorded.lines == {}
