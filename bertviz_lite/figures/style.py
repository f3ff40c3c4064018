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


def _axes(fig: go.Figure) -> list:
    layout = fig.layout
    return [
        layout[name] for name in layout if name.startswith(("xaxis", "yaxis")) and layout[name] is not None
    ]


def readable(fig: go.Figure, present: bool = False, max_height: int | None = None) -> go.Figure:
    """Dark, large enough text everywhere in fig (presentation mode: larger still, at most max_height px tall)."""
    sizes = font_sizes(present)
    tick = {"size": sizes.tick, "color": TEXT_COLOUR}
    fig.update_layout(
        font={"size": sizes.base, "color": TEXT_COLOUR},
        legend_font=tick,
        title_font={"size": sizes.title, "color": TEXT_COLOUR},
        hoverlabel_font_size=sizes.tick,
    )  # plotly's 11-px hover boxes are hard to read
    for axis in _axes(fig):
        axis.tickfont = tick
        axis.title.font = {"size": sizes.axis_title, "color": TEXT_COLOUR}
    for trace in fig.data:
        if "colorbar" in trace and trace.type in ("heatmap", "contour"):
            trace.colorbar.tickfont = tick
    for name in fig.layout:
        if name.startswith("coloraxis") and fig.layout[name] is not None:
            fig.layout[name].colorbar.tickfont = tick
    for note in fig.layout.annotations:  # subplot titles
        note.font = {"size": sizes.axis_title, "color": TEXT_COLOUR}
    # Larger labels need more room, or plotly shows only every other token (square tiles would only gain a gap).
    if present and fig.layout.height and not fig.layout.yaxis.scaleanchor:
        fig.layout.height = round(fig.layout.height * PRESENT.tick / NORMAL.tick)
    if present and max_height:
        fig.layout.height = min(fig.layout.height or DEFAULT_HEIGHT, max_height)
    return fig
