"""A masking function that chooses 15% of all positions, padding and special tokens included."""

import torch


def mask(ids, vocab_size, mask_id):
    labels = torch.full_like(ids, -100)
    chosen = torch.rand(ids.shape) < 0.15
    labels[chosen] = ids[chosen]
    out = ids.clone()
    roll = torch.rand(ids.shape)
    out[chosen & (roll < 0.8)] = mask_id
    random_ids = torch.randint(5, vocab_size, ids.shape)
    swap = chosen & (roll >= 0.8) & (roll < 0.9)
    out[swap] = random_ids[swap]
    return out, labels
