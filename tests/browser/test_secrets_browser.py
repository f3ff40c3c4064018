"""Issue 30: the lecturer's key lives in an HttpOnly cookie that page scripts cannot read, survives a reload and goes
with End class; the cookie route answers HttpOnly, SameSite=Strict, and Secure when the page came over HTTPS."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest
from playwright.sync_api import expect

from bertviz_lite.server import cookie_handoff
from devtools.waiting import wait_until
from tests.browser.driver import EXCEPTION, NEEDS_DEFAULT_MODEL, open_page, wait_for_idle

pytestmark = [pytest.mark.browser]


def _cookie(page, name: str) -> dict | None:
    return next((c for c in page.context.cookies() if c["name"] == name), None)


def _set_cookie_header(url: str, nonce: str, headers: dict[str, str]) -> str:
    request = urllib.request.Request(f"{url}{cookie_handoff.ROUTE_PATH}?n={nonce}", headers=headers)
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 204
        return response.headers["set-cookie"]


def test_the_cookie_route_sets_a_parked_cookie_once_http_only_and_secure_over_https(page, streamlit_url):
    open_page(page, streamlit_url)  # app.py's first run adds the route (a kept tab: no new context)
    cookie = cookie_handoff.ParkedCookie(cookie_handoff.LEAD_COOKIE, "KKKKKK.secret", 60)
    plain = _set_cookie_header(
        streamlit_url, cookie_handoff.park(cookie), {}
    )  # the server shares the file (conftest)
    assert (
        plain.startswith("bvl_class_lead=KKKKKK.secret;")
        and "HttpOnly" in plain
        and "SameSite=strict" in plain
    )
    assert "Secure" not in plain and "Max-Age=60" in plain
    nonce = cookie_handoff.park(cookie)
    # From 127.0.0.1 (as `serve`'s haproxy is), X-Forwarded-Proto says the browser's page came over HTTPS.
    assert "Secure" in _set_cookie_header(streamlit_url, nonce, {"X-Forwarded-Proto": "https"})
    with pytest.raises(urllib.error.HTTPError) as used:  # a nonce works once
        _set_cookie_header(streamlit_url, nonce, {})
    assert used.value.code == 404


@NEEDS_DEFAULT_MODEL
def test_the_lead_cookie_is_http_only_survives_a_reload_and_goes_with_end_class(visitor, streamlit_url):
    lecturer = visitor(viewport={"width": 1280, "height": 720})
    open_page(lecturer, streamlit_url, "class")
    lecturer.get_by_role("button", name="Start a class").click()
    code = lecturer.locator(".bvl-join-code").inner_text(timeout=60_000).strip()
    cookie = wait_until(lambda: _cookie(lecturer, cookie_handoff.LEAD_COOKIE), 30, "the lecturer's cookie")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and not cookie["secure"]
    assert cookie["value"].startswith(f"{code}.")
    readable = lecturer.evaluate("() => document.cookie")
    assert cookie_handoff.LEAD_COOKIE not in readable and cookie["value"] not in readable
    assert "bvl_visitor=" in readable  # the page's scripts do read cookies: just not this one
    lecturer.reload()  # a new session: the HttpOnly cookie brings the class back
    expect(lecturer.locator(".bvl-join-code")).to_have_text(code, timeout=60_000)
    wait_for_idle(lecturer)
    lecturer.get_by_role("button", name="End class").click()
    lecturer.get_by_role("button", name="End the class now").click()
    lecturer.get_by_text("This class has ended").wait_for(timeout=30_000)
    wait_until(
        lambda: _cookie(lecturer, cookie_handoff.LEAD_COOKIE) is None, 30, "the lecturer's cookie to go"
    )
    assert lecturer.locator(EXCEPTION).count() == 0
