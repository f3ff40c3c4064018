"""Model view as ONE heatmap: every layer × head tile in a grid, plus one clickable point per tile.

figures.model_view draws L × H subplots; with 6 × 12 that is 72 axis pairs, which plotly.js takes
seconds to lay out. Here the block-averaged tiles are pasted into one matrix (NaN gaps between
them), so the browser draws a single image. Plotly heatmaps cannot be selected, scatter points can:
an invisible point at the centre of each tile carries customdata (layer, head), and with hovermode
"closest" and hoverdistance -1 the point of the tile under the mouse is the one hovered and clicked.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from bertviz_lite.analysis import downsample_attention
from bertviz_lite.figures._common import SEQUENTIAL, check_length

PICKER_NAME = "tile picker"


def mosaic_matrix(attn, tokens: Sequence[str], max_tokens: int = 32, gap: int = 1) -> tuple[np.ndarray, int]:
    """[L, H, T, T] attention -> (one float32 matrix of all tiles, tile size G); NaN between tiles.

    Tile (l, h) occupies rows l*(G+gap) … +G and columns h*(G+gap) … +G; each is
    analysis.downsample_attention of that head, so its rows still sum to 1.
    """
    attn = np.asarray(attn)
    if attn.ndim != 4 or attn.shape[-1] != attn.shape[-2]:
        raise ValueError(f"attention must have shape [layers, heads, T, T], got {list(attn.shape)}")
    num_layers, num_heads, length, _ = attn.shape
    check_length(tokens, length, "tokens")
    size, step = min(length, max_tokens), min(length, max_tokens) + gap
    mosaic = np.full((num_layers * step - gap, num_heads * step - gap), np.nan, dtype=np.float32)
    for layer, head in np.ndindex(num_layers, num_heads):
        tile, _ = downsample_attention(attn[layer, head], max_tokens, tokens)
        mosaic[layer * step : layer * step + size, head * step : head * step + size] = tile
    return mosaic, size


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
        "showgrid": False, "zeroline": False, "fixedrange": True, "ticks": "", **extra,
    }  # fmt: skip


def model_view_mosaic(
    attn, tokens: Sequence[str], max_tokens: int = 32, tile_size: int = 80, gap: int = 1
) -> go.Figure:
    """All layers (rows) × heads (columns) of [L, H, T, T] attention as one clickable heatmap."""
    mosaic, size = mosaic_matrix(attn, tokens, max_tokens, gap)
    num_layers, num_heads = np.asarray(attn).shape[:2]
    step = size + gap
    fig = go.Figure(
        [
            go.Heatmap(z=mosaic, colorscale=SEQUENTIAL, zmin=0, hoverinfo="skip", name="attention",
                       colorbar={"title": {"text": "weight"}}),
            _picker(num_layers, num_heads, size, step),
        ]
    )  # fmt: skip
    fig.update_layout(
        title="Model view: attention of every layer (rows) and head (columns)",
        xaxis=_grid_axis(num_heads, size, step, "H", side="top", constrain="domain"),
        yaxis=_grid_axis(num_layers, size, step, "L", autorange="reversed", scaleanchor="x", constrain="domain"),
        height=tile_size * num_layers + 140,
        margin={"l": 40, "r": 20, "t": 90, "b": 20},
        plot_bgcolor="white",
        hovermode="closest",
        hoverdistance=-1,
        clickmode="event+select",
        meta={"layers": int(num_layers), "heads": int(num_heads), "tile": int(size), "gap": int(gap)},
    )
    return fig


def mosaic_tile(fig_or_z, layer: int, head: int, size: int, gap: int = 1) -> np.ndarray:
    """Tile (layer, head) cut back out of a mosaic matrix (or a figure's heatmap z)."""
    z = np.asarray(fig_or_z.data[0].z if isinstance(fig_or_z, go.Figure) else fig_or_z)
    step = size + gap
    return z[layer * step : layer * step + size, head * step : head * step + size]
