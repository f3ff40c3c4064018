"""A learner's BERT from a notebook that writes its own matrices: nn.Parameter W_qkv (H, 3H), W_o, W1, W2 used as
x @ W, with their biases b_qkv, b_o, b1, b2."""

import math

import torch
import torch.nn.functional as F
from torch import nn


def matrix(rows, cols):
    return nn.Parameter(torch.randn(rows, cols) / math.sqrt(rows))


class Layer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff):
        super().__init__()
        self.n_heads = n_heads
        self.W_qkv = matrix(d_model, 3 * d_model)
        self.b_qkv = nn.Parameter(torch.zeros(3 * d_model))
        self.W_o = matrix(d_model, d_model)
        self.b_o = nn.Parameter(torch.zeros(d_model))
        self.ln1 = nn.LayerNorm(d_model, eps=1e-12)
        self.W1 = matrix(d_model, d_ff)
        self.b1 = nn.Parameter(torch.zeros(d_ff))
        self.W2 = matrix(d_ff, d_model)
        self.b2 = nn.Parameter(torch.zeros(d_model))
        self.ln2 = nn.LayerNorm(d_model, eps=1e-12)

    def forward(self, x, mask):
        B, T, H = x.shape
        q, k, v = (x @ self.W_qkv + self.b_qkv).split(H, dim=-1)
        q, k, v = (t.view(B, T, self.n_heads, -1).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-1, -2) / math.sqrt(H // self.n_heads)).masked_fill(~mask, -1e9).softmax(-1)
        x = self.ln1(x + (att @ v).transpose(1, 2).reshape(B, T, H) @ self.W_o + self.b_o)
        return self.ln2(x + F.gelu(x @ self.W1 + self.b1) @ self.W2 + self.b2)


class Bert(nn.Module):
    def __init__(self, vocab_size, d_model, n_layers, n_heads, d_ff, max_len):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.seg = nn.Embedding(2, d_model)
        self.ln = nn.LayerNorm(d_model, eps=1e-12)
        self.layers = nn.ModuleList(Layer(d_model, n_heads, d_ff) for _ in range(n_layers))
        self.head = nn.Linear(d_model, d_model)
        self.head_ln = nn.LayerNorm(d_model, eps=1e-12)
        self.bias = nn.Parameter(torch.zeros(vocab_size))

    def forward(self, input_ids, token_type_ids):
        mask = (input_ids != 0)[:, None, None, :]
        x = self.ln(
            self.tok(input_ids) + self.pos(torch.arange(input_ids.shape[1])) + self.seg(token_type_ids)
        )
        for layer in self.layers:
            x = layer(x, mask)
        return self.head_ln(F.gelu(self.head(x))) @ self.tok.weight.T + self.bias
