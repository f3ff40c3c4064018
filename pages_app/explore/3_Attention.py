"""Attention: one head as a heatmap, BertViz-style head and model views, the neuron view, statistics, rollout."""

from collections.abc import Callable
from functools import partial

import streamlit as st

from bertviz_lite import export, figures
from bertviz_lite.figures import tabs as declared
from bertviz_lite.figures.attention import STAT_TITLES
from bertviz_lite.figures.head_view_script import head_view_hover_script
from bertviz_lite.inspection import analysis, explore, views
from bertviz_lite.limits import export_token_problem
from bertviz_lite.text.display import plain_markdown
from pages_app.build._learner_source import bert_weights, reference_context
from pages_app.common._pages import ATTENTION
from pages_app.common._state import KEEP, clamp_number, keep_choice, keep_choices
from pages_app.common._ui import (
    about,
    clicked,
    get_trace,
    is_present,
    load_context,
    load_model,
    narrow_key,
    on_tile_click,
    show_figure,
    show_table,
    view,
)
from pages_app.explore._attention_ui import controls_then_figure, head_pickers, renewing_key
from pages_app.explore._tabs import declared_tabs, show_declared_tabs

HEAD_VIEW_WINDOW = 64  # tokens (queries and keys) drawn at once in the head view of a long input
SLIDE_WINDOW = 22  # in presentation mode: the tokens a 1280 × 720 slide shows with 16-px labels ≥ 17 px apart
ALL_TOKENS = -1

ctx = load_context(learner=True)  # a learner's own model too (Your BERT)
config = ctx.model.config
count = len(ctx.encoding)
num_layers = config.num_hidden_layers
num_heads = config.num_attention_heads
labels = analysis.unique_labels(ctx.encoding.tokens)

# Presentation mode: the title and the pickers share a row, so that the figure's bottom stays on the slide.
title_box, picker_box = (
    st.columns([1, 4], vertical_alignment="bottom") if is_present() else (st.container(),) * 2
)
title_box.header("Attention")
title_box.caption(
    "Each head turns every token into a query, a key and a value. A query's softmax(q · k / √d) over all keys is "
    "its attention row: how much of each token's value it takes. Rows are queries, columns keys; each row sums to 1."
)
if not is_present():  # the compact presentation header keeps the figure above the fold
    st.page_link(
        "pages_app/explore/5_Beyond_attention.py",
        icon=":material/troubleshoot:",
        label="Weights alone can mislead: see Beyond attention",
    )
with picker_box:
    sentence_filter, layer, head = head_pickers(
        "attn",
        explore.has_sentence_b(ctx.encoding),
        num_layers,
        range(num_heads),
        on_head=lambda: _show_in_head_view(st.session_state[ATTENTION.index_keys[1]]),
    )


def view_file(make: Callable[..., export.View], *picks, where: str) -> Callable[[], str] | None:
    """The HTML file of a view with every layer and head behind its pickers (bertviz_lite.export), built when clicked;
    None past limits.MAX_EXPORT_TOKENS, where the file holds the figure as shown."""
    if export_token_problem(count, "A view with pickers"):
        return None
    made = about(f"Attention page, {where}")
    return lambda: export.view_html(make(get_trace(ctx), *picks), made)


def single_head(
    layer: int, head: int, sentence_filter: str, name: str, axis_titles: bool = True, beside: bool = False
) -> None:
    """One head's map; `beside` another figure, in a column: its narrow version where the column is narrow."""
    block = view(views.attention_map, ctx, layer=layer, head=head, sentence_filter=sentence_filter)
    show_figure(
        partial(figures.attention_map_figure, block, axis_titles=axis_titles),
        name,
        frame=block.to_frame,
        slide_top=230,
        narrow=partial(figures.attention_map_figure, block, axis_titles, narrow=True) if beside else None,
        html=view_file(export.attention_map, sentence_filter, layer, head, where="heatmap"),
    )


def _focus_clicked_token() -> None:
    picked = clicked("head_view", explore.clicked_token)  # the wide chart's or the phone's
    start = st.session_state.get("hv_window_start", 0)
    st.session_state["hv_focus"] = ALL_TOKENS if picked is None else start + picked


