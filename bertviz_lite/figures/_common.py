"""Small helpers shared by the figure builders."""

from __future__ import annotations

import textwrap

import numpy as np
import plotly.colors as pcolors

# 16 colours told apart on white (Tableau 10, then six darker or brighter ones): a head keeps its colour in every
# figure, and 12-16 heads get distinct ones (plotly's own palette repeats after 10 and has near-twins).
HEAD_COLOURS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#7f7f7f",
    "#000080",
    "#ff1493",
    "#006400",
    "#b8860b",
    "#00ced1",
    "#800000",
)
SEGMENT_COLOURS = {0: "#1f77b4", 1: "#ff7f0e"}
SEQUENTIAL = "Blues"
DIVERGING = "RdBu_r"
UNIT_DIVERGING = {"colorscale": DIVERGING, "zmid": 0, "zmin": -1, "zmax": 1}  # for values in [-1, 1]
# A legend in rows at the figure's bottom edge (pixels: under the x-axis title at any height; plotly makes room for
# it). Beside the plot, a legend took two thirds of a phone's width; below, its entries wrap to the width there is.
LEGEND_BELOW = {
    "orientation": "h",
    "yref": "container",
    "y": 0,
    "yanchor": "bottom",
    "x": 0,
    "xanchor": "left",
}
# A line of a 17-px title that fits a phone's figure (~358 px wide at 390 px, ~7 px a character): a phone
# version (show_figure's `narrow`) breaks its title into lines of at most this many characters.
NARROW_TITLE_CHARS = 40
# A title line that fits a figure in a column of a laptop's screen (204 px for Meaning in context's accuracy chart at
# 1024 × 768 with the sidebar open; 17-px titles take about 8.5 px a character): the narrow version of a figure
# drawn in a column wraps its title at this many characters.
COLUMN_TITLE_CHARS = 24
TITLE_LINE_PX = 24  # a line of a title in presentation mode's 21-px font, with its spacing
PHONE_FIGURE_WIDTH = 358  # px: a figure's width at 390 px (a phone), where a phone version is sized to fit
# A colour bar lying flat along a phone figure's bottom edge (pixels, as LEGEND_BELOW): upright at the right it took
# a fifth of the width from the plot. The figure keeps NARROW_BAR_MARGIN px under its plot for it.
COLOUR_BAR_BELOW = {
    "orientation": "h",
    "yref": "container",
    "y": 0,
    "yanchor": "bottom",
    "x": 0.5,
    "xanchor": "center",
    "len": 1.0,
    "thickness": 12,
}
NARROW_BAR_MARGIN = 70
ROBUST_PERCENTILE = 98.0  # diverging heatmaps saturate at this percentile of |value|


def wrapped(text: str, chars: int = NARROW_TITLE_CHARS) -> str:
    """text in lines of at most `chars` characters (broken between words), joined by plotly's <br>."""
    return "<br>".join(textwrap.wrap(text, chars))


def head_colour(head: int) -> str:
    """Hex colour of a head, the same in every figure."""
    return HEAD_COLOURS[head % len(HEAD_COLOURS)]


def rgba(hex_colour: str, alpha: float) -> str:
    """'#636EFA', 0.5 -> 'rgba(99,110,250,0.5)'."""
    red, green, blue = pcolors.hex_to_rgb(hex_colour)
    return f"rgba({red},{green},{blue},{alpha:.3g})"


def as_matrix(values, name: str) -> np.ndarray:
    """values as a 2-D float array (float32 kept as is: half the bytes sent), or a ValueError."""
    matrix = np.asarray(values)
    if matrix.dtype not in (np.float32, np.float64):
        matrix = matrix.astype(np.float64)
    if matrix.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got shape {list(matrix.shape)}")
    return matrix


def check_length(labels, length: int, what: str) -> None:
    """Raise a ValueError when a label list does not match the data it labels."""
    if len(labels) != length:
        raise ValueError(f"got {len(labels)} {what} for {length} rows/columns of data")


def symmetric_range(*arrays: np.ndarray) -> float:
    """Largest absolute value over arrays (at least a tiny positive number), for zmid=0 scales."""
    largest = max((float(np.nanmax(np.abs(a))) for a in arrays if np.size(a)), default=0.0)
    return largest if largest > 0 else 1e-12


def robust_range(*arrays: np.ndarray, percentile: float = ROBUST_PERCENTILE) -> float:
    """The `percentile`-th percentile of |value| over arrays, for zmid=0 scales a projector can show.

    A few large values (LayerNorm's outlier dimensions) would otherwise wash every other cell out to white;
    cells beyond the range are drawn at full colour.
    """
    values = np.concatenate(
        [np.abs(np.asarray(a, dtype=float)).ravel() for a in arrays if np.size(a)] or [np.zeros(1)]
    )
    limit = float(np.nanpercentile(values, percentile))
    return limit if limit > 0 else symmetric_range(*arrays)


def token_axis_height(num_tokens: int, per_token: int = 16, low: int = 320, high: int = 2400) -> int:
    """Figure height in pixels for an axis listing num_tokens labels, kept within [low, high]."""
    return int(np.clip(per_token * num_tokens + 160, low, high))


def category_axis(reverse: bool = False) -> dict:
    """Axis settings for token labels: always categorical (so "1" is not read as a number)."""
    axis: dict = {"type": "category"}
    if reverse:
        axis["autorange"] = "reversed"
    return axis
