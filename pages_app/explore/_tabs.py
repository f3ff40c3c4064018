"""The explore pages' declared tabs (bertviz_lite.figures.tabs): st.tabs with the open one kept across page
visits, each tab's one plain line in presentation mode, the tabs whose view and figure are declared, drawn, and
every open tab's "The code" panel at its end."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import streamlit as st

from bertviz_lite.figures.tabs import ViewTab, glossary
from pages_app.common._ui import Context, is_present, show_figure, view
from pages_app.explore._code import show_code

KEPT_TAB = "_kept_"  # prefix of the plain key that remembers a page's open tab


def declared_tabs(declared: Sequence[ViewTab], key: str) -> dict:
    """The page's st.tabs by title, the open one kept across page visits, its one line on top in presentation mode.

    st.tabs has no persist_state: the open tab is copied to a plain key, which brings it back after a visit.
    """
    state = st.session_state
    kept = f"{KEPT_TAB}{key}"
    if key not in state and kept in state:
        state[key] = state[kept]
    titles = [tab.title for tab in declared]
    tabs = dict(zip(titles, st.tabs(titles, key=key, on_change="rerun"), strict=True))
    state[kept] = state.get(key, titles[0])
    for tab in declared:
        if tabs[tab.title].open:
            with tabs[tab.title]:
                about(tab)
    return tabs


def about(tab: ViewTab) -> None:
    """In presentation mode, the view's one plain line, with its symbols explained on hover."""
    if is_present() and tab.about:
        st.markdown(tab.about, help=glossary(tab) or None)


def show_declared_tabs(
    declared: Sequence[ViewTab], tabs: dict, ctx: Context, masked: Sequence[int] = (), **picks
) -> None:
    """Draw the open one of the tabs declared with a data function and a builder (figures/tabs.py): figure + CSV;
    then, at the end of the open tab (declared or drawn by the page, which calls this last), its code panel.

    tabs: the page's st.tabs by title; picks: the page's pickers (layer, head, sentence_filter), each tab given those it declares.
    """
    for tab in declared:
        if not tabs[tab.title].open:
            continue
        with tabs[tab.title]:
            if not tab.drawn_by_page:
                data = view(tab.data, ctx, masked, **tab.chosen(**picks))
                show_figure(partial(tab.figure, data), tab.name, frame=data.to_frame)
            show_code(ctx, tab.code, tab.name)
