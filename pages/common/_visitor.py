"""Who is this browser visitor? A random id kept in a cookie, so runs and uploads have an owner without a login."""

from __future__ import annotations

import streamlit as st
import streamlit.components.v1 as components

from bertviz_lite.server import access

COOKIE = "bvl_visitor"
COOKIE_MAX_AGE_S = 180 * 24 * 3600


def current_visitor() -> access.Visitor:
    """This session's visitor: the id from the browser's cookie, else a new one (kept for the session)."""
    if "visitor_id" not in st.session_state:
        cookie = st.context.cookies.get(COOKIE)
        st.session_state["visitor_id"] = cookie if access.is_visitor_id(cookie) else access.new_visitor_id()
    return access.Visitor(st.session_state["visitor_id"], admin=st.session_state.get("visitor_admin", False))


def remember_visitor() -> None:
    """Once per session, store the id in a cookie so that a reload or a new tab is the same visitor."""
    visitor = current_visitor()
    if st.session_state.get("visitor_cookie_set") or st.context.cookies.get(COOKIE) == visitor.id:
        return
    st.session_state["visitor_cookie_set"] = True
    cookie = f"{COOKIE}={visitor.id}; path=/; max-age={COOKIE_MAX_AGE_S}; SameSite=Strict"
    components.html(f"<script>window.parent.document.cookie = {cookie!r};</script>", height=0)


def admin_login() -> None:
    """A small form for the server's admin token (only when the server has one)."""
    if not access.admin_token_configured():
        return
    if st.session_state.get("visitor_admin"):
        st.caption("You are the admin: you may change every run and upload.")
        return
    token = st.text_input("Admin token", type="password", key="admin_token",
                          help="Set by whoever runs the server; lets you manage every visitor's runs.")  # fmt: skip
    if token:
        if access.is_admin_token(token):
            st.session_state["visitor_admin"] = True
            st.rerun()
        st.error("That is not the admin token.")
