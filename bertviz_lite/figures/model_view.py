"""Model view as ONE heatmap: every layer × head tile in a grid, plus one clickable point per tile.

L × H subplots (6 × 12 = 72 axis pairs) take plotly.js seconds to lay out. Here the tiles of
views.model_view are pasted into one matrix (NaN gaps between them), so the browser draws a
single image. Plotly heatmaps cannot be selected, scatter points can: an invisible point at the
centre of each tile carries customdata (layer, head), and with hovermode "closest" and
hoverdistance -1 the point of the tile under the mouse is the one hovered and clicked
(explore.model_view_selection reads the click back).
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from bertviz_lite.figures._common import COLOUR_BAR_BELOW, NARROW_BAR_MARGIN, PHONE_FIGURE_WIDTH, SEQUENTIAL
from bertviz_lite.inspection.views.attention import ModelView

# What `bertviz_lite.figures` offers at its top (its __init__ lists them by name).
__all__ = ["model_view_figure"]

PICKER_NAME = "tile picker"


def _paste(tiles: np.ndarray, gap: int) -> np.ndarray:
    """[L, H, G, G] tiles -> one float32 matrix; tile (l, h) at rows l*(G+gap)… and columns h*(G+gap)…, NaN between."""
    num_layers, num_heads, size, _ = tiles.shape
    step = size + gap
    matrix = np.full((num_layers * step - gap, num_heads * step - gap), np.nan, dtype=np.float32)
    for layer, head in np.ndindex(num_layers, num_heads):
        matrix[layer * step : layer * step + size, head * step : head * step + size] = tiles[layer, head]
    return matrix


def _picker(num_layers: int, num_heads: int, size: int, step: int) -> go.Scatter:
    layers, heads = np.meshgrid(np.arange(num_layers), np.arange(num_heads), indexing="ij")
    centre = (size - 1) / 2
    return go.Scatter(
        x=(heads * step + centre).ravel(),
        y=(layers * step + centre).ravel(),
        customdata=np.column_stack([layers.ravel(), heads.ravel()]),
        mode="markers",
        name=PICKER_NAME,
        marker={"size": 14, "color": "rgba(220,38,38,0)", "symbol": "circle-open", "line": {"width": 2}},
        selected={"marker": {"color": "rgba(220,38,38,1)", "opacity": 1}},
        unselected={"marker": {"opacity": 0}},
        hovertemplate="layer %{customdata[0]}, head %{customdata[1]}: click to open<extra></extra>",
        showlegend=False,
    )


def _grid_axis(count: int, size: int, step: int, prefix: str, **extra) -> dict:
    return {
        "tickvals": [i * step + (size - 1) / 2 for i in range(count)],
        "ticktext": [f"{prefix}{i}" for i in range(count)],
        "showgrid": False,
        "zeroline": False,
        "fixedrange": True,
        "ticks": "",
        **extra,
    }


MODEL_VIEW_TITLE = "Model view: attention of every layer (rows) and head (columns)"
NARROW_MODEL_VIEW_TITLE = "Model view: attention of every<br>layer (rows) and head (columns)"


def model_view_figure(
    model_view: ModelView, tile_size: int = 80, gap: int = 1, narrow: bool = False
) -> go.Figure:
    """All layers (rows) × heads (columns) of a ModelView as one clickable heatmap.

    narrow: for a phone's width: the title on two lines (on one it ran past the figure's right edge), the colour
    bar under the grid and the height from a phone's width (upright beside it, the bar left the grid 200 px and
    the figure twice the grid's height).
    """
    num_layers, num_heads, size, _ = model_view.tiles.shape
    step = size + gap
    margin = {"l": 40, "r": 20, "t": 110 if narrow else 90, "b": NARROW_BAR_MARGIN if narrow else 20}
    if narrow:
        tile_size = min(tile_size, (PHONE_FIGURE_WIDTH - margin["l"] - margin["r"]) // num_heads)
    fig = go.Figure(
        [
            go.Heatmap(
                z=_paste(model_view.tiles, gap),
                colorscale=SEQUENTIAL,
                zmin=0,
                hoverinfo="skip",
                name="attention",
                colorbar={"title": {"text": "weight"}, **(COLOUR_BAR_BELOW if narrow else {})},
            ),
            _picker(num_layers, num_heads, size, step),
        ]
    )
    fig.update_layout(
        title=NARROW_MODEL_VIEW_TITLE if narrow else MODEL_VIEW_TITLE,
        xaxis=_grid_axis(num_heads, size, step, "H", side="top", constrain="domain"),
        yaxis=_grid_axis(
            num_layers, size, step, "L", autorange="reversed", scaleanchor="x", constrain="domain"
        ),
        height=tile_size * num_layers + margin["t"] + margin["b"] + 30,
        margin=margin,
        plot_bgcolor="white",
        hovermode="closest",
        hoverdistance=-1,
        clickmode="event+select",
        meta={"layers": int(num_layers), "heads": int(num_heads), "tile": int(size), "gap": int(gap)},
    )
    return fig
