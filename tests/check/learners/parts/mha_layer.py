"""A layer on nn.MultiheadAttention whose forward takes a key_padding_mask (True on padding): the checker tries that
mask form after (B, 1, 1, T) and (B, T) ones fail."""

import torch.nn.functional as F
from torch import nn


class BertLayer(nn.Module):
    def __init__(self, hidden_size, num_heads, intermediate_size):
        super().__init__()
        self.attn = nn.MultiheadAttention(hidden_size, num_heads, batch_first=True)
        self.norm1 = nn.LayerNorm(hidden_size, eps=1e-12)
        self.fc1 = nn.Linear(hidden_size, intermediate_size)
        self.fc2 = nn.Linear(intermediate_size, hidden_size)
        self.norm2 = nn.LayerNorm(hidden_size, eps=1e-12)

    def forward(self, x, padding_mask):
        a, _ = self.attn(x, x, x, key_padding_mask=padding_mask)
        x = self.norm1(x + a)
        return self.norm2(x + self.fc2(F.gelu(self.fc1(x))))
