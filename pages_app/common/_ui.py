"""Streamlit glue shared by the explore pages: cached model, trace and view data, plain errors, figure + CSV."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import NamedTuple, TypeVar

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from bertviz_lite import export
from bertviz_lite.export.toolbar import plotly_config, svg_button_script
from bertviz_lite.figures.style import readable
from bertviz_lite.inspection import explore
from bertviz_lite.loading.pretrained import load
from bertviz_lite.model.modeling import BertForPreTraining
from bertviz_lite.server import access, cache, settings
from bertviz_lite.server.memory import release_memory
from bertviz_lite.text.display import plain_markdown
from bertviz_lite.text.tokenization import BertTokenizer, Encoding
from pages_app.build._learner_source import learner_context, said_when_hidden, source_trace
from pages_app.common._share import PRESENT, clamp_linked_indices
from pages_app.common._sidebar import Inputs, current_inputs

LOAD_ERRORS = (ValueError, OSError)
THREADS_PROBLEM = settings.use_app_threads()  # once per process: BERTVIZ_LITE_THREADS (default 1)
# Traces, views, figures: bounded, idle ones dropped (server/cache.py).
SHARED, CACHE_PROBLEM = cache.from_settings()
T = TypeVar("T")
# Presentation mode is a slide of 1280 × 720 (or 1024 × 768): a figure ends by SLIDE_BOTTOM px from the top.
SLIDE_BOTTOM = 704
SLIDE_TOP = 240
ASSETS = Path(__file__).resolve().parent / "assets"  # the presentation CSS and the clicker script
# Presentation mode: a compact header (smaller titles, less space above them, captions hidden) and larger token chips.
STEP_KEYS_JS = (ASSETS / "step_keys.js").read_text(encoding="utf-8")  # read once, not on every rerun
PRESENT_CSS = "<style>" + (ASSETS / "present.css").read_text(encoding="utf-8") + "</style>"
# A figure drawn twice (show_figure's `narrow`): assets/layout.css shows the one that fits. The server cannot read a
# screen's width, so both go to the browser.
WIDE = "wide__"
NARROW = "narrow__"
FIGURE_BOX = "figure_box__"  # holds both: the CSS reads its width
LAYOUT_CSS = (
    "<style>"
    + (ASSETS / "layout.css")
    .read_text(encoding="utf-8")
    .replace("__WIDE__", WIDE)
    .replace("__NARROW__", NARROW)
    .replace("__BOX__", FIGURE_BOX)
    + "</style>"
)

SVG_BUTTONS = svg_button_script()
GC_FROM_TOKENS = 256  # inputs this long take seconds to trace, so a full collection (~0.3 s) first is cheap


class Context(NamedTuple):
    """One run's model, tokenizer and encoded pair, each made once from the sidebar's Inputs."""

    inputs: Inputs
    model: BertForPreTraining
    tokenizer: BertTokenizer
    encoding: Encoding
    max_length: int  # inputs.max_length capped by the model's position table


@st.cache_resource(max_entries=4, show_spinner="Loading the model…")
def load_model(source: str, version: str = "") -> tuple[BertForPreTraining, BertTokenizer]:
    """One model per source (and version of its files) and process; failures are not cached."""
    return load(source)


def checked_model(inputs: Inputs) -> tuple[BertForPreTraining, BertTokenizer]:
    """The inputs' model, if the server lets it load (server/access.py); raises ValueError or OSError."""
    access.check_model_source(inputs.source)
    return load_model(inputs.source, inputs.version)


def context_for(inputs: Inputs) -> Context:
    """The Context of inputs outside a page's run (the warm-up, a live class); raises ValueError or OSError."""
    model, tokenizer = checked_model(inputs)
    max_length = explore.effective_max_length(model, inputs.max_length)
    encoding = explore.encode(tokenizer, inputs.text_a, inputs.text_b, max_length)
    return Context(inputs, model, tokenizer, encoding, max_length)


def get_trace(ctx: Context, masked: Sequence[int] = ()) -> explore.PairTrace:
    """The one traced pass of the context's pair ([MASK] at `masked`), shared by every figure and visitor.

    Read it where it is used, into a local: Streamlit keeps a page's globals after its run (for the widget callbacks,
    and a closed tab's session for minutes), and a trace held there would outlive the cache's bounds.
    """
    masked = tuple(sorted(masked))
    return SHARED.get(("trace", ctx.inputs, masked), partial(_trace, ctx, masked), grows=True)


