"""Readable text in every figure: dark tick labels at a size a projector shows (applied by the app to each figure).

`readable(fig, present)` sets the fonts of the layout, every axis, colour bar, legend and subplot title.
Normal mode: 13 px dark text (plotly's default is 12 px mid grey). Presentation mode: 16 px ticks,
larger titles, and a figure of fixed height grows by as much as its labels, up to `max_height` (a slide: the
figure's bottom must stay on the screen). The figure is changed in place and returned.
"""

from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go

TEXT_COLOUR = "#111111"
DEFAULT_HEIGHT = 450  # plotly's, for a figure that sets none


@dataclass(frozen=True)
class FontSizes:
    """Pixel sizes of a figure's texts."""

    base: int
    tick: int
    title: int
    axis_title: int


NORMAL = FontSizes(base=13, tick=13, title=17, axis_title=14)
PRESENT = FontSizes(base=16, tick=16, title=21, axis_title=17)


def font_sizes(present: bool) -> FontSizes:
    """The font sizes of normal or presentation mode."""
    return PRESENT if present else NORMAL


def _merged(part, **values) -> dict:
    """A layout or trace part's properties with `values` over them, as a dict to assign in one set."""
    return {**part.to_plotly_json(), **values}


def readable(fig: go.Figure, present: bool = False, max_height: int | None = None) -> go.Figure:
    """Dark, large enough text everywhere in fig (presentation mode: larger still, at most max_height px tall).

    Each part is set whole, its own properties merged with the fonts: plotly validates and dispatches every set, and
    one set a part (not `update_layout`'s batch, or a set a property) makes the explore pages' figures readable in
    3.1-3.6 ms each instead of 7.4-8.2, with the same figures (bench/figure_cost.py; bench/RESULTS.md).
    """
    sizes = font_sizes(present)
    tick = {"size": sizes.tick, "color": TEXT_COLOUR}
    axis_title = {"size": sizes.axis_title, "color": TEXT_COLOUR}
    layout = fig.layout
    layout.font = _merged(layout.font, size=sizes.base, color=TEXT_COLOUR)
    layout.legend.font = _merged(layout.legend.font, **tick)
    layout.title.font = _merged(layout.title.font, size=sizes.title, color=TEXT_COLOUR)
    # plotly's 11-px hover boxes are hard to read
    layout.hoverlabel.font = _merged(layout.hoverlabel.font, size=sizes.tick)
    for name in layout:  # every property name: the prefix is read first, the property only for those
        if name.startswith(("xaxis", "yaxis")) and layout[name] is not None:
            layout[name].tickfont = tick
            layout[name].title = _merged(layout[name].title, font=axis_title)
        elif name.startswith("coloraxis") and layout[name] is not None:
            layout[name].colorbar.tickfont = tick
    for trace in fig.data:
        if trace.type in ("heatmap", "contour"):
            trace.colorbar.tickfont = tick
    if layout.annotations:  # subplot titles
        layout.annotations = [_merged(note, font=axis_title) for note in layout.annotations]
    # Larger labels need more room, or plotly shows only every other token (square tiles would only gain a gap).
    if present and layout.height and not layout.yaxis.scaleanchor:
        layout.height = round(layout.height * PRESENT.tick / NORMAL.tick)
    if present and max_height:
        layout.height = min(layout.height or DEFAULT_HEIGHT, max_height)
    return fig