def _show_in_head_view(head: int) -> None:
    """A head picked above is the one the head view shows (its legend and multiselect bring the others back)."""
    st.session_state["hv_heads"] = [head]


def _open_head(layer: int, head: int) -> None:
    """A clicked tile opens that head beside the model view."""
    st.session_state[ATTENTION.index_keys[0]] = layer
    st.session_state[ATTENTION.index_keys[1]] = head


def head_view_controls() -> tuple:
    """The head view's pickers: heads, token window, focus token and line threshold."""
    keep_choices("hv_heads", range(num_heads))
    heads = st.multiselect(
        "Heads (or click the legend)",
        range(num_heads),
        default=list(range(num_heads)),
        key="hv_heads",
        persist_state=KEEP,
        format_func=lambda h: f"head {h}",
    )
    window = None
    size = SLIDE_WINDOW if is_present() else HEAD_VIEW_WINDOW
    if count > (size if is_present() else 2 * size):
        clamp_number("hv_start", 0, count - size)
        start = st.slider(
            f"Tokens shown: from ({size} at a time; lines to tokens outside are not drawn)",
            0,
            count - size,
            0,
            key="hv_start",
            persist_state=KEEP,
        )
        window = explore.token_window(count, start, size)
    shown = range(count) if window is None else range(window.start, window.stop)
    st.session_state["hv_window_start"] = shown.start  # for the click callback
    keep_choice("hv_focus", [ALL_TOKENS, *shown], ALL_TOKENS)
    pick_focus, pick_weight = st.columns([2, 1])
    focus = pick_focus.selectbox(
        "Focus on one query token",
        [ALL_TOKENS, *shown],
        key="hv_focus",
        persist_state=KEEP,
        format_func=lambda i: "all tokens" if i == ALL_TOKENS else labels[i],
    )
    min_weight = pick_weight.slider(
        "Hide lines lighter than",
        0.0,
        0.5,
        views.head_view_min_weight(len(shown)),
        0.01,
        key="hv_min_weight",
        persist_state=KEEP,
        help="The default is 1 / tokens: uniform attention.",
    )
    return heads, window, focus, min_weight


@st.fragment  # its controls change this figure only: they rerun it, not the page and the sidebar
def head_view_tab(layer: int, sentence_filter: str) -> None:
    control_box, figure_box = controls_then_figure()
    with control_box:
        heads, window, focus, min_weight = head_view_controls()
    picks = dict(
        layer=layer,
        heads=heads,
        sentence_filter=sentence_filter,
        window=window,
        focus=None if focus == ALL_TOKENS else focus,
        min_weight=min_weight,
    )
    weights = bert_weights(ctx)  # their model runs with these weights: that BERT's own view can go beside it
    compare = weights is not None and control_box.toggle(
        "Compare with BERT",
        key="hv_compare",
        help=f"The head view of {weights} itself, with the weights your model runs with, "
        "for the same pair: where the two differ, your code computes attention differently.",
    )
    with figure_box:
        links = view(views.head_view_links, ctx, **picks)
        st.caption(
            f"Layer {layer}: at most {links.top_k} strongest lines per query token and head; opacity = weight. "
            "Hover a token to light up its lines; click it to keep only its lines (“all tokens” above brings "
            "them back). Click a head in the legend to show it alone, click it again for all heads."
        )
        html = view_file(export.head_view, sentence_filter, layer, where="head view")
        if not compare:
            draw_head_view(links, "head_view", html)
            return
        theirs, ours = st.columns(2)
        theirs.markdown(f"**Your BERT** ({plain_markdown(ctx.model.spec.file.name)})")
        ours.markdown(f"**BERT** ({plain_markdown(weights)}), the same pair and weights")
        with theirs:
            draw_head_view(links, "head_view", html)
        with ours:
            bert_links = view(views.head_view_links, reference_context(ctx, load_model), **picks)
            draw_head_view(bert_links, "head_view_bert")


def draw_head_view(links, key: str, html: Callable[[], str] | None = None) -> None:
    """A head view's figure (the sidebar's model's, or the BERT's beside a learner's) as the chart `key`."""
    show_figure(
        figures.head_view_figure(links),
        key,
        frame=links.to_frame,
        on_select=_focus_clicked_token,
        selection_mode="points",
        slide_top=255,
        narrow=partial(figures.head_view_figure, links, narrow=True),
        html=html,
    )
    for chart in (key, narrow_key(key)):  # hover a token: its lines light up
        st.html(head_view_hover_script(chart), unsafe_allow_javascript=True)


