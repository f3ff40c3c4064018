"""Shared by the training tests."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture
def one_thread():
    """torch on one thread during the test (as a training run with --threads 1), then as it was."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
