"""Make the model-view mosaic clickable: one invisible point per tile, on an axis pair laid over it.

Plotly heatmaps cannot be selected, scatter points can. The overlay axes span the whole figure with
range [0, 1], so their data coordinates are paper coordinates: each point sits at the centre of its
tile and carries customdata (layer, head). With hovermode "closest" and hoverdistance -1 the nearest
centre, i.e. the tile under the mouse, is hovered, and a click selects it.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

PICKER_NAME = "tile picker"


def _axis_centre(fig: go.Figure, letter: str, index: int) -> float:
    """Centre (paper coordinates) of the domain of xaxis{index} or yaxis{index}."""
    axis = fig.layout[f"{letter}axis{index if index > 1 else ''}"]
    start, stop = axis.domain
    return (start + stop) / 2


def add_tile_picker(fig: go.Figure, num_layers: int, num_heads: int) -> go.Figure:
    """Add the overlay to a figure from figures.model_view (subplots row = layer, column = head)."""
    layers, heads = np.meshgrid(np.arange(num_layers), np.arange(num_heads), indexing="ij")
    subplot = (layers * num_heads + heads + 1).ravel()  # make_subplots numbers axes row by row
    x = [_axis_centre(fig, "x", int(i)) for i in subplot]
    y = [_axis_centre(fig, "y", int(i)) for i in subplot]
    overlay = num_layers * num_heads + 1
    fig.add_trace(
        go.Scatter(
            x=x,
            y=y,
            xaxis=f"x{overlay}",
            yaxis=f"y{overlay}",
            mode="markers",
            name=PICKER_NAME,
            customdata=np.column_stack([layers.ravel(), heads.ravel()]),
            marker={"size": 14, "color": "rgba(220,38,38,0.0)", "symbol": "circle-open", "line": {"width": 2}},
            selected={"marker": {"color": "rgba(220,38,38,1)", "opacity": 1}},
            unselected={"marker": {"opacity": 0}},
            hovertemplate="layer %{customdata[0]} head %{customdata[1]}: click to open<extra></extra>",
            showlegend=False,
        )
    )
    hidden = {"domain": [0, 1], "range": [0, 1], "visible": False, "fixedrange": True, "showgrid": False}
    fig.update_layout(
        {f"xaxis{overlay}": {**hidden, "anchor": f"y{overlay}"}, f"yaxis{overlay}": {**hidden, "anchor": f"x{overlay}"}},
        hovermode="closest",
        hoverdistance=-1,
        clickmode="event+select",
        plot_bgcolor="rgba(0,0,0,0)",  # the overlay's background would otherwise hide the tiles
    )
    return fig
