"""A view's own control reruns that view only (st.fragment): the server sends its figure again, not the sidebar.

Read from the websocket frames the browser receives (Streamlit's ForwardMsg protobufs): a full run redraws the
sidebar's sentence boxes; changing the Attention page's head statistic must not.
"""

from __future__ import annotations

import base64

import pytest
import streamlit  # noqa: F401 - imported before its protos, which otherwise hit a circular import
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from bertviz_lite.figures.attention import STAT_TITLES
from tests.browser.driver import EXCEPTION, choose_option, open_page, wait_for_figure

pytestmark = pytest.mark.browser


def drawn(frames: list[bytes]) -> list[str]:
    """The element ids (user keys at their end) of every element the server sent in these frames."""
    ids = []
    for frame in frames:
        msg = ForwardMsg()
        msg.ParseFromString(frame)
        if msg.WhichOneof("type") == "delta" and msg.delta.WhichOneof("type") == "new_element":
            element = msg.delta.new_element
            kind = element.WhichOneof("type")
            ids.append(getattr(getattr(element, kind), "id", "") if kind else "")
    return ids


def test_the_head_statistic_redraws_its_figure_and_not_the_page(streamlit_url, page):
    # The frames are read through a DevTools session of this test's own (detached at its end, nothing outlives it):
    # the kept tab serves, no new browser context (2-2.8 CPU-s of chromium).
    frames: list[bytes] = []
    devtools = page.context.new_cdp_session(page)
    devtools.on(
        "Network.webSocketFrameReceived",
        lambda event: (
            frames.append(base64.b64decode(event["response"]["payloadData"]))
            if event["response"]["opcode"] == 2  # binary: a ForwardMsg
            else None
        ),
    )
    devtools.send("Network.enable")
    try:
        open_page(page, streamlit_url, "Attention?tab=Head+statistics")
        wait_for_figure(page, "head_statistics")
        first_run = drawn(frames)
        assert any(i.endswith("-sentence_a") for i in first_run)  # a full run draws the sidebar
        assert any(i.endswith("-head_statistics") for i in first_run)

        frames.clear()
        choose_option(page, "stat_value", list(STAT_TITLES.values())[1])
        wait_for_figure(page, "head_statistics")
        fragment_run = drawn(frames)
    finally:
        devtools.detach()
    assert any(i.endswith("-head_statistics") for i in fragment_run), fragment_run
    assert not any(i.endswith(("-sentence_a", "-attn_layer", "-model_picker")) for i in fragment_run), (
        fragment_run
    )
    assert page.locator(EXCEPTION).count() == 0
