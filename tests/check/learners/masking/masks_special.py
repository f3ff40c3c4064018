"""A masking function that forgets the special tokens: [CLS] and [SEP] (and padding) may be chosen."""

import torch


def mask_tokens(input_ids, vocab_size, mask_token_id, special_tokens_mask):
    labels = input_ids.clone()
    chosen = torch.bernoulli(torch.full(input_ids.shape, 0.15)).bool()
    labels[~chosen] = -100
    masked = input_ids.clone()
    to_mask = torch.bernoulli(torch.full(input_ids.shape, 0.8)).bool() & chosen
    masked[to_mask] = mask_token_id
    to_random = torch.bernoulli(torch.full(input_ids.shape, 0.5)).bool() & chosen & ~to_mask
    masked[to_random] = torch.randint(vocab_size, input_ids.shape)[to_random]
    return masked, labels
