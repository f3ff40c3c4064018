"""A small sentence pair and random attention, shared by the analysis and figure tests."""

import numpy as np

TOKENS = ["[CLS]", "the", "dog", "##gy", "[SEP]", "it", "ran", "[SEP]"]
SEGMENTS = [0, 0, 0, 0, 0, 1, 1, 1]
SPECIAL = [1, 0, 0, 0, 1, 0, 0, 1]


def random_attention(*shape: int, seed: int = 0) -> np.ndarray:
    """Random row-normalised attention of the given shape (last two axes T, T)."""
    logits = np.random.default_rng(seed).normal(size=shape) * 2
    weights = np.exp(logits)
    return weights / weights.sum(axis=-1, keepdims=True)
