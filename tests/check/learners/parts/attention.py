"""The exercise's attention on its own: BertAttention(x, mask) -> (output, probabilities), before the residual."""

import math

from torch import nn


class BertAttention(nn.Module):
    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.W_Q = nn.Linear(hidden_size, hidden_size)
        self.W_K = nn.Linear(hidden_size, hidden_size)
        self.W_V = nn.Linear(hidden_size, hidden_size)
        self.W_O = nn.Linear(hidden_size, hidden_size)

    def forward(self, x, mask):
        b, t, h = x.shape
        d = h // self.num_heads
        q, k, v = (w(x).view(b, t, self.num_heads, d).transpose(1, 2) for w in (self.W_Q, self.W_K, self.W_V))
        scores = q @ k.transpose(-1, -2) / math.sqrt(d)
        probs = scores.masked_fill(mask == 0, -1e4).softmax(-1)
        return self.W_O((probs @ v).transpose(1, 2).reshape(b, t, h)), probs
