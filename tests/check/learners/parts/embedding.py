"""The exercise's first part on its own: BertEmbedding(input_ids, token_type_ids) -> (B, T, H)."""

import torch
from torch import nn


class BertEmbedding(nn.Module):
    def __init__(self, vocab_size, hidden_size, max_len):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, hidden_size)
        self.position_embedding = nn.Embedding(max_len, hidden_size)
        self.segment_embedding = nn.Embedding(2, hidden_size)
        self.layer_norm = nn.LayerNorm(hidden_size, eps=1e-12)

    def forward(self, input_ids, token_type_ids):
        positions = torch.arange(input_ids.shape[1]).expand_as(input_ids)
        x = self.token_embedding(input_ids) + self.position_embedding(positions)
        return self.layer_norm(x + self.segment_embedding(token_type_ids))