def _trace(ctx: Context, masked: tuple[int, ...]) -> explore.PairTrace:
    with st.spinner("Running the model…"):
        trace = source_trace(ctx, masked, load_model)  # a learner's model: in the checker's child process
    # Its working memory, and dropped traces in reference cycles, go back now.
    if ctx.max_length >= GC_FROM_TOKENS:
        release_memory()  # (no postScriptGC: it cost 30 visitors' latency, bench/RESULTS.md)
    return trace


def _stop_with(message: str) -> None:
    st.error(plain_markdown(message))  # it may quote a typed path or sentence
    st.stop()


def load_context(learner: bool = False) -> Context:
    """This run's Context from the sidebar's Inputs (app.py hands them over); any problem ends the page with st.error."""
    inputs = current_inputs()
    for problem in filter(None, (THREADS_PROBLEM, CACHE_PROBLEM)):
        st.warning(problem)
    if not inputs.source:
        _stop_with("Type the path of a model folder in the sidebar.")
    try:
        model, tokenizer = learner_context(inputs.source, learner) or checked_model(inputs)
    except LOAD_ERRORS as err:
        _stop_with(f"Could not load the model: {err}")
    st.sidebar.caption(explore.model_card(model, tokenizer))
    clamp_linked_indices(model.config.num_hidden_layers, model.config.num_attention_heads)
    max_length = explore.effective_max_length(model, inputs.max_length)
    if max_length < inputs.max_length:
        st.info(f"This model knows {max_length} positions, so the input is cut to {max_length} tokens.")
    try:
        encoding = explore.encode(tokenizer, inputs.text_a, inputs.text_b, max_length)
    except ValueError as err:
        _stop_with(str(err))
    for note in explore.input_warnings(encoding, max_length):
        st.warning(note)  # the package's own sentences, quoting no typed text
    return Context(inputs, model, tokenizer, encoding, max_length)


def view(
    data: Callable[..., T], ctx: Context, masked: Sequence[int] = (), stop: bool = True, **picks
) -> T | None:
    """data(trace, **picks), once for all; where a learner's model hides it: said, then None or page end."""
    masked = tuple(sorted(masked))
    with said_when_hidden(stop):
        return SHARED.get(
            cache.cache_key(data, ctx.inputs, masked, **picks), lambda: data(get_trace(ctx, masked), **picks)
        )


def view_of_model(data: Callable[..., T], ctx: Context, **params) -> T:
    """data(model, tokenizer, **params), computed once: a view that runs the model on sentences of its own (Why this
    word) rather than reading the trace."""
    return SHARED.get(
        cache.cache_key(data, ctx.inputs.source, ctx.inputs.version, **params),
        lambda: data(ctx.model, ctx.tokenizer, **params),
    )


def csv_button(numbers: pd.DataFrame | Callable[[], pd.DataFrame], name: str, key: str) -> None:
    """A download button for a table, or a table made on demand (a view's to_frame): the CSV is only built when the
    user clicks, so big tables cost nothing until then."""
    table = (lambda: numbers) if isinstance(numbers, pd.DataFrame) else numbers
    _download("Numbers as CSV", lambda: explore.csv_bytes(table()), f"{name}.csv", "text/csv", f"{key}_csv")


def html_button(build: Callable[[], str], name: str, key: str, label: str = "Interactive HTML") -> None:
    """A download button for a self-contained HTML file that bertviz_lite.export builds when the user clicks."""
    _download(label, build, f"{name}.html", "text/html", f"{key}_html")


def _download(label: str, data: Callable[[], bytes | str], file_name: str, mime: str, key: str) -> None:
    """A download button whose file is made when the user clicks, not on every run."""
    st.download_button(
        label,
        data=data,
        file_name=file_name,
        mime=mime,
        key=key,
        on_click="ignore",
        icon=":material/download:",
    )


def about(where: str) -> export.About:
    """What an exported file says about itself: the sidebar's pair and model, and where in the app it came from."""
    inputs = current_inputs()
    return export.About(inputs.source, inputs.text_a, inputs.text_b, f"Exported from bertviz-lite's {where}")


def step_keys(previous_key: str, next_key: str) -> None:
    """Arrow keys and PageUp/PageDown press the buttons with these keys (a clicker moves the walkthrough)."""
    script = STEP_KEYS_JS.replace("__NEXT__", next_key).replace("__PREV__", previous_key)
    st.html(f"<script>{script}</script>", unsafe_allow_javascript=True)


