"""The exercise's outline (python -m bertviz_lite.check --new) filled in: every part, then Bert and mask_tokens."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class BertEmbedding(nn.Module):
    def __init__(self, vocab_size, hidden_size, max_len):
        super().__init__()
        self.word = nn.Embedding(vocab_size, hidden_size)
        self.position = nn.Embedding(max_len, hidden_size)
        self.segment = nn.Embedding(2, hidden_size)
        self.norm = nn.LayerNorm(hidden_size, eps=1e-12)

    def forward(self, input_ids, token_type_ids):
        positions = torch.arange(input_ids.shape[1])
        return self.norm(self.word(input_ids) + self.position(positions) + self.segment(token_type_ids))


class BertAttention(nn.Module):
    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query, self.key, self.value = (nn.Linear(hidden_size, hidden_size) for _ in range(3))
        self.output = nn.Linear(hidden_size, hidden_size)

    def forward(self, x, mask):
        b, t, h = x.shape
        q, k, v = (
            f(x).view(b, t, self.num_heads, -1).transpose(1, 2) for f in (self.query, self.key, self.value)
        )
        scores = (q @ k.transpose(-1, -2) / math.sqrt(h // self.num_heads)).masked_fill(mask == 0, -1e9)
        return self.output((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, h))


class BertMLP(nn.Module):
    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.up = nn.Linear(hidden_size, intermediate_size)
        self.down = nn.Linear(intermediate_size, hidden_size)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


class BertLayer(nn.Module):
    def __init__(self, hidden_size, num_heads, intermediate_size):
        super().__init__()
        self.attention = BertAttention(hidden_size, num_heads)
        self.norm1 = nn.LayerNorm(hidden_size, eps=1e-12)
        self.mlp = BertMLP(hidden_size, intermediate_size)
        self.norm2 = nn.LayerNorm(hidden_size, eps=1e-12)

    def forward(self, x, mask):
        x = self.norm1(x + self.attention(x, mask))
        return self.norm2(x + self.mlp(x))


class Bert(nn.Module):
    def __init__(self, vocab_size, hidden_size, num_layers, num_heads, intermediate_size, max_len):
        super().__init__()
        self.embedding = BertEmbedding(vocab_size, hidden_size, max_len)
        self.layers = nn.ModuleList(
            BertLayer(hidden_size, num_heads, intermediate_size) for _ in range(num_layers)
        )
        self.transform = nn.Linear(hidden_size, hidden_size)
        self.transform_norm = nn.LayerNorm(hidden_size, eps=1e-12)
        self.decoder_bias = nn.Parameter(torch.zeros(vocab_size))

    def forward(self, input_ids, token_type_ids):
        mask = (input_ids != 0)[:, None, None, :]
        x = self.embedding(input_ids, token_type_ids)
        for layer in self.layers:
            x = layer(x, mask)
        x = self.transform_norm(F.gelu(self.transform(x)))
        return F.linear(x, self.embedding.word.weight, self.decoder_bias)


def mask_tokens(input_ids, vocab_size, mask_token_id, special_tokens_mask):
    chosen = (torch.rand(input_ids.shape) < 0.15) & ~special_tokens_mask.bool()
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, -100))
    roll = torch.rand(input_ids.shape)
    masked = input_ids.clone()
    masked[chosen & (roll < 0.8)] = mask_token_id
    swap = chosen & (roll >= 0.8) & (roll < 0.9)
    masked[swap] = torch.randint(vocab_size, input_ids.shape)[swap]
    return masked, labels
