"""The explore pages' button to the model that has both heads, for a view that needs the MLM or NSP head."""

from __future__ import annotations

import streamlit as st

from bertviz_lite.loading.pretrained import DEFAULT_MODEL, list_checkpoints


def _use_default_model() -> None:
    st.session_state["model_picker"] = DEFAULT_MODEL


def switch_model_button(key: str | None = None) -> bool:
    """A button that picks DEFAULT_MODEL (it has both heads) in the sidebar; returns whether it is here."""
    available = DEFAULT_MODEL in list_checkpoints()
    st.button(
        f"Switch to {DEFAULT_MODEL}",
        on_click=_use_default_model,
        disabled=not available,
        type="primary",
        key=key,
    )
    return available
