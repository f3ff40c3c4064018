"""Issue 35: the lesson (the walkthrough's steps in one file), the attention views with their pickers, and the
command line `python -m bertviz_lite.export` (exit code 2 and one line for bad input)."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from bertviz_lite.export import (
    About,
    attention_map,
    head_view,
    lesson_html,
    lesson_trace,
    model_view,
    view_html,
)
from bertviz_lite.export.__main__ import main
from bertviz_lite.inspection import explore
from bertviz_lite.inspection import walkthrough as walk
from bertviz_lite.limits import MAX_EXPORT_TOKENS
from bertviz_lite.text.tokenization import BertTokenizer
from tests.app.tiny_checkpoint import build_tiny
from tests.export.test_export_page import HOSTILE, scripts, unpacked

TEXT_A = "The cat sat on the mat because it was tired."
TEXT_B = "It fell asleep in the warm sun."
REPO = Path(__file__).resolve().parents[2]
HOSTILE_TOKEN = "<b>[Log](https://evil.example)</b>"


@pytest.fixture(scope="module")
def tiny():
    return build_tiny()  # hidden 32, 2 layers, 4 heads


@pytest.fixture(scope="module")
def lesson(tiny):
    model, tokenizer = tiny
    return lesson_html(lesson_trace(model, tokenizer, TEXT_A, TEXT_B), About("tiny", TEXT_A, TEXT_B))


def test_a_lesson_holds_every_step_in_order_with_its_text_and_its_code(lesson):
    count = len(walk.STEPS)
    for number, step in enumerate(walk.STEPS, start=1):
        assert f"<h2>Step {number} of {count}: {html.escape(step.title)}</h2>" in lesson
    assert (
        lesson.count('class="bvl-step"') == count and lesson.count(" hidden>") >= count - 1
    )  # the first shows
    assert lesson.count('<details class="bvl-code"><summary>The code</summary>') == count
    assert "bertviz_lite/model/modeling.py, line " in lesson and "  # (1, 4, " in lesson  # source and shapes
    assert 'id="bvl-next"' in lesson and 'id="bvl-previous"' in lesson


def test_a_lessons_pickers_carry_every_layer_and_head(lesson):
    data = json.loads(unpacked(lesson))
    by_name = {area["name"]: area for area in data["areas"]}
    assert set(by_name["walk_one_head"]["figures"]) == {
        f"{layer}|{head}" for layer in range(2) for head in range(4)
    }
    assert set(by_name["walk_head_view"]["figures"]) == {"0", "1"}
    assert by_name["walk_head_view"]["head_filter"] == "head"
    assert by_name["walk_model_view"]["click"] == ["layer", "head"]
    questions = [ask["questions"] for ask in data["asks"]]
    assert [len(found) for found in questions] == [8, 1, 1]  # one head per layer × head, the MLM, the NSP
    assert 'class="st-key-head_view"' in lesson and "__bvlHighlight" in lesson  # the head view's hover script


def test_a_lesson_refuses_a_long_pair_in_a_sentence():
    model, tokenizer = build_tiny(max_positions=256)
    long_text = " ".join(["the cat sat on the mat"] * 40)
    with pytest.raises(ValueError, match=r"at most 128 tokens; this pair has 256\. Shorten the sentences"):
        lesson_trace(model, tokenizer, long_text, long_text, max_length=256)
    trace = explore.trace_pair(model, tokenizer, long_text, long_text, max_length=MAX_EXPORT_TOKENS + 1)
    with pytest.raises(ValueError, match="A lesson carries every layer and head"):
        lesson_html(trace, About("tiny", long_text, long_text))
    with pytest.raises(ValueError, match="A head view with its pickers carries every layer and head"):
        head_view(trace)


def test_a_lesson_needs_the_walkthroughs_masked_trace(tiny):
    model, tokenizer = tiny
    trace = explore.trace_pair(model, tokenizer, TEXT_A, TEXT_B)  # nothing masked
    with pytest.raises(ValueError, match=r"a lesson needs the trace with \[MASK\] at"):
        lesson_html(trace, About("tiny", TEXT_A, TEXT_B))


def test_a_hostile_vocab_token_and_sentences_stay_text_in_a_lesson(tiny):
    model, tokenizer = tiny
    index = max(tokenizer.vocab.values())
    evil = BertTokenizer(
        {(HOSTILE_TOKEN if i == index else token): i for token, i in tokenizer.vocab.items()}
    )
    with torch.no_grad():
        model.cls.predictions.bias.zero_()
        model.cls.predictions.bias[index] = 100.0  # the MLM head's first guess is the hostile token
    text = HOSTILE[1] + " the cat sat"
    page = lesson_html(lesson_trace(model, evil, text, HOSTILE[3]), About(HOSTILE[2], text, HOSTILE[3]))
    assert html.escape(text) in page and html.escape(HOSTILE[3]) in page and html.escape(HOSTILE[2]) in page
    assert len(scripts(page)) == 5  # settings, plotly.js, data, the head view's hover script and the page's
    mlm = json.loads(unpacked(page))["asks"][1]["questions"][""]
    assert HOSTILE_TOKEN in mlm["options"]  # in the data as typed: the page's script sets it as a text node
    assert HOSTILE_TOKEN not in page


def test_the_attention_views_carry_every_layer_and_head(tiny):
    model, tokenizer = tiny
    trace = explore.trace_pair(model, tokenizer, TEXT_A, TEXT_B)
    about = About("tiny", TEXT_A, TEXT_B)
    heads = json.loads(unpacked(view_html(head_view(trace, layer=1), about)))
    assert heads["views"] == [{"pickers": {"layer": "1", "head": "all"}}]
    assert set(heads["areas"][0]["figures"]) == {"0", "1"}
    maps = json.loads(unpacked(view_html(attention_map(trace), about)))
    assert len(maps["figures"]) == 8
    grid = json.loads(unpacked(view_html(model_view(trace), about)))
    assert [area["name"] for area in grid["areas"]] == ["model_view", "attention_heatmap"]
    assert len(grid["figures"]) == 1 + 8


def test_the_command_line_writes_a_lesson(tmp_path, capsys):
    out = tmp_path / "lesson.html"
    assert main(["--a", TEXT_A, "--b", TEXT_B, "--model", "demo-tiny", "--out", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>") and page.count('class="bvl-step"') == len(walk.STEPS)
    said = capsys.readouterr().out.strip()
    assert re.fullmatch(
        rf"Wrote {re.escape(str(out))} \(\d\.\d MB\): lesson, \d+ tokens, model demo-tiny\.", said
    )


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["--b", "x", "--out", "o.html"], "error: the following arguments are required: --a"),
        (["--a", "x", "--out", "o.html", "--view", "poster"], "error: argument --view: invalid choice"),
        (["--a", "x", "--out", "o.html", "--model", "no-such-model"], "error: "),
        (["--a", "x", "--out", "o.html", "--max-length", "1"], "error: --max-length must be at least 2"),
        (
            ["--a", "x " * 300, "--out", "o.html", "--max-length", "512", "--model", "minilm-english"],
            "error: A lesson carries every layer and head",
        ),
        (["--a", "x", "--out", "no/such/folder/o.html", "--model", "demo-tiny"], "error: "),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(tmp_path, monkeypatch, capsys, arguments, said):
    monkeypatch.chdir(tmp_path)
    try:
        code = main(arguments)
    except SystemExit as stop:  # argparse's refusals
        code = stop.code
    assert code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(said), lines
    assert not (tmp_path / "o.html").exists()


def test_the_command_runs_as_a_module_and_refuses_in_one_line(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bertviz_lite.export",
            "--a",
            "x",
            "--out",
            "o.html",
            "--model",
            "no-such-model",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stderr.startswith("error: ") and not (tmp_path / "o.html").exists()
