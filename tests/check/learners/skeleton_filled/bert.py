"""The exercise's skeleton (`--new`) filled in exactly as its comments say, as a learner did: the MLM head is dense,
GELU, LayerNorm and a decoder tied to the word table with its own bias; no NSP head, no pooler."""
# ruff: noqa: E731, I001 - kept as the learner wrote it (a lambda, imports unsorted)

import math
import torch
from torch import nn


class BertEmbedding(nn.Module):
    def __init__(self, vocab_size, hidden_size, max_len):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, hidden_size)
        self.pos = nn.Embedding(max_len, hidden_size)
        self.seg = nn.Embedding(2, hidden_size)
        self.norm = nn.LayerNorm(hidden_size, eps=1e-12)

    def forward(self, input_ids, token_type_ids):
        pos = torch.arange(input_ids.shape[1], device=input_ids.device)
        return self.norm(self.tok(input_ids) + self.pos(pos)[None] + self.seg(token_type_ids))


class BertAttention(nn.Module):
    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.nh = num_heads
        self.hd = hidden_size // num_heads
        self.W_q = nn.Linear(hidden_size, hidden_size)
        self.W_k = nn.Linear(hidden_size, hidden_size)
        self.W_v = nn.Linear(hidden_size, hidden_size)
        self.W_o = nn.Linear(hidden_size, hidden_size)

    def forward(self, x, mask):
        B, T, H = x.shape
        split = lambda t: t.view(B, T, self.nh, self.hd).transpose(1, 2)
        q = split(self.W_q(x))
        k = split(self.W_k(x))
        v = split(self.W_v(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.hd)
        scores = scores.masked_fill(mask == 0, -1e9)
        self.attn = scores.softmax(-1)
        ctx = (self.attn @ v).transpose(1, 2).reshape(B, T, H)
        return self.W_o(ctx)


class BertMLP(nn.Module):
    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.fc1 = nn.Linear(hidden_size, intermediate_size)
        self.fc2 = nn.Linear(intermediate_size, hidden_size)

    def forward(self, x):
        return self.fc2(nn.functional.gelu(self.fc1(x)))


class BertLayer(nn.Module):
    def __init__(self, hidden_size, num_heads, intermediate_size):
        super().__init__()
        self.attn = BertAttention(hidden_size, num_heads)
        self.norm1 = nn.LayerNorm(hidden_size, eps=1e-12)
        self.mlp = BertMLP(hidden_size, intermediate_size)
        self.norm2 = nn.LayerNorm(hidden_size, eps=1e-12)

    def forward(self, x, mask):
        x = self.norm1(x + self.attn(x, mask))
        return self.norm2(x + self.mlp(x))


class Bert(nn.Module):
    def __init__(self, vocab_size, hidden_size, num_layers, num_heads, intermediate_size, max_len):
        super().__init__()
        self.emb = BertEmbedding(vocab_size, hidden_size, max_len)
        self.layers = nn.ModuleList(
            BertLayer(hidden_size, num_heads, intermediate_size) for _ in range(num_layers)
        )
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.ln = nn.LayerNorm(hidden_size, eps=1e-12)
        self.bias = nn.Parameter(torch.zeros(vocab_size))

    def forward(self, input_ids, token_type_ids):
        mask = (input_ids != 0)[:, None, None, :]
        x = self.emb(input_ids, token_type_ids)
        for layer in self.layers:
            x = layer(x, mask)
        x = self.ln(nn.functional.gelu(self.dense(x)))
        return x @ self.emb.tok.weight.T + self.bias


def mask_tokens(input_ids, vocab_size, mask_token_id, special_tokens_mask):
    labels = input_ids.clone()
    chosen = (torch.rand(input_ids.shape) < 0.15) & ~special_tokens_mask
    labels[~chosen] = -100
    ids = input_ids.clone()
    r = torch.rand(input_ids.shape)
    ids[chosen & (r < 0.8)] = mask_token_id
    rnd = chosen & (r >= 0.8) & (r < 0.9)
    ids[rnd] = torch.randint(vocab_size, input_ids.shape)[rnd]
    return ids, labels
