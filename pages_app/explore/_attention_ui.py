"""Pickers and layout shared by the two attention pages (Attention, Beyond attention): the sentence filter, layer
and head in a row, a chart key renewed by clicks, and the figure above its controls on a slide."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import streamlit as st

from bertviz_lite.inspection import analysis
from pages_app.common._state import KEEP, keep_choice
from pages_app.common._ui import is_present


def renewing_key(name: str, bare_first: bool = True) -> str:
    """A chart key that changes after each tile click (on_tile_click's renew): a new key clears the selection,
    so the same tile can be clicked again. bare_first: `name` itself before the first click, else `name_0`."""
    clicks = st.session_state.get(f"{name}_clicks", 0)
    return name if bare_first and not clicks else f"{name}_{clicks}"


def controls_then_figure() -> tuple:
    """(controls, figure): two containers to fill in that order (the figure reads the controls). In presentation
    mode the figure shows above its controls, so that it starts where a slide's figure starts and fits the screen
    (its pickers, above it, pushed it below the bottom of a 1280 × 720 slide)."""
    above = st.container()
    below = st.container()
    return (below, above) if is_present() else (above, below)


def head_pickers(
    prefix: str,
    has_sentence_b: bool,
    layers: int,
    heads: Sequence[int],
    default_head: int = 0,
    head_label: Callable[[int], str] = str,
    on_head: Callable[[], None] | None = None,
) -> tuple[str, int, int]:
    """Sentence filter, layer and head pickers in a row (keys `<prefix>_sentence_filter|layer|head`); on_head: called
    when the head picked changes."""
    filters = list(analysis.SENTENCE_FILTERS) if has_sentence_b else ["All"]
    keep_choice(f"{prefix}_sentence_filter", filters, "All")
    keep_choice(f"{prefix}_layer", range(layers), 0)
    keep_choice(f"{prefix}_head", heads, default_head)
    pick_filter, pick_layer, pick_head = st.columns(
        [3, 1, 1]
    )  # five filter buttons fit at 1024 px with a sidebar
    sentence_filter = (
        pick_filter.segmented_control(
            "Sentences (query → key)",
            filters,
            default="All",
            key=f"{prefix}_sentence_filter",
            persist_state=KEEP,
        )
        or "All"
    )
    layer = pick_layer.selectbox("Layer", range(layers), key=f"{prefix}_layer", persist_state=KEEP)
    head = pick_head.selectbox(
        "Head", heads, key=f"{prefix}_head", format_func=head_label, persist_state=KEEP, on_change=on_head
    )
    return sentence_filter, layer, head
