"""The Train section's file uploaders: each tells the server's upload gate what it takes before it is drawn."""

from __future__ import annotations

import math

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from bertviz_lite import limits
from bertviz_lite.server import upload_gate


def bounded_file_uploader(label: str, *, limit_bytes: int, **kwargs):
    """st.file_uploader for files up to `limit_bytes`: the browser refuses larger files, and the server (the gate in
    front of Streamlit's upload route) refuses them before it holds a byte of them."""
    run = get_script_run_ctx()
    if run is not None:  # None in a bare script; AppTest has one (and no upload route)
        upload_gate.GATE.allow(run.session_id, limit_bytes)
    return st.file_uploader(label, max_upload_size=math.ceil(limit_bytes / limits.MB), **kwargs)


def let_go(uploaded) -> None:
    """The page has used this upload: Streamlit stops holding it (else it stays in memory until the session ends,
    and counts against what the session may upload next)."""
    from streamlit.runtime import Runtime

    run = get_script_run_ctx()
    if run is not None and Runtime.exists():
        Runtime.instance().uploaded_file_mgr.remove_file(run.session_id, uploaded.file_id)
