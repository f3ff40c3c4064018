"""A masking function that turns every chosen token into [MASK] (no 10% random, no 10% kept)."""

import torch


def mask_tokens(input_ids, vocab_size, mask_token_id, special_tokens_mask):
    chosen = (torch.rand(input_ids.shape) < 0.15) & ~special_tokens_mask
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, -100))
    return torch.where(chosen, torch.full_like(input_ids, mask_token_id), input_ids), labels
