"""The exercise's layer, built from the part files beside it: BertLayer(x, mask) -> (B, T, H)."""

from attention import BertAttention
from mlp import BertMLP
from torch import nn


class BertLayer(nn.Module):
    def __init__(self, hidden_size, num_heads, intermediate_size):
        super().__init__()
        self.attention = BertAttention(hidden_size, num_heads)
        self.layernorm1 = nn.LayerNorm(hidden_size, eps=1e-12)
        self.mlp = BertMLP(hidden_size, intermediate_size)
        self.layernorm2 = nn.LayerNorm(hidden_size, eps=1e-12)

    def forward(self, x, mask):
        attended, _ = self.attention(x, mask)
        x = self.layernorm1(x + attended)
        return self.layernorm2(x + self.mlp(x))
