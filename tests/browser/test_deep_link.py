"""A fresh server's first visitor opens a deep link typed by hand (/attention): the page, not Streamlit's "Page not
found" (Streamlit matches a page's name exactly; the app follows it in any case: _pages.follow_any_case).

With a pages/ folder beside app.py, Streamlit 1.67 ran a process's first script run through its legacy
pages-folder router, which knew only app.py and sent `page_not_found` (streamlit#9624); the pages live in
pages_app/ for that reason. This test needs a server of its own that has run nothing yet: the shared one has
already run app.py. It takes the worker's second server before any test opens a page on it (fresh_streamlit_url),
which the live class test then uses as its second server.
"""

from __future__ import annotations

import pytest

from tests.browser.driver import EXCEPTION, NEEDS_DEFAULT_MODEL, open_page, wait_for_figure

pytestmark = [pytest.mark.browser, NEEDS_DEFAULT_MODEL]

DIALOG = '[role="dialog"]'


def test_a_deep_link_is_the_first_page_a_fresh_server_shows(fresh_streamlit_url, page):
    open_page(page, fresh_streamlit_url, "attention?layer=1")
    wait_for_figure(page, "attention_heatmap")
    assert page.locator(DIALOG).count() == 0, page.locator(DIALOG).all_inner_texts()
    assert page.get_by_text("Page not found").count() == 0
    assert page.locator(EXCEPTION).count() == 0
    assert page.get_by_role("heading", name="Attention").count() == 1
    assert page.url.split("?")[0].endswith("/Attention")  # the page's own spelling
    assert (
        "layer=1" in page.url
    )  # the link's own state was read, not dropped by a detour through the main page
