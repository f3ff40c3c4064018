"""Shared fixtures: real weights are loaded once per test session."""

import pytest


@pytest.fixture(scope="session")
def minilm():
    """(model, tokenizer) of the real all-MiniLM-L6-v2 weights, through bertviz_lite.load."""
    from bertviz_lite.loading.pretrained import load

    return load("all-MiniLM-L6-v2")
