"""The Build pages' gate: a visitor's code runs only for one person on their own machine, or where the operator says."""

from __future__ import annotations

import pytest

from bertviz_lite.server.balancer import WORKER_SETTING, worker_command
from bertviz_lite.server.code_gate import ALLOW_CODE_SETTING, code_allowed, is_loopback


@pytest.mark.parametrize("address", ["127.0.0.1", "localhost", "LOCALHOST", "::1", "[::1]", "127.0.0.2"])
def test_loopback_alone_allows_it(address):
    allowed, why = code_allowed(address, {})
    assert allowed and "this machine alone" in why


@pytest.mark.parametrize("address", [None, "", "0.0.0.0", "::", "192.168.1.20", "example.org"])
def test_every_other_address_refuses_in_one_sentence(address):
    allowed, why = code_allowed(address, {})
    assert not allowed and why.startswith("Running your code is off:") and why.count(". ") == 0
    assert "--server.address 127.0.0.1" in why and f"{ALLOW_CODE_SETTING}=1" in why
    assert ("every network interface" in why) == (not address)


def test_a_serve_worker_refuses_although_it_listens_on_loopback():
    assert "127.0.0.1" in worker_command(8600)  # serve's workers listen on loopback behind haproxy ...
    allowed, why = code_allowed("127.0.0.1", {WORKER_SETTING: "0"})
    assert not allowed and "many visitors" in why  # ... and still serve many people


def test_the_setting_allows_it_anywhere_and_only_as_1():
    assert code_allowed(None, {ALLOW_CODE_SETTING: "1"})[0]
    assert code_allowed("0.0.0.0", {ALLOW_CODE_SETTING: "1", WORKER_SETTING: "2"})[0]
    allowed, why = code_allowed("127.0.0.1", {ALLOW_CODE_SETTING: "yes"})
    assert not allowed and "only 1 allows it" in why


def test_is_loopback():
    assert is_loopback("127.0.0.1") and not is_loopback("10.0.0.1") and not is_loopback("not an address")
