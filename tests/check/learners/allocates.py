"""A learner's Bert whose forward asks for 10 GB."""

import torch
from torch import nn


class Bert(nn.Module):
    def __init__(self, vocab_size, hidden_size):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden_size)

    def forward(self, input_ids, token_type_ids):
        big = torch.ones(10 * 1024**3 // 4)
        return self.embed(input_ids) + big.sum()
