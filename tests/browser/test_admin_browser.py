"""Issue 30: the admin's login survives a reload (a signed admin cookie), and page scripts cannot read that cookie."""

from __future__ import annotations

import os
import shutil

import pytest
from playwright.sync_api import expect

from bertviz_lite.loading.run_folder import CHECKPOINTS_DIR
from bertviz_lite.server import access
from devtools.server import running_streamlit
from devtools.waiting import wait_until
from tests.app.tiny_checkpoint import save_tiny
from tests.browser.driver import EXCEPTION, choose_option, open_page, wait_for_idle

pytestmark = pytest.mark.browser
TOKEN = "lecture-hall-admin-token"
FIRST_RUN_DREW = (
    '[data-testid="stMain"] [data-testid="stHeading"], [data-testid="stMain"] [data-testid="stAlert"]'
)


@pytest.fixture
def admin_server(browser, monkeypatch):
    """A server of its own, with an admin token set."""
    monkeypatch.setenv(access.ADMIN_TOKEN_SETTING, TOKEN)
    with running_streamlit("streamlit_admin.log") as url:
        yield url


@pytest.fixture
def others_checkpoint():
    """A checkpoint another browser made (the admin may rename it; this browser alone may not)."""
    folder = CHECKPOINTS_DIR / f"browser-admin-{os.getpid()}"
    save_tiny(folder)
    access.record_owner(folder, access.Visitor(access.new_visitor_id()))
    yield folder.name
    shutil.rmtree(folder, ignore_errors=True)


def _manage(page, url: str, name: str) -> None:
    open_page(page, url, "checkpoints")
    _choose(page, name)


def _choose(page, name: str) -> None:
    choose_option(page, "ckpt_selected", name)
    wait_for_idle(page)


def test_the_admin_cookie_is_http_only_and_a_reload_is_still_the_admin(page, admin_server, others_checkpoint):
    _manage(page, admin_server, others_checkpoint)
    expect(page.get_by_role("button", name="Rename")).to_have_count(0)
    page.locator(".st-key-admin_token input").fill(TOKEN)
    page.locator(".st-key-admin_token input").press("Enter")
    expect(page.get_by_role("button", name="Rename")).to_be_visible(timeout=30_000)
    cookie = wait_until(
        lambda: next((c for c in page.context.cookies() if c["name"] == access.ADMIN_COOKIE), None),
        30,
        "the admin cookie",
    )
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and access.is_admin_cookie(cookie["value"])
    assert access.ADMIN_COOKIE not in page.evaluate("() => document.cookie")
    page.reload()  # a new session: the cookie, not the form, says who the admin is
    # The reload is the page load: no second one (open_page's goto) after it, only its wait for the first run.
    page.locator(FIRST_RUN_DREW).first.wait_for(timeout=60_000)
    wait_for_idle(page)
    _choose(page, others_checkpoint)
    expect(page.get_by_role("button", name="Rename")).to_be_visible(timeout=30_000)
    expect(page.locator(".st-key-admin_token")).to_have_count(0)
    assert page.locator(EXCEPTION).count() == 0
