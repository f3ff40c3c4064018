"""Shared fixtures: real weights are loaded once per test session."""

import pytest


@pytest.fixture(scope="session")
def minilm():
    """(model, tokenizer) of the real all-MiniLM-L6-v2 weights, through bertviz_lite.load."""
    from bertviz_lite.loading.pretrained import load

    return load("all-MiniLM-L6-v2")


@pytest.fixture(autouse=True)
def _no_admin_lockout_between_tests():
    """The admin token's rate limit counts per server process: each test starts with none counted."""
    from bertviz_lite.server import access

    access.forget_admin_failures()
    yield
