"""The admin token's small form, on the Train and Checkpoints pages: the lecturer may manage every run."""

from __future__ import annotations

import streamlit as st

from bertviz_lite.server import access
from pages_app.common._visitor import current_visitor


def _try_admin_token() -> None:
    """Checked once per typed token (not on every rerun): each wrong one counts against the rate limit."""
    token = st.session_state.get("admin_token") or ""
    st.session_state["admin_token"] = ""  # the secret does not stay in the page
    if not token:
        return
    try:
        right = access.check_admin_token(current_visitor().id, token)
    except access.AdminLockout as err:
        st.session_state["admin_notice"] = str(err)
        return
    st.session_state["visitor_admin"] = right
    st.session_state["admin_notice"] = None if right else "That is not the admin token."


def admin_login() -> None:
    """A small form for the server's admin token (only when the server has one)."""
    if not access.admin_token_configured():
        return
    if st.session_state.get("visitor_admin"):
        st.caption("You are the admin: you may change every run and upload.")
        return
    st.text_input("Admin token", type="password", key="admin_token", on_change=_try_admin_token,
                  help="Set by whoever runs the server; lets you manage every visitor's runs.")
    if notice := st.session_state.get("admin_notice"):
        st.error(notice)
