"""The rows a pretraining step's losses read: which positions, in what multiples, and their mean loss.

A step's MLM loss reads the labelled positions and its NSP loss each pair's [CLS]; `BertForPreTraining.pretraining_loss`
computes the MLM head and the last layer on those rows alone.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

IGNORE_INDEX = -100  # label for positions the MLM loss skips (torch's cross_entropy default)


def flat_rows(x: Tensor, rows: Tensor) -> Tensor:
    """(B, T, ...) -> (R, ...): the positions whose flat index b * T + t is in rows (R,)."""
    return x.reshape(-1, *x.shape[2:])[rows]


# The MLM head's rows come in multiples of this. On the CPU in bf16 autocast, oneDNN keeps a packed bf16 copy of the
# vocabulary decoder (23 MB for 30,522 words) for every row count it has multiplied, up to 1,024 of them; with the
# masked count changing every step a run grew by ~45 MB a step until the kernel killed it at 24 GB
# (bench/RESULTS.md). Row counts rounded up keep a few shapes only.
ROW_BUCKET = 128


def row_bucket(hidden: Tensor) -> int:
    """The multiple the MLM head's rows are rounded up to for a step on `hidden`'s device (any tensor of the step's):
    ROW_BUCKET, except in float32 on the CPU, where no kernel keeps anything per row count, so the head takes the
    labelled rows alone (1): the small preset's step projected 384 rows for its ~300 labelled positions (issue 34)."""
    packs = hidden.device.type != "cpu" or torch.is_autocast_enabled("cpu")
    return ROW_BUCKET if packs else 1


def labelled_positions(labels: Tensor, capacity: int | None = None, bucket: int = ROW_BUCKET) -> Tensor:
    """The flat indices (b * T + t) of the labelled positions of `labels` (B, T), in order, then unlabelled ones up
    to `capacity` rows (default: the count rounded up to a multiple of `bucket`, at most B * T).

    Their labels are -100, so the loss over the rows is the loss over the labelled positions. Counting is a host sync
    for a tensor on a GPU: the trainer calls this on the batch before it moves.
    """
    chosen = labels.reshape(-1) != IGNORE_INDEX
    count = int(chosen.sum())
    if capacity is None:
        capacity = min(-(-count // bucket) * bucket, chosen.numel())
    if not count <= capacity <= chosen.numel():
        raise ValueError(
            f"capacity ({capacity}) must hold the {count} labelled positions and at most all {chosen.numel()}"
        )
    return torch.argsort(~chosen, stable=True)[:capacity]  # False (labelled) sorts first


def labelled_mean_loss(logits: Tensor, labels: Tensor) -> Tensor:
    """Cross-entropy averaged over the rows whose label is not -100; 0 (still backpropagating) when none is.

    Divided on the device, so that nothing waits for it (`F.cross_entropy`'s mean gives the same number)."""
    total = F.cross_entropy(logits.float(), labels, ignore_index=IGNORE_INDEX, reduction="sum")
    return total / (labels != IGNORE_INDEX).sum().clamp(min=1)
