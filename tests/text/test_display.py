"""Issue 22: nothing a visitor typed, linked or uploaded is interpreted (Markdown, plotly's HTML, CSV formulas)."""

from __future__ import annotations

import io
import re

import numpy as np
import pandas as pd

from bertviz_lite.figures.predictions import _topk_bar
from bertviz_lite.inspection import walkthrough
from bertviz_lite.inspection.explore import csv_bytes
from bertviz_lite.model.config import BertConfig
from bertviz_lite.server import share
from bertviz_lite.text.display import plain_cell, plain_markdown

LINK = "[Log in again](https://evil.example/login) ![x](http://127.0.0.1:8799/x.png)"
UNESCAPED = re.compile(
    r"(?<!\\)([\[\]<>]|:(?=\S))"
)  # a Markdown link, image, HTML tag or :directive: would need one


def test_plain_markdown_escapes_links_images_and_directives():
    for text in [LINK, "[x](//evil.example)", ":red[big] :material/home:", "<img src=x onerror=alert(1)>"]:
        shown = plain_markdown(text)
        assert not UNESCAPED.search(shown), shown
        assert re.sub(r"\\(.)", r"\1", shown) == text  # once rendered, exactly the characters typed


def test_a_link_note_quotes_the_typed_value_as_text():
    notes = share.parse_query({"layer": "[x](//evil.example)"}, ["m"], "m").notes
    assert notes and all(not UNESCAPED.search(plain_markdown(note)) for note in notes)


def test_a_vocab_token_in_the_walkthrough_text_is_text():
    config = BertConfig(
        vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64
    )
    facts = walkthrough.step_facts(config, 100, 10, masked_word=LINK)
    text = walkthrough.step_text(walkthrough.STEPS[walkthrough.step_number("tokens") - 1], facts)
    assert not re.search(r"(?<!\\)\]\(", text)
    assert plain_markdown(LINK) in text


def test_a_vocab_token_in_the_predictions_chart_is_no_link():
    token = '<a href="https://evil.example">click</a>'
    fig = _topk_bar([token, "ok"], [0.6, 0.4], title=f"Position 3: [MASK], originally {token!r}")
    assert all("<a" not in label for label in fig.data[0].y) and "&lt;a href" in fig.data[0].y[0]
    assert "<a" not in fig.layout.title.text


def test_csv_cells_that_start_a_formula_are_neutralised():
    frame = pd.DataFrame(
        {
            "token": ['=HYPERLINK("http://evil.example","x")', "+1", "-", "@SUM(A1)", "cat"],
            "probability": np.array([0.1, 0.2, 0.3, 0.2, 0.2]),
        }
    )
    back = pd.read_csv(io.BytesIO(csv_bytes(frame)), keep_default_na=False)
    assert [cell[:1] for cell in back["token"][:4]] == ["'"] * 4 and back["token"][4] == "cat"
    assert back["probability"].tolist() == [0.1, 0.2, 0.3, 0.2, 0.2]
    assert plain_cell(-1.0) == -1.0


def test_a_vocab_token_in_the_attention_figures_is_no_link():
    from bertviz_lite.figures.attention import _attention_heatmap

    token = '<a href="https://evil.example">x</a>'
    fig = _attention_heatmap(np.full((2, 2), 0.5), ["[CLS]", token])
    assert all("<a" not in str(label) for label in [*fig.data[0].x, *fig.data[0].y])
