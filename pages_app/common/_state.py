"""Stored widget values kept valid when the input changes (a shorter text, a smaller model, a deleted run)."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from bertviz_lite.limits import clamp

# persist_state of every pick (layer, head, filter, token, knock-out set…): Streamlit keeps its value across visits
# to other pages instead of dropping the state of widgets a run does not draw. (st.tabs with a key keeps its own.)
KEEP = "session"


def keep_choice(key: str, options: Sequence, default, start: bool = False) -> None:
    """Reset a stored widget value that the input no longer offers (layer 5 of a 2-layer model).

    start: also store `default` when there is no value yet. Leave it off for widgets that get their default
    through value/index/default: the browser shows that default until the first value set through session
    state arrives, and may send it back meanwhile.
    """
    if start:
        st.session_state.setdefault(key, default)
    if key in st.session_state and st.session_state[key] not in options:
        st.session_state[key] = default


def keep_choices(key: str, options: Sequence) -> None:
    """Drop the stored multiselect values that the input no longer offers (head 7 of a 4-head model)."""
    if key in st.session_state:
        st.session_state[key] = [value for value in st.session_state[key] if value in options]


def clamp_number(key: str, low: int, high: int) -> None:
    """Pull a stored slider/number value back into [low, high] (the input got shorter, say)."""
    if key in st.session_state and not low <= st.session_state[key] <= high:
        st.session_state[key] = clamp(st.session_state[key], low, high)


def new_input(key: str, inputs) -> bool:
    """Whether `inputs` differ from the last run's under `key` (new text: positions mean other tokens)."""
    if st.session_state.get(key) == inputs:
        return False
    st.session_state[key] = inputs
    return True
