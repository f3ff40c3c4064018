"""A learner's BERT from a notebook: fused W_qkv, nn.Sequential feed-forward, norm1/norm2, tok_embed names,
a decoder tied through F.linear, no NSP head; the exercise's constructor names (d_model, n_layers, …)."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class BertEmbedding(nn.Module):
    def __init__(self, vocab_size, d_model, max_len):
        super().__init__()
        self.tok_embed = nn.Embedding(vocab_size, d_model)
        self.pos_embed = nn.Embedding(max_len, d_model)
        self.seg_embed = nn.Embedding(2, d_model)
        self.norm = nn.LayerNorm(d_model, eps=1e-12)

    def forward(self, input_ids, token_type_ids):
        pos = torch.arange(input_ids.size(1), device=input_ids.device).unsqueeze(0)
        return self.norm(self.tok_embed(input_ids) + self.pos_embed(pos) + self.seg_embed(token_type_ids))


class BertAttention(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.d_k = d_model // n_heads
        self.W_qkv = nn.Linear(d_model, 3 * d_model)
        self.W_o = nn.Linear(d_model, d_model)

    def forward(self, x, mask):
        B, T, C = x.shape
        q, k, v = self.W_qkv(x).chunk(3, dim=-1)
        q, k, v = (t.view(B, T, self.n_heads, self.d_k).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.d_k)
        att = att.masked_fill(mask == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        self.last_attention = att
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.W_o(y)


class BertMLP(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model), nn.Dropout(0.1)
        )

    def forward(self, x):
        return self.net(x)


class BertLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff):
        super().__init__()
        self.attn = BertAttention(d_model, n_heads)
        self.norm1 = nn.LayerNorm(d_model, eps=1e-12)
        self.mlp = BertMLP(d_model, d_ff)
        self.norm2 = nn.LayerNorm(d_model, eps=1e-12)

    def forward(self, x, mask):
        x = self.norm1(x + self.attn(x, mask))
        return self.norm2(x + self.mlp(x))


class Bert(nn.Module):
    def __init__(self, vocab_size, d_model, n_layers, n_heads, d_ff, max_len):
        super().__init__()
        self.embedding = BertEmbedding(vocab_size, d_model, max_len)
        self.layers = nn.ModuleList([BertLayer(d_model, n_heads, d_ff) for _ in range(n_layers)])
        self.mlm_dense = nn.Linear(d_model, d_model)
        self.mlm_norm = nn.LayerNorm(d_model, eps=1e-12)
        self.mlm_bias = nn.Parameter(torch.zeros(vocab_size))

    def forward(self, input_ids, token_type_ids):
        mask = (input_ids != 0).unsqueeze(1).unsqueeze(2)
        x = self.embedding(input_ids, token_type_ids)
        for layer in self.layers:
            x = layer(x, mask)
        x = self.mlm_norm(F.gelu(self.mlm_dense(x)))
        return F.linear(x, self.embedding.tok_embed.weight, self.mlm_bias)
