"""Dropout for training on a CPU: the same coin per element as `nn.Dropout`, drawn for a third of the cost.

On a CPU torch draws a dropout mask with one Mersenne-Twister number per element (`bernoulli_`, 6-8 ms per million
elements on one thread here); the small preset's step draws 8.5 million of them, about 14% of its time (issue 34,
bench/RESULTS.md). `keep_mask` takes two 15-bit coins from each 32-bit draw (about 2 ms per million), so the
probability is a multiple of 1/32,768: 0.1 becomes 3,277/32,768 = 0.100006, and the kept elements are scaled by
1/(1 - that), so that every element's expected value is unchanged. Elsewhere (a GPU, a compiled graph, evaluation)
these are torch's own dropout: its kernels there draw masks on the device or inside the graph.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

# Each 32-bit draw of `random_()` on int32 is uniform on [0, 2**31): two 15-bit halves and a spare bit.
COIN_BITS = 15
COIN_SIDES = 1 << COIN_BITS


def drawn_here(x: Tensor) -> bool:
    """Whether `dropped` draws x's mask itself: on a CPU, outside torch.compile (whose graph draws its own)."""
    return x.device.type == "cpu" and not torch.compiler.is_compiling()


def drop_threshold(p: float) -> int:
    """p as a count of 1/COIN_SIDES: an element is dropped when its coin is below this."""
    return round(p * COIN_SIDES)


def keep_mask(
    shape: torch.Size, p: float, device: torch.device | str = "cpu", dtype: torch.dtype = torch.bool
) -> Tensor:
    """A mask of `shape`, each element False (dropped) with probability drop_threshold(p) / COIN_SIDES; in `dtype`,
    1 for kept and 0 for dropped.

    Compared straight into a float dtype, the mask costs a ninth of a bool mask cast to it (0.11 against 0.95 ms for
    half a million elements in bf16 on one thread: torch's cast from bool is not vectorised), and a product with it
    casts nothing, forward or back."""
    count = shape.numel()
    draws = torch.empty((count + 1) // 2, dtype=torch.int32, device=device).random_()  # uniform on [0, 2**31)
    coins = draws.view(torch.int16)[:count].bitwise_and_(COIN_SIDES - 1)  # both halves uniform on [0, 2**15)
    keep = torch.empty(count, dtype=dtype, device=device)
    return torch.ge(coins, drop_threshold(p), out=keep).view(shape)


def dropped(x: Tensor, p: float) -> Tensor:
    """x with each element zeroed with probability p (as a multiple of 1/COIN_SIDES) and the rest scaled up to keep
    its expected value: `F.dropout(x, p)` in training, with its mask from keep_mask."""
    threshold = drop_threshold(p)
    if threshold == 0:
        return x
    if threshold >= COIN_SIDES:
        return x * 0.0
    keep = keep_mask(x.shape, p, x.device, x.dtype)
    return x.mul(keep).mul_(COIN_SIDES / (COIN_SIDES - threshold))


class BertDropout(nn.Dropout):
    """`nn.Dropout` (its name and p as in transformers' BERT), whose mask on a CPU comes from keep_mask."""

    def draws_mask(self, x: Tensor) -> bool:
        """Whether this layer drops elements of x with keep_mask's coins (training, p > 0, on a CPU, not compiled)."""
        return self.training and self.p > 0 and not self.inplace and drawn_here(x)

    def forward(self, x: Tensor) -> Tensor:
        if self.draws_mask(x):
            return dropped(x, self.p)
        return F.dropout(x, self.p, self.training, self.inplace)
