"""The app's views as exported files: any figure as it is shown, or an attention view with its layer and head pickers
and every figure they offer (so the file carries the data of each layer and head, within limits.MAX_EXPORT_TOKENS).

    html = view_html(head_view(trace), About("minilm-english", "The cat sat.", "It slept."))
"""

from __future__ import annotations

import html

import plotly.graph_objects as go

from bertviz_lite.export.blocks import Figures, View, key_of, number_picker, single
from bertviz_lite.export.page import HEAD_VIEW_KEY, About, page_html
from bertviz_lite.export.payload import Payload
from bertviz_lite.figures.attention import attention_map_figure, head_view_figure
from bertviz_lite.figures.model_view import model_view_figure
from bertviz_lite.figures.style import readable
from bertviz_lite.inspection import views
from bertviz_lite.inspection.explore import PairTrace
from bertviz_lite.limits import export_token_problem

HEAD_VIEW_CAPTION = (
    "Lines from each query token (left) to the keys it attends to (right); opacity = weight, at most {top_k} "
    "lines per query token and head. Hover a token to light up its lines. Pick a head above, or click one in the "
    "legend to show it alone (again: all heads)."
)


def figure_view(fig: go.Figure, name: str, title: str | None = None) -> View:
    """One figure as the app shows it (hover, zoom, PNG and SVG); its title from the figure when not given."""
    text = title or (fig.layout.title.text if fig.layout.title and fig.layout.title.text else name)
    return View(_plain_title(text), blocks=(single(fig, name),))


def _plain_title(text: str) -> str:
    """A figure title without plotly's line breaks and tags, for the page's <title> and heading."""
    for tag in ("<br>", "<b>", "</b>", "<i>", "</i>"):
        text = text.replace(tag, " ")
    return " ".join(html.unescape(text).split())  # plotly's entities (text.display.plain_label) as characters


def _check_tokens(trace: PairTrace, what: str) -> None:
    problem = export_token_problem(trace.num_tokens, what)
    if problem:
        raise ValueError(problem)


def _layers_and_heads(trace: PairTrace) -> tuple[int, int]:
    config = trace.model.config
    return config.num_hidden_layers, config.num_attention_heads


def head_view(trace: PairTrace, sentence_filter: str = "All", layer: int | None = None) -> View:
    """The head view of every layer: a layer picker, and a head picker that shows one head or all of them."""
    _check_tokens(trace, "A head view with its pickers")
    num_layers, num_heads = _layers_and_heads(trace)
    links = {
        index: views.head_view_links(trace, index, range(num_heads), sentence_filter)
        for index in range(num_layers)
    }
    area = Figures(
        {key_of(index): readable(head_view_figure(found)) for index, found in links.items()},
        keys=("layer",),
        name="head_view",
        head_filter="head",
        hover_key=HEAD_VIEW_KEY,
    )
    pickers = (
        number_picker("layer", "Layer", num_layers, num_layers // 2 if layer is None else layer),
        number_picker("head", "Heads", num_heads, "all", all_label="all heads"),
    )
    caption = HEAD_VIEW_CAPTION.format(top_k=links[0].top_k)
    return View(f"Head view ({sentence_filter})", caption, pickers, (area,))


def attention_map(
    trace: PairTrace, sentence_filter: str = "All", layer: int | None = None, head: int = 0
) -> View:
    """One head's attention heatmap, for every layer and head (layer and head pickers)."""
    _check_tokens(trace, "An attention heatmap with its pickers")
    num_layers, num_heads = _layers_and_heads(trace)
    area = Figures(
        {
            key_of(at_layer, at_head): readable(
                attention_map_figure(views.attention_map(trace, at_layer, at_head, sentence_filter))
            )
            for at_layer in range(num_layers)
            for at_head in range(num_heads)
        },
        keys=("layer", "head"),
        name="attention_heatmap",
    )
    pickers = _layer_head_pickers(num_layers, num_heads, layer, head)
    return View(f"Attention of one head ({sentence_filter})", "", pickers, (area,))


def _layer_head_pickers(num_layers: int, num_heads: int, layer: int | None, head: int) -> tuple:
    return (
        number_picker("layer", "Layer", num_layers, num_layers // 2 if layer is None else layer),
        number_picker("head", "Head", num_heads, head),
    )


def model_view(trace: PairTrace, layer: int | None = None, head: int = 0) -> View:
    """Every layer × head as one grid, and beside it the head a click on a tile (or the pickers) opens."""
    _check_tokens(trace, "A model view with its pickers")
    num_layers, num_heads = _layers_and_heads(trace)
    tile_size = max(24, min(80, 460 // num_heads))
    grid = Figures(
        {key_of(): readable(model_view_figure(views.model_view(trace), tile_size=tile_size))},
        name="model_view",
        click=("layer", "head"),
    )
    opened = attention_map(trace, "All", layer, head).blocks
    caption = "Every layer (rows) and head (columns). Click a tile to open that head below."
    return View(
        "Model view", caption, _layer_head_pickers(num_layers, num_heads, layer, head), (grid, *opened)
    )


def view_html(view: View | go.Figure, about: About, name: str = "figure") -> str:
    """One self-contained HTML file of a view (or of one figure, named `name`) for the pair and model in `about`."""
    if isinstance(view, go.Figure):
        view = figure_view(view, name)
    payload = Payload()
    body = payload.view_html(view, heading=False)
    return page_html(view.title, about, body, payload)