def is_present() -> bool:
    """Whether presentation mode is on (sidebar toggle or ?present=1)."""
    return bool(st.session_state.get(PRESENT))


def presentation_style() -> None:
    """The page style (CSS only: it takes no space on the page): wide or phone figures; in presentation mode, the
    compact page style."""
    st.html(LAYOUT_CSS)
    if is_present():
        st.html(PRESENT_CSS)


def narrow_key(key: str) -> str:
    """The widget key of a figure's phone version (show_figure's `narrow`)."""
    return f"{NARROW}{key}"


def clicked(key: str, read: Callable[[object], T | None]) -> T | None:
    """read(selection) of the chart `key` or of its phone version, whichever was clicked; None when neither was."""
    events = (st.session_state.get(chart) for chart in (key, narrow_key(key)))
    return next((found for event in events if event and (found := read(event.selection)) is not None), None)


def show_figure(
    fig: go.Figure | partial,
    name: str,
    frame: pd.DataFrame | Callable[[], pd.DataFrame],
    key: str | None = None,
    slide_top: int = SLIDE_TOP,
    narrow: go.Figure | partial | None = None,
    html: Callable[[], str] | None = None,
    **chart_args,
):
    """st.plotly_chart with readable fonts (larger in presentation mode), PNG and SVG buttons, then CSV and HTML ones.

    fig: a figure, or partial(builder, view data, **options): built once for all who show it at this size, shared.
    key: the chart's widget key when it is not `name` (a new key clears a chart's selection).
    slide_top: where the figure starts on a 1280 × 720 screen in presentation mode (px from the top); the figure
    is made short enough for its bottom to show too (the server cannot read the screen: this is the slide's size).
    narrow: the figure laid out for a phone, shown instead of `fig` below 641 px or in a column under 500 px (layout.css;
    not in presentation mode); its widget key is narrow_key(key), with the same chart_args (a callback reads both).
    html: builds the view's HTML file (bertviz_lite.export, its pickers' figures too); by default the figure alone.
    """
    drawn = partial(readable, present=is_present(), max_height=SLIDE_BOTTOM - slide_top)
    key = key or name
    if narrow is None or is_present():
        event = st.plotly_chart(_built(fig, drawn), key=key, config=plotly_config(name), **chart_args)
    else:  # both in a box whose width assets/layout.css reads
        with st.container(key=f"{FIGURE_BOX}{key}"):
            with st.container(key=f"{WIDE}{key}"):
                event = st.plotly_chart(_built(fig, drawn), key=key, config=plotly_config(name), **chart_args)
            with st.container(key=f"{NARROW}{key}_box"):
                st.plotly_chart(
                    _built(narrow, drawn), key=narrow_key(key), config=plotly_config(name), **chart_args
                )
    html = html or partial(_figure_html, fig, drawn, name, about(f"figure {name}"))
    with st.container(horizontal=True):
        csv_button(frame, name, name)
        html_button(html, name, name)
        st.html(SVG_BUTTONS, unsafe_allow_javascript=True)  # beside PNG in each chart's toolbar (once a page)
    return event


def _figure_html(fig: go.Figure | partial, drawn: partial, name: str, about: export.About) -> str:
    return export.view_html(_built(fig, drawn), about, name)  # the figure as shown (and shared)


def _built(fig: go.Figure | partial, drawn: partial) -> go.Figure:
    return SHARED.build_once(fig, drawn) if isinstance(fig, partial) else drawn(fig)


def show_table(frame: pd.DataFrame, name: str, **kwargs) -> None:
    """A dataframe with its own CSV button."""
    st.dataframe(frame, key=f"{name}_table", **kwargs)
    csv_button(frame, name, name)


def on_tile_click(
    key: str, layers: int, heads: int, picked: Callable[[int, int], None], renew: str | None = None
) -> Callable[[], None]:
    """The on_select callback of the model-view chart `key`: a clicked tile calls picked(layer, head).

    renew: the name given to renewing_key; its click count goes up, so the chart gets a new key.
    """

    def on_click() -> None:
        tile = clicked(key, lambda selection: explore.model_view_selection(selection, layers, heads))
        if tile is not None:
            picked(*tile)
            if renew:
                st.session_state[f"{renew}_clicks"] = st.session_state.get(f"{renew}_clicks", 0) + 1

    return on_click
