"""The admin token's small form, on the Train and Checkpoints pages: the lecturer may manage every run.

The right token gives this browser a signed admin cookie (access.admin_cookie), HttpOnly through the cookie
route (server/cookie_handoff.py), so that a reload is still the admin; _visitor.current_visitor reads it.
"""

from __future__ import annotations

import streamlit as st

from bertviz_lite.limits import MAX_TOKEN_CHARS
from bertviz_lite.server import access, cookie_handoff
from pages_app.common._visitor import current_visitor


def _try_admin_token() -> None:
    """Checked once per typed token (not on every rerun): each wrong one counts against the rate limit."""
    token = st.session_state.get("admin_token") or ""
    st.session_state["admin_token"] = ""  # the secret does not stay in the page
    if not token:
        return
    try:
        right = access.check_admin_token(
            current_visitor().id, token, address=access.client_address(st.context.ip_address)
        )
    except access.AdminLockout as err:
        st.session_state["admin_notice"] = str(err)
        return
    st.session_state["visitor_admin"] = right
    st.session_state["admin_notice"] = None if right else "That is not the admin token."
    if right:
        _keep_admin_cookie()


def _keep_admin_cookie() -> None:
    """After the right token: the signed cookie, set HttpOnly by the cookie route's answer. Drawn by the callback
    itself, as the page that asked may not draw this form again (an admin sees Rename and Delete instead)."""
    cookie = cookie_handoff.ParkedCookie(
        access.ADMIN_COOKIE, access.admin_cookie(), int(access.ADMIN_COOKIE_HOURS * 3600)
    )
    st.html(cookie_handoff.fetch_script(cookie_handoff.park(cookie)), unsafe_allow_javascript=True)


def admin_login() -> None:
    """A small form for the server's admin token (only when the server has one)."""
    if not access.admin_token_configured():
        return
    if current_visitor().admin:
        st.caption("You are the admin: you may change every run and upload.")
        return
    st.text_input(
        "Admin token",
        type="password",
        key="admin_token",
        max_chars=MAX_TOKEN_CHARS,
        on_change=_try_admin_token,
        help="Set by whoever runs the server; lets you manage every visitor's runs.",
    )
    if notice := st.session_state.get("admin_notice"):
        st.error(notice)
