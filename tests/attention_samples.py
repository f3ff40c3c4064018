"""A small sentence pair, random attention, a mosaic reader and a snapshot reader, shared by the tests."""

import os

import numpy as np
import plotly.graph_objects as go

from bertviz_lite.loading.checkpoints import load_snapshot
from bertviz_lite.loading.run_folder import RunFolder

TOKENS = ["[CLS]", "the", "dog", "##gy", "[SEP]", "it", "ran", "[SEP]"]
SEGMENTS = [0, 0, 0, 0, 0, 1, 1, 1]
SPECIAL = [1, 0, 0, 0, 1, 0, 0, 1]


def random_attention(*shape: int, seed: int = 0) -> np.ndarray:
    """Random row-normalised attention of the given shape (last two axes T, T)."""
    logits = np.random.default_rng(seed).normal(size=shape) * 2
    weights = np.exp(logits)
    return weights / weights.sum(axis=-1, keepdims=True)


def mosaic_tile(fig_or_z, layer: int, head: int, size: int, gap: int = 1) -> np.ndarray:
    """Tile (layer, head) cut back out of a mosaic figure (or its heatmap z)."""
    z = np.asarray(fig_or_z.data[0].z if isinstance(fig_or_z, go.Figure) else fig_or_z)
    step = size + gap
    return z[layer * step : layer * step + size, head * step : head * step + size]


def load_snapshots(run_dir: str | os.PathLike) -> list[tuple[int, np.ndarray, list[str]]]:
    """Every readable snapshot of a run, sorted by step: [(step, attentions [L, H, T, T], tokens)]."""
    snapshots = []
    for _, path in RunFolder(run_dir).snapshot_files():
        try:
            snapshots.append(load_snapshot(path))
        except ValueError:
            continue  # a file that vanished or is not ours: the replay shows the others
    return sorted(snapshots, key=lambda snapshot: snapshot[0])
