"""Who is this browser visitor? A random id kept in a cookie, so runs and uploads have an owner without a login."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from bertviz_lite.server import access

COOKIE = "bvl_visitor"
ALIAS_COOKIE = "bvl_visitor_also"  # ids of tabs that opened before the first one's cookie was written
COOKIE_MAX_AGE_S = 180 * 24 * 3600
# Tabs opened at once each get an id before any has a cookie: the first keeps its id in COOKIE, a later one adds its
# own to ALIAS_COOKIE, so the browser is one visitor owning what every tab made (access.Visitor.aliases).
_COOKIE_SCRIPT = (Path(__file__).resolve().parent / "assets" / "visitor_cookie.js").read_text(
    encoding="utf-8"
)


def current_visitor() -> access.Visitor:
    """This session's visitor: the id from the browser's cookie, else a new one; admin by the form or the cookie."""
    if "visitor_id" not in st.session_state:
        cookie = st.context.cookies.get(COOKIE)
        st.session_state["visitor_id"] = cookie if access.is_visitor_id(cookie) else access.new_visitor_id()
    visitor_id = st.session_state["visitor_id"]
    aliases = access.aliases_from_cookie(st.context.cookies.get(ALIAS_COOKIE), visitor_id)
    admin = st.session_state.get("visitor_admin", False) or access.is_admin_cookie(
        st.context.cookies.get(access.ADMIN_COOKIE)
    )
    return access.Visitor(visitor_id, admin=admin, aliases=aliases)


def cookie_script(visitor_id: str) -> str:
    """The script that keeps the first tab's id in the cookie and a later tab's id as an alias of it."""
    return _COOKIE_SCRIPT % {
        "id": visitor_id,
        "age": COOKIE_MAX_AGE_S,
        "cookie": COOKIE,
        "alias": ALIAS_COOKIE,
        "keep": access.MAX_ALIASES - 1,
    }


def remember_visitor() -> None:
    """Once per session, store the id in a cookie so that a reload or a new tab is the same visitor."""
    visitor = current_visitor()
    if st.session_state.get("visitor_cookie_set") or st.context.cookies.get(COOKIE) == visitor.id:
        return
    st.session_state["visitor_cookie_set"] = True
    st.html(f"<script>{cookie_script(visitor.id)}</script>", unsafe_allow_javascript=True)
