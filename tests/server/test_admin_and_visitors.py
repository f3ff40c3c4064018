"""Issue 22: the admin token is rate-limited per visitor and globally, with failures logged; tabs of one browser
opened at the same moment end up one visitor. The rate limits are checked on both shared stores (`store_setting`)."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess

import pytest

from bertviz_lite.server import access
from pages_app.common import _visitor

TOKEN = "teacher-secret-1"
IDS = [f"visitor-{i:03d}-0123456789abcdef" for i in range(300)]


@pytest.fixture(autouse=True)
def admin_token(monkeypatch):
    monkeypatch.setenv(access.ADMIN_TOKEN_SETTING, TOKEN)
    access.forget_admin_failures()
    yield
    access.forget_admin_failures()


def test_forty_wrong_guesses_are_stopped_after_five_and_logged(caplog, store_setting):
    caplog.set_level(logging.WARNING, logger=access.__name__)
    answers = []
    refused = 0
    for guess in range(40):
        try:
            answers.append(access.check_admin_token(IDS[0], f"guess-{guess}", now=1000.0 + guess))
        except access.AdminLockout as err:
            refused += 1
            assert "Too many wrong admin tokens: try again in" in str(err)
    assert (
        answers == [False] * access.ADMIN_TRIES_PER_VISITOR and refused == 40 - access.ADMIN_TRIES_PER_VISITOR
    )
    assert sum("wrong admin token from visitor" in r.message for r in caplog.records) == 5
    assert sum("locked out" in r.message for r in caplog.records) == 35
    with pytest.raises(access.AdminLockout):  # locked out: even the right token is not compared
        access.check_admin_token(IDS[0], TOKEN, now=1100.0)
    assert access.check_admin_token(IDS[0], TOKEN, now=1000.0 + 40 + access.ADMIN_WINDOW_S)


def test_many_visitors_guessing_from_many_addresses_meet_the_global_limit(store_setting):
    per_address = access.ADMIN_TRIES_PER_ADDRESS
    for i in range(access.ADMIN_TRIES_IN_TOTAL):
        assert (
            access.check_admin_token(IDS[i], "wrong", now=50.0, address=f"10.0.{i // per_address}.1") is False
        )
    with pytest.raises(access.AdminLockout):
        access.check_admin_token(IDS[access.ADMIN_TRIES_IN_TOTAL], TOKEN, now=51.0, address="192.168.1.20")


def test_four_fresh_ids_with_five_wrong_tokens_each_do_not_lock_out_the_lecturer(store_setting):
    """Issue 30's reproduction: 4 fresh ids x 5 wrong tokens, then the lecturer's right token was 'try again in 10 min'."""
    refused = 0
    for i in range(4):
        for guess in range(5):
            try:
                access.check_admin_token(IDS[100 + i], f"guess-{guess}", now=70.0 + guess, address="10.9.9.9")
            except access.AdminLockout:
                refused += 1
    assert refused == 4 * 5 - access.ADMIN_TRIES_PER_ADDRESS  # the guesser's address is locked out …
    with pytest.raises(access.AdminLockout):  # … a fifth fresh id from it too …
        access.check_admin_token(IDS[104], TOKEN, now=80.0, address="10.9.9.9")
    assert access.check_admin_token(IDS[0], TOKEN, now=80.0, address="10.1.2.3")  # … but not the lecturer


def test_the_admin_cookie_is_signed_expires_and_dies_with_the_token(monkeypatch):
    cookie = access.admin_cookie(now=1000.0)
    assert access.is_admin_cookie(cookie, now=1001.0)
    assert not access.is_admin_cookie(cookie, now=1000.0 + access.ADMIN_COOKIE_HOURS * 3600 + 1)
    expiry, _, signature = cookie.partition(".")
    assert not access.is_admin_cookie(
        f"{int(expiry) + 3600}.{signature}", now=1001.0
    )  # a later expiry: forged
    assert not access.is_admin_cookie(f"{expiry}.{'0' * len(signature)}", now=1001.0)
    assert not access.is_admin_cookie(None) and not access.is_admin_cookie("garbage")
    monkeypatch.setenv(access.ADMIN_TOKEN_SETTING, "a-new-token")
    assert not access.is_admin_cookie(cookie, now=1001.0)  # a new token voids every admin cookie


def test_a_tabs_alias_owns_what_that_tab_made(tmp_path):
    first = IDS[1]
    second = IDS[2]
    access.record_owner(tmp_path, access.Visitor(second))  # the second tab uploaded before any reload
    aliases = access.aliases_from_cookie(f"{second}.not valid!.{first}", own_id=first)
    assert aliases == (second,)
    assert access.is_owner(tmp_path, access.Visitor(first, aliases=aliases))
    assert not access.is_owner(tmp_path, access.Visitor(first))
    assert len(access.aliases_from_cookie(".".join(IDS))) == access.MAX_ALIASES


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the cookie script")
def test_two_tabs_opened_at_once_converge_on_the_first_id():
    """Run the cookie script of two tabs (each with its own new id) against one document.cookie jar."""
    tabs = "\n".join(
        "{" + _visitor.cookie_script(visitor_id).removeprefix("<script>").removesuffix("</script>") + "}"
        for visitor_id in (IDS[3], IDS[4])
    )
    jar = """const jar = {}; const window = {parent: {document: {}}};
Object.defineProperty(window.parent.document, "cookie", {
  get: () => Object.entries(jar).map(([k, v]) => k + "=" + v).join("; "),
  set: (text) => { const [pair] = text.split(";"); const at = pair.indexOf("="); jar[pair.slice(0, at)] = pair.slice(at + 1); },
});"""
    code = f"{jar}\n{tabs}\nconsole.log(JSON.stringify(jar));"
    jar_after = json.loads(
        subprocess.run(["node", "-e", code], capture_output=True, text=True, check=True).stdout
    )
    assert jar_after == {_visitor.COOKIE: IDS[3], _visitor.ALIAS_COOKIE: IDS[4]}