@st.fragment
def statistics_tab() -> None:
    stats = view(views.head_statistics, ctx)
    controls, figure = controls_then_figure()
    value = controls.selectbox(
        "Statistic", list(STAT_TITLES), key="stat_value", persist_state=KEEP, format_func=STAT_TITLES.get
    )
    with figure:
        show_figure(figures.head_statistics_figure(stats, value), "head_statistics", frame=stats.to_frame)
    show_table(stats.to_frame().round(4), "head_statistics_table", hide_index=True)


@st.fragment
def rollout_tab() -> None:
    st.caption(
        "Attention rollout (Abnar & Zuidema, 2020): average the heads, add the skip connection (0.5·A + 0.5·I), "
        "and multiply layer by layer: how much each input token flows into each token after a layer."
    )
    after = num_layers
    controls, figure = controls_then_figure()
    if num_layers > 1:  # a slider needs two values
        clamp_number("rollout_layer", 1, num_layers)
        after = controls.slider(
            "After layer", 1, num_layers, num_layers, key="rollout_layer", persist_state=KEEP
        )
    flow = view(views.rollout, ctx, after=after)
    with figure:
        show_figure(figures.rollout_figure(flow), "rollout", frame=flow.to_frame, slide_top=260)


tabs = declared_tabs(declared.ATTENTION_TABS, ATTENTION.tab_key)
if tabs["Heatmap"].open:
    with tabs["Heatmap"]:
        single_head(layer, head, sentence_filter, "attention_heatmap")

if tabs["Head view"].open:
    with tabs["Head view"]:
        head_view_tab(layer, sentence_filter)

if tabs["Model view"].open:
    with tabs["Model view"]:
        overview = view(views.model_view, ctx)
        st.caption(
            "Every layer (rows) and head (columns). Click a tile to open that head beside it."
            + (
                f" Tiles are averaged into {overview.tile} × {overview.tile} blocks of tokens."
                if overview.tile < count
                else ""
            )
        )
        grid, opened = st.columns([3, 2])  # the opened head beside the grid, not below the fold
        with grid:
            # Tiles as wide as the column allows (12 heads in 3/5 of a screen): a taller figure only left a gap.
            key = renewing_key("model_view")
            tile_size = max(24, min(80, 460 // num_heads))
            show_figure(
                partial(figures.model_view_figure, overview, tile_size=tile_size),
                "model_view",
                frame=overview.to_frame,
                key=key,
                selection_mode="points",
                on_select=on_tile_click(key, num_layers, num_heads, _open_head, renew="model_view"),
                narrow=partial(figures.model_view_figure, overview, tile_size=tile_size, narrow=True),
                html=view_file(export.model_view, layer, head, where="model view"),
            )
        with opened:
            single_head(layer, head, "All", "model_view_head", axis_titles=False, beside=True)

if tabs["Neuron view"].open:
    with tabs["Neuron view"]:
        keep_choice(ATTENTION.token_key, range(count), min(1, count - 1))
        controls, figure = controls_then_figure()
        query = controls.selectbox(
            "Query token",
            range(count),
            index=min(1, count - 1),
            key=ATTENTION.token_key,
            persist_state=KEEP,
            format_func=lambda i: labels[i],
        )
        st.caption(
            f"Layer {layer}, head {head}: the query vector of {labels[query]}, every key, their element-wise "
            "product, the dot product and its scaled version, the softmax, and the value-weighted sum."
        )
        neuron = view(views.neuron_view, ctx, layer=layer, head=head, query_index=query)
        with figure:
            show_figure(
                figures.neuron_view_figure(neuron),
                "neuron_view",
                frame=neuron.to_frame,
                narrow=partial(figures.neuron_view_figure, neuron, narrow=True),
            )

if tabs["Head statistics"].open:
    with tabs["Head statistics"]:
        statistics_tab()

if tabs["Rollout"].open:
    with tabs["Rollout"]:
        rollout_tab()

show_declared_tabs(
    declared.ATTENTION_TABS, tabs, ctx, layer=layer, head=head, sentence_filter=sentence_filter
)
