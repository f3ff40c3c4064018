"""The exported file: one HTML page with its style, plotly.js, its data and its script inlined; nothing is fetched.

plotly.js comes from the installed plotly package (`plotly.offline.get_plotlyjs()`, 4.8 MB), gzip-packed with the
figures (export/payload.py) and unpacked by the page's script (export/assets/runtime.js). Every text a visitor
typed (the sentences, the model's name, tokens) is escaped here or set as text by the script.
"""

from __future__ import annotations

import datetime as dt
import functools
import html
import json
from dataclasses import dataclass
from pathlib import Path

from plotly.offline import get_plotlyjs, get_plotlyjs_version

from bertviz_lite.export.payload import Payload, packed
from bertviz_lite.export.toolbar import SVG_ICON, SVG_TITLE
from bertviz_lite.figures.head_view_script import head_view_hover_script

ASSETS = Path(__file__).resolve().parent / "assets"
HEAD_VIEW_KEY = "head_view"  # the box the head view's hover script looks for (blocks.Figures.hover_key)
_MARKS = {"**": "strong", "*": "em", "`": "code"}


@dataclass(frozen=True)
class About:
    """What a file shows and how it was made: the model's name, the sentence pair and one line on its making."""

    model: str
    text_a: str
    text_b: str = ""
    made_by: str = ""

    def made_line(self) -> str:
        """The file's last line: how it was made, when, and what it holds."""
        how = self.made_by or "Made with bertviz-lite"
        return (
            f"{how} on {dt.date.today().isoformat()}. This file needs no server and no network: plotly.js "
            f"{plotly_js_version()}, the figures and their data are inside it."
        )


def script_json(value: object) -> str:
    """JSON that is safe inside a <script> element: <, >, & and U+2028/U+2029 written as \\u escapes, so that no
    text in it can close the element (`</script>`) or end a line of the script."""
    text = json.dumps(value, ensure_ascii=False)
    for char, escaped in (
        ("&", "\\u0026"),
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escaped)
    return text


def markdown_html(text: str) -> str:
    """The walkthrough's step texts (`**bold**`, `*italic*`, `` `code` ``, backslash escapes) as HTML; every other
    character escaped, so a quoted token stays text."""
    out = []
    tags = []
    position = 0
    while position < len(text):
        char = text[position]
        in_code = bool(tags) and tags[-1] == "code"
        mark = "`" if char == "`" else None if in_code else "**" if text.startswith("**", position) else char
        if char == "\\" and position + 1 < len(text) and not in_code:
            out.append(html.escape(text[position + 1]))
            position += 2
        elif mark in _MARKS:
            tag = _MARKS[mark]
            if tags and tags[-1] == tag:
                out.append(f"</{tags.pop()}>")
            else:
                out.append(f"<{tag}>")
                tags.append(tag)
            position += len(mark)
        else:
            out.append(html.escape(char))
            position += 1
    return "".join(out) + "".join(f"</{tag}>" for tag in reversed(tags))


def plotly_js_version() -> str:
    return get_plotlyjs_version()


@functools.cache
def packed_plotly_js() -> str:
    """plotly.js of the installed plotly package, packed once per process (~0.2 s): 4.8 MB become 2 MB."""
    return packed(get_plotlyjs().encode("utf-8"))


def _asset(name: str) -> str:
    return (ASSETS / name).read_text(encoding="utf-8")


def header_html(title: str, about: About) -> str:
    """The title, the sentence pair and the model's name, escaped."""
    rows = [("bvl-a", "Sentence A", about.text_a)]
    if about.text_b.strip():
        rows.append(("bvl-b", "Sentence B", about.text_b))
    pair = "".join(
        f'<p class="bvl-pair"><span class="bvl-label {kind}">{label}</span> <q>{html.escape(text)}</q></p>'
        for kind, label, text in rows
    )
    model = f'<p class="bvl-model"><span class="bvl-label">Model</span> <span>{html.escape(about.model)}</span></p>'
    return f"<header><h1>{html.escape(title)}</h1>{pair}{model}</header>"


def step_navigation() -> str:
    """A lesson's Previous / Step n of N / Next bar (the script fills the counter and moves the steps)."""
    return (
        '<nav><button type="button" id="bvl-previous">← Previous</button><span id="bvl-counter"></span>'
        '<button type="button" id="bvl-next">Next →</button><span class="bvl-spacer"></span>'
        '<span class="bvl-keys">Arrow keys and PageDown / PageUp move too.</span></nav>'
    )


def page_html(title: str, about: About, body: str, payload: Payload, lesson: bool = False) -> str:
    """The whole file: the page around `body` (views or steps written by payload), with everything inlined."""
    settings = script_json({"svgTitle": SVG_TITLE, "svgIcon": SVG_ICON})
    hover = head_view_hover_script(HEAD_VIEW_KEY) if f"st-key-{HEAD_VIEW_KEY}" in body else ""
    return "\n".join(
        [
            "<!doctype html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{html.escape(title)}</title>",
            f"<style>{_asset('page.css')}</style></head>",
            f'<body class="{"bvl-lesson" if lesson else "bvl-single"}">',
            header_html(title, about),
            step_navigation() if lesson else "",
            '<p id="bvl-status" role="status">Unpacking the figures…</p>',
            "<noscript><p>This file draws its figures with JavaScript: allow it to see them.</p></noscript>",
            f"<main>{body}</main>",
            f"<footer><p>{html.escape(about.made_line())}</p></footer>",
            f'<script type="application/json" id="bvl-settings">{settings}</script>',
            f'<script type="application/octet-stream" id="bvl-plotly">{packed_plotly_js()}</script>',
            f'<script type="application/octet-stream" id="bvl-data">{payload.packed()}</script>',
            hover,
            f"<script>{_asset('runtime.js')}</script>",
            "</body></html>",
        ]
    )
