"""The explore pages' first render for the default pair, made once per process in the background.

app.py calls `start_warm_up()` on every run; the first run of a process starts one thread that loads the default
model and traces the sidebar's default pair through the pages' own cached functions (`_ui.load_model`,
`_ui.context_for`, `_ui.get_trace`, `_ui.view`), so the visitors who arrive next find them ready. It also builds, and drops, the
Attention page's first heatmap, so that plotly's lazily imported figure classes are loaded before a visitor needs them.
"""

from __future__ import annotations

import logging
import threading

import streamlit as st

from bertviz_lite import figures
from bertviz_lite.inspection import explore, views
from bertviz_lite.loading.pretrained import DEFAULT_MODEL
from pages_app.common._sidebar import DEFAULTS, Inputs
from pages_app.common._ui import LOAD_ERRORS, context_for, get_trace, view

LOGGER = logging.getLogger(__name__)
THREAD = "bertviz-warm-up"


def _not_from_warm_up(record: logging.LogRecord) -> bool:
    """Streamlit says "missing ScriptRunContext" when a cached function runs outside a page: expected here."""
    return record.threadName != THREAD


def default_inputs() -> Inputs:
    """What a new visitor's sidebar holds: the default model and pair."""
    return Inputs(
        DEFAULT_MODEL,
        DEFAULTS["sentence_a"],
        DEFAULTS["sentence_b"],
        DEFAULTS["max_length"],
        explore.source_version(DEFAULT_MODEL),
    )


def warm_up(inputs: Inputs) -> None:
    """Model, trace (with its prediction logits, which the walkthrough reads) and one figure of `inputs`."""
    try:
        ctx = context_for(inputs)
        trace = get_trace(ctx)
    except LOAD_ERRORS as err:  # the default model is missing or broken: the pages will say so in plain words
        LOGGER.warning("warm-up skipped: %s", err)
        return
    _ = trace.mlm_logits, trace.nsp_logits
    # The Attention page's first heatmap (its default layer, head and filter), data cached as the page asks for it.
    figures.attention_map_figure(view(views.attention_map, ctx, layer=0, head=0, sentence_filter="All"))


@st.cache_resource(show_spinner=False)
def start_warm_up() -> threading.Thread:
    """One background warm-up per process (st.cache_resource runs this once); returns its thread."""
    logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").addFilter(_not_from_warm_up)
    # Not a daemon: the process waits for it at exit. A daemon thread left inside a torch call while the interpreter
    # tears torch down aborts the process ("terminate called without an active exception", exit code 134), which a
    # test run or a server stopped within seconds of its first visitor ended with.
    thread = threading.Thread(target=warm_up, args=(default_inputs(),), name=THREAD, daemon=False)
    thread.start()
    return thread
