"""Shared by the training tests."""

from __future__ import annotations

import os

import pytest
import torch

from devtools.preloaded import Preloaded


@pytest.fixture
def one_thread():
    """torch on one thread during the test (as a training run with --threads 1), then as it was."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def preloaded_python():
    """An interpreter that has imported torch, from which a test forks `python -m bertviz_lite.train …` (its
    `run_command`, `start`): the run's own code is imported anew in the fork, and the 1.5 s of CPU a fresh interpreter
    spends importing torch is paid once (devtools/preloaded.py). The tests whose claim is about a fresh process (a
    user's first run, two runs sharing nothing but the command) start one as before."""
    interpreter = Preloaded(
        env={**os.environ, "OMP_NUM_THREADS": "1"}, modules=("torch", "safetensors.torch")
    )
    yield interpreter
    interpreter.close()
