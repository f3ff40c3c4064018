"""The exercise's feed-forward on its own: BertMLP(x) -> (B, T, H), without residual or LayerNorm."""

from torch import nn


class BertMLP(nn.Module):
    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.mlp1 = nn.Linear(hidden_size, intermediate_size)
        self.mlp2 = nn.Linear(intermediate_size, hidden_size)

    def forward(self, x):
        return self.mlp2(nn.functional.gelu(self.mlp1(x)))
