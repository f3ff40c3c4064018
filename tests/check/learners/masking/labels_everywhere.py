"""A masking function that chooses well but labels every position with its token."""

import torch


def mask_tokens(input_ids, vocab_size, mask_token_id, special_tokens_mask):
    chosen = (torch.rand(input_ids.shape) < 0.15) & ~special_tokens_mask
    roll = torch.rand(input_ids.shape)
    masked = input_ids.clone()
    masked[chosen & (roll < 0.8)] = mask_token_id
    swap = chosen & (roll >= 0.8) & (roll < 0.9)
    masked[swap] = torch.randint(5, vocab_size, input_ids.shape)[swap]
    return masked, input_ids.clone()
