"""Shared fixtures: real weights are loaded once per test session; the shared database is a temporary file."""

import atexit
import os
import shutil
import tempfile

import pytest

# The state every app process shares (server/database.py) goes to a folder of this test session, never to the
# repository's data/; servers the tests start inherit it.
os.environ["BERTVIZ_LITE_DATA_DIR"] = tempfile.mkdtemp(prefix="bertviz-lite-test-data-")
atexit.register(shutil.rmtree, os.environ["BERTVIZ_LITE_DATA_DIR"], ignore_errors=True)


@pytest.fixture(scope="session")
def minilm():
    """(model, tokenizer) of the real all-MiniLM-L6-v2 weights, through bertviz_lite.load."""
    from bertviz_lite.loading.pretrained import load

    return load("all-MiniLM-L6-v2")


@pytest.fixture(autouse=True)
def _no_admin_lockout_between_tests():
    """The admin token's rate limit counts in the shared database: each test starts with none counted."""
    from bertviz_lite.server import access

    access.forget_admin_failures()
    yield
