"""A learner's encoder in the style of The Annotated Transformer: clones(), its own LayerNorm (a_2, b_2), four
`linears` in the attention, a `sublayer` list of pre-LN connections, a ReLU feed-forward, a final LayerNorm after the
layers, and a `build(config)` function the checker calls instead of guessing the constructor."""

import copy
import math

import torch
from torch import nn


def clones(module, n):
    return nn.ModuleList([copy.deepcopy(module) for _ in range(n)])


class LayerNorm(nn.Module):
    def __init__(self, features, eps=1e-6):
        super().__init__()
        self.a_2 = nn.Parameter(torch.ones(features))
        self.b_2 = nn.Parameter(torch.zeros(features))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        std = x.std(-1, keepdim=True)
        return self.a_2 * (x - mean) / (std + self.eps) + self.b_2


def attention(query, key, value, mask=None, dropout=None):
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn


class MultiHeadedAttention(nn.Module):
    def __init__(self, h, d_model, dropout=0.1):
        super().__init__()
        self.d_k = d_model // h
        self.h = h
        self.linears = clones(nn.Linear(d_model, d_model), 4)
        self.attn = None
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, query, key, value, mask=None):
        nbatches = query.size(0)
        query, key, value = [
            lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
            for lin, x in zip(self.linears, (query, key, value), strict=False)
        ]
        x, self.attn = attention(query, key, value, mask=mask, dropout=self.dropout)
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        return self.linears[-1](x)


class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.w_2(self.dropout(self.w_1(x).relu()))


class SublayerConnection(nn.Module):
    def __init__(self, size, dropout):
        super().__init__()
        self.norm = LayerNorm(size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, sublayer):
        return x + self.dropout(sublayer(self.norm(x)))


class EncoderLayer(nn.Module):
    def __init__(self, size, self_attn, feed_forward, dropout):
        super().__init__()
        self.self_attn = self_attn
        self.feed_forward = feed_forward
        self.sublayer = clones(SublayerConnection(size, dropout), 2)
        self.size = size

    def forward(self, x, mask):
        x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, mask))
        return self.sublayer[1](x, self.feed_forward)


class Encoder(nn.Module):
    def __init__(self, layer, n):
        super().__init__()
        self.layers = clones(layer, n)
        self.norm = LayerNorm(layer.size)

    def forward(self, x, mask):
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)


class Embeddings(nn.Module):
    def __init__(self, vocab, d_model, max_len):
        super().__init__()
        self.lut = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.seg = nn.Embedding(2, d_model)

    def forward(self, x, segments):
        return self.lut(x) + self.pos(torch.arange(x.size(1))) + self.seg(segments)


class BertModel(nn.Module):
    def __init__(self, embed, encoder, vocab, d_model):
        super().__init__()
        self.embed = embed
        self.encoder = encoder
        self.generator = nn.Linear(d_model, vocab)

    def forward(self, input_ids, token_type_ids):
        mask = (input_ids != 0).unsqueeze(-2).unsqueeze(1)
        return self.generator(self.encoder(self.embed(input_ids, token_type_ids), mask))


def build(config):
    c = copy.deepcopy
    attn = MultiHeadedAttention(config.num_heads, config.d_model)
    ff = PositionwiseFeedForward(config.d_model, config.d_ff)
    layer = EncoderLayer(config.d_model, c(attn), c(ff), 0.1)
    embed = Embeddings(config.vocab_size, config.d_model, config.max_len)
    return BertModel(embed, Encoder(layer, config.n_layers), config.vocab_size, config.d_model)
