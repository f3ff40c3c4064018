"""What an exported view is made of: pickers, figures chosen by the pickers' values, questions, notes.

Plain dataclasses, filled by export/views.py and export/lesson.py and turned into HTML and data by export/payload.py.
A figure area holds one plotly figure per combination of the pickers it depends on (`keys`): the file carries them
all, and the browser shows the one the pickers name. Values are strings, joined by "|" into a figure's key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import plotly.graph_objects as go

from bertviz_lite.inspection.walkthrough import Question


@dataclass(frozen=True)
class Picker:
    """A drop-down of a view: `name` keys the figures, `options` are (value, label) pairs, `value` the first pick."""

    name: str
    label: str
    options: tuple[tuple[str, str], ...]
    value: str

    def __post_init__(self) -> None:
        if self.value not in dict(self.options):
            raise ValueError(f"picker {self.name!r}: {self.value!r} is not one of its options")


@dataclass(frozen=True)
class Figures:
    """One figure area: a figure per key (the values of the pickers named in `keys`, joined by "|").

    name: the file name of the figure's PNG and SVG downloads.
    head_filter: a picker whose value ("all" or a head) keeps only that head's traces (those whose meta names
        a head, as the head view's lines do); the others stay in the legend, greyed.
    click: the pickers that a click on a point sets from its customdata, in order (the model view's tiles).
    hover_key: the `.st-key-<key>` box the head view's hover script looks for (figures/head_view_script.py).
    """

    figures: Mapping[str, go.Figure]
    keys: tuple[str, ...] = ()
    name: str = "figure"
    head_filter: str | None = None
    click: tuple[str, ...] = ()
    hover_key: str | None = None


@dataclass(frozen=True)
class Ask:
    """Predict, then reveal: a question per key, and the figures shown once the answer is revealed."""

    questions: Mapping[str, Question]
    keys: tuple[str, ...] = ()
    reveal: tuple[Figures, ...] = ()


@dataclass(frozen=True)
class Note:
    """A paragraph of plain text (escaped when written)."""

    text: str


@dataclass(frozen=True)
class Markup:
    """HTML made by a builder that escapes what it quotes (figures.token_chip_html)."""

    html: str


Block = Figures | Ask | Note | Markup


@dataclass(frozen=True)
class View:
    """A titled group of pickers and the blocks they drive: one exported view, or the figures of a lesson's step."""

    title: str
    caption: str = ""
    pickers: tuple[Picker, ...] = ()
    blocks: tuple[Block, ...] = field(default_factory=tuple)


def key_of(*values: object) -> str:
    """The key of a figure or question for these picker values, in the order of its `keys`."""
    return "|".join(str(value) for value in values)


def number_picker(
    name: str, label: str, count: int, value: int | str, all_label: str | None = None
) -> Picker:
    """A picker of 0..count-1 (labelled "layer 0", …), with an "all" option first when all_label is given."""
    options = [(str(i), f"{name} {i}") for i in range(count)]
    if all_label is not None:
        options.insert(0, ("all", all_label))
    return Picker(name, label, tuple(options), str(value))


def single(fig: go.Figure, name: str) -> Figures:
    """A figure area that shows one figure whatever the pickers say."""
    return Figures({key_of(): fig}, name=name)
