"""Issue 35: an exported file's page and data: escaping, the packed data, the pickers' figures and the size limit."""

from __future__ import annotations

import base64
import gzip
import html
import json
import re

import numpy as np
import plotly.graph_objects as go
import pytest

from bertviz_lite.export import About, Ask, Figures, Note, View, markdown_html, script_json, view_html
from bertviz_lite.export.blocks import Picker, key_of, number_picker, single
from bertviz_lite.export.payload import Payload, compact_figure
from bertviz_lite.export.toolbar import SVG_TITLE, plotly_config, svg_button_script
from bertviz_lite.inspection.walkthrough import nsp_question
from bertviz_lite.limits import MAX_EXPORT_TOKENS, export_token_problem

# The hostile strings of the app's own tests (tests/text/test_display.py, tests/app/test_plain_text.py), and a
# script end and the two line separators that end a line of JavaScript.
LINK = "[Log in again](https://evil.example/login) ![x](http://127.0.0.1:8799/x.png)"
HOSTILE = [
    LINK,
    "<img src=x onerror=alert(1)>",
    '<a href="https://evil.example">click</a>',
    "</script><script>alert(1)</script>",
    "line\u2028separator\u2029paragraph & <b>bold</b>",
]


def unpacked(page: str, element: str = "bvl-data") -> str:
    """The text a page's script unpacks from the <script id=element> (gzip, base64)."""
    found = re.search(rf'<script type="application/octet-stream" id="{element}">([^<]*)</script>', page)
    assert found, f"no {element} in the page"
    return gzip.decompress(base64.b64decode(found.group(1))).decode("utf-8")


def scripts(page: str) -> list[str]:
    """The opening tags of every <script> in the page."""
    return re.findall(r"<script\b[^>]*>", page, flags=re.IGNORECASE)


def test_script_json_cannot_close_its_script_or_break_a_line():
    for text in HOSTILE:
        written = script_json({"text": text})
        assert not re.search(r"[<>&\u2028\u2029]", written), written
        assert json.loads(written) == {"text": text}


def test_markdown_html_keeps_the_step_marks_and_escapes_the_rest():
    assert markdown_html("a **bold** *word* and `##` here") == (
        "a <strong>bold</strong> <em>word</em> and <code>##</code> here"
    )
    assert markdown_html("`*not em*`") == "<code>*not em*</code>"
    assert markdown_html(r"\*not em\* \[x\]") == "*not em* [x]"
    assert markdown_html("**open") == "<strong>open</strong>"
    for text in HOSTILE:
        assert markdown_html(text.replace("*", "")) == html.escape(text.replace("*", ""))


def test_hostile_sentences_and_model_name_are_text_in_a_view_file():
    fig = go.Figure(go.Bar(x=[1, 2], y=["a", "b"]))
    for text in HOSTILE:
        page = view_html(fig, About(model=text, text_a=text, text_b=text), name="bars")
        assert html.escape(text) in page
        assert "<img src=x" not in page and '<a href="https://evil.example"' not in page
        assert len(scripts(page)) == 4  # settings, plotly.js, data and the page's script: none of the input's
        assert "\u2028" not in page.split("<script>", 1)[1]


def test_the_data_carries_every_figure_of_a_view_compact_and_with_one_template():
    figures = {key_of(i): go.Figure(go.Heatmap(z=np.full((3, 3), float(i)))) for i in range(3)}
    view = View(
        "Three", "Pick one.", (number_picker("layer", "Layer", 3, 1),), (Figures(figures, ("layer",)),)
    )
    page = view_html(view, About("tiny", "A cat.", ""))
    data = json.loads(unpacked(page))
    assert len(data["figures"]) == 3 and data["template"]["layout"]
    assert all("template" not in figure["layout"] for figure in data["figures"])
    assert data["figures"][2]["data"][0]["z"]["dtype"] == "f4"  # float64 arrays travel as float32
    assert data["areas"] == [
        {
            "view": 0,
            "keys": ["layer"],
            "figures": {"0": 0, "1": 1, "2": 2},
            "name": "figure",
            "head_filter": None,
            "click": [],
        }
    ]
    assert data["views"] == [{"pickers": {"layer": "1"}}]
    assert '<option value="1" selected>layer 1</option>' in page


def test_float32_compaction_keeps_the_numbers_to_float32_precision():
    values = np.array([0.1, 1 / 3, 2.5e-7, np.nan])
    plain, template = compact_figure(go.Figure(go.Scatter(x=values, y=values)))
    back = np.frombuffer(base64.b64decode(plain["data"][0]["x"]["bdata"]), dtype="<f4")
    np.testing.assert_array_equal(back, values.astype(np.float32))
    assert template is not None


def test_plotly_js_is_inlined_and_nothing_names_a_network_address():
    page = view_html(go.Figure(go.Bar(x=[1], y=[1])), About("tiny", "A cat.", ""))
    library = unpacked(page, "bvl-plotly")
    assert len(library) > 3_000_000 and "plotly.js" in library[:200]
    outside_data = re.sub(r'(id="bvl-(plotly|data)">)[^<]*', r"\1", page)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", outside_data)
    assert "@import" not in outside_data and "url(" not in outside_data  # no web font, no stylesheet fetched


def test_questions_travel_with_every_verdict_and_are_not_in_the_html():
    question = nsp_question(0.8)
    view = View("", blocks=(Ask({key_of(): question}), Note("<b>note</b>")))
    page = view_html(view, About("tiny", "A.", "B."))
    asks = json.loads(unpacked(page))["asks"]
    assert asks[0]["questions"][""]["verdicts"][0][0] is True  # "Yes" is the model's answer at 0.8
    assert asks[0]["questions"][""]["none"].startswith("No guess made.")
    assert question.prompt not in page  # the script sets it as text
    assert '<p class="bvl-note">&lt;b&gt;note&lt;/b&gt;</p>' in page


def test_a_picker_value_must_be_one_of_its_options():
    with pytest.raises(ValueError, match="not one of its options"):
        Picker("layer", "Layer", (("0", "layer 0"),), "3")


def test_a_payload_over_its_budget_is_refused_in_a_sentence():
    payload = Payload(limit=20_000)
    big = go.Figure(go.Heatmap(z=np.random.default_rng(0).random((80, 80))))
    with pytest.raises(ValueError, match=r"more than 0\.0 MB of figures: export fewer layers"):
        payload.view_html(View("", blocks=(single(big, "big"),)))


def test_the_token_limit_says_why_in_a_sentence():
    assert export_token_problem(MAX_EXPORT_TOKENS, "A lesson") is None
    problem = export_token_problem(MAX_EXPORT_TOKENS + 1, "A lesson")
    assert problem.startswith("A lesson carries every layer and head, so it takes at most 128 tokens")


def test_every_figure_offers_svg_beside_png():
    assert plotly_config("head_view")["toImageButtonOptions"] == {
        "format": "png",
        "filename": "head_view",
        "scale": 2,
    }
    script = svg_button_script()
    assert script.startswith("<script>") and SVG_TITLE in script and "__SETTINGS__" not in script
    page = view_html(go.Figure(go.Bar(x=[1], y=[1])), About("tiny", "A cat.", ""))
    assert SVG_TITLE in page and 'format: "svg"' in page  # the file's own modebar button
