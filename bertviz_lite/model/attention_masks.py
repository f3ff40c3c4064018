"""The two masks BERT's attention takes: padding (added to the scores) and heads (multiplying the probabilities)."""

from __future__ import annotations

import torch
from torch import Tensor

from bertviz_lite.model.config import BertConfig


def extended_attention_mask(attention_mask: Tensor, dtype: torch.dtype) -> Tensor:
    """(B, T) of 1/0 -> additive (B, 1, 1, T): 0 where attended, the dtype's minimum where masked."""
    mask = attention_mask[:, None, None, :].to(dtype)
    return (1.0 - mask) * torch.finfo(dtype).min


def additive_mask(attention_mask: Tensor, dtype: torch.dtype, padded: bool | None = None) -> Tensor | None:
    """The additive mask, or None when every position is attended: the fused kernel is fastest without one.

    padded: whether any position is masked, when the caller knows it on the host (the trainer, from the batch before
    it moved); None: found here, which makes the host wait for a GPU.
    """
    if padded is None:
        padded = not bool(attention_mask.all())
    return extended_attention_mask(attention_mask, dtype) if padded else None


def check_head_mask(head_mask: Tensor | None, config: BertConfig) -> Tensor | None:
    """head_mask as a float tensor (layers, heads), or a ValueError that names the expected shape."""
    if head_mask is None:
        return None
    expected = (config.num_hidden_layers, config.num_attention_heads)
    if tuple(head_mask.shape) != expected:
        raise ValueError(
            f"head_mask must have shape (layers, heads) = {expected}, got {tuple(head_mask.shape)}"
        )
    return head_mask.float()
