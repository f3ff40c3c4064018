"""An exported file's data and the HTML of its views: every figure as compact plotly JSON, gzip-packed.

`Payload.view_html(view)` writes a view's pickers, figure areas and questions as HTML (every text escaped; the
questions' texts go into the data and the page's script sets them as text) and keeps the figures and the wiring;
`Payload.packed()` is the data the page's script unpacks (export/assets/runtime.js): gzip, then base64.
"""

from __future__ import annotations

import base64
import gzip
import html
import json

import numpy as np
import plotly.graph_objects as go
from plotly.io.json import to_json_plotly

from bertviz_lite.export.blocks import Ask, Block, Figures, Markup, Note, Picker, View
from bertviz_lite.inspection.walkthrough import Question, check_answer
from bertviz_lite.limits import MAX_EXPORT_BYTES, megabytes


def packed(data: bytes) -> str:
    """gzip (no time stamp: the same data gives the same file) as base64, which is safe inside a <script>."""
    return base64.b64encode(gzip.compress(data, compresslevel=9, mtime=0)).decode("ascii")


def _float32(value):
    """Plotly JSON with its float64 arrays as float32: the file shows them (the CSV keeps every digit)."""
    if isinstance(value, dict):
        if value.get("dtype") == "f8" and "bdata" in value:
            numbers = np.frombuffer(base64.b64decode(value["bdata"]), dtype="<f8").astype("<f4")
            return {**value, "dtype": "f4", "bdata": base64.b64encode(numbers.tobytes()).decode("ascii")}
        return {key: _float32(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_float32(item) for item in value]
    return value


def compact_figure(fig: go.Figure) -> tuple[dict, dict | None]:
    """The figure as plotly JSON (float32 arrays) and, apart, its template (every figure of a file shares one)."""
    plain = fig.to_plotly_json()
    template = plain.setdefault("layout", {}).pop("template", None)
    return _float32(plain), template


def _question_data(question: Question) -> dict:
    """A question with the model's verdict on each option and on no guess (walkthrough.check_answer's sentences)."""
    verdicts = [check_answer(question, option) for option in question.options]
    return {
        "prompt": question.prompt,
        "options": list(question.options),
        "verdicts": [[verdict.correct, verdict.message] for verdict in verdicts],
        "none": check_answer(question, None).message,
    }


class Payload:
    """The figures, views, figure areas and questions of one file, within a byte budget (limits.MAX_EXPORT_BYTES)."""

    def __init__(self, limit: int = MAX_EXPORT_BYTES) -> None:
        self._figures: list[str] = []  # each figure's JSON text
        self._template: dict | None = None
        self._views: list[dict] = []
        self._areas: list[dict] = []
        self._asks: list[dict] = []
        self.size = 0
        self._limit = limit

    @property
    def figure_count(self) -> int:
        return len(self._figures)

    def _figure(self, fig: go.Figure) -> int:
        plain, template = compact_figure(fig)
        if self._template is None:
            self._template = template
        elif template is not None and template != self._template:
            plain["layout"]["template"] = template  # a figure with a template of its own keeps it
        text = to_json_plotly(plain)
        self.size += len(text)
        if self.size > self._limit:
            raise ValueError(
                f"This export would carry more than {megabytes(self._limit)} of figures: export fewer layers and "
                "heads (one figure at a time), or a shorter pair."
            )
        self._figures.append(text)
        return len(self._figures) - 1

    def view_html(self, view: View, heading: bool = True) -> str:
        """The view's HTML; its figures and wiring join the data. heading: write its title as an <h2>."""
        index = len(self._views)
        self._views.append({"pickers": {picker.name: picker.value for picker in view.pickers}})
        parts = [f'<section class="bvl-view" data-view="{index}">']
        if heading and view.title:
            parts.append(f"<h2>{html.escape(view.title)}</h2>")
        if view.caption:
            parts.append(f'<p class="bvl-caption">{html.escape(view.caption)}</p>')
        if view.pickers:
            pickers = "".join(_picker_html(picker, index) for picker in view.pickers)
            parts.append(f'<div class="bvl-pickers">{pickers}</div>')
        parts.extend(self._block_html(block, index) for block in view.blocks)
        parts.append("</section>")
        return "\n".join(parts)

    def _block_html(self, block: Block, view: int) -> str:
        if isinstance(block, Figures):
            return self._area_html(block, view)
        if isinstance(block, Ask):
            return self._ask_html(block, view)
        if isinstance(block, Note):
            return f'<p class="bvl-note">{html.escape(block.text)}</p>'
        if isinstance(block, Markup):
            return f'<div class="bvl-markup">{block.html}</div>'
        raise TypeError(f"not a block of a view: {block!r}")

    def _area_html(self, area: Figures, view: int) -> str:
        self._areas.append(
            {
                "view": view,
                "keys": list(area.keys),
                "figures": {key: self._figure(fig) for key, fig in area.figures.items()},
                "name": area.name,
                "head_filter": area.head_filter,
                "click": list(area.click),
            }
        )
        div = f'<div class="bvl-figure" data-area="{len(self._areas) - 1}"></div>'
        return f'<div class="st-key-{html.escape(area.hover_key)}">{div}</div>' if area.hover_key else div

    def _ask_html(self, ask: Ask, view: int) -> str:
        index = len(self._asks)
        self._asks.append(
            {
                "view": view,
                "keys": list(ask.keys),
                "questions": {key: _question_data(question) for key, question in ask.questions.items()},
            }
        )
        revealed = "\n".join(self._area_html(area, view) for area in ask.reveal)
        return (
            f'<div class="bvl-ask" data-ask="{index}"><p class="bvl-prompt"></p>'
            '<div class="bvl-options" role="radiogroup"></div>'
            '<button type="button" class="bvl-reveal-button">Reveal the model\'s answer</button>'
            '<div class="bvl-revealed" hidden><p class="bvl-verdict" role="status"></p>'
            f'<button type="button" class="bvl-again">Ask again</button>{revealed}</div></div>'
        )

    def packed(self) -> str:
        """The data for the page's script: {"template", "figures", "views", "areas", "asks"} packed."""
        rest = json.dumps({"views": self._views, "areas": self._areas, "asks": self._asks})
        text = (
            f'{{"template":{to_json_plotly(self._template)},"figures":[{",".join(self._figures)}],' + rest[1:]
        )
        return packed(text.encode("utf-8"))


def _picker_html(picker: Picker, view: int) -> str:
    options = "".join(
        f'<option value="{html.escape(value)}"{" selected" if value == picker.value else ""}>'
        f"{html.escape(label)}</option>"
        for value, label in picker.options
    )
    return (
        f"<label>{html.escape(picker.label)} "
        f'<select data-view="{view}" data-picker="{html.escape(picker.name)}">{options}</select></label>'
    )
