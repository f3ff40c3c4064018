"""PyTorch's "Language Modeling with nn.Transformer" tutorial turned into a BERT: seq-first tensors, sinusoidal
positions with dropout, the embedding scaled by sqrt(d_model), nn.TransformerEncoder with a padding mask."""

import math

import torch
from torch import nn


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        x = x + self.pe[: x.size(0)]
        return self.dropout(x)


class Bert(nn.Module):
    def __init__(self, ntoken, d_model, nhead, d_hid, nlayers, dropout=0.5):
        super().__init__()
        self.pos_encoder = PositionalEncoding(d_model, dropout)
        encoder_layers = nn.TransformerEncoderLayer(d_model, nhead, d_hid, dropout, activation="gelu")
        self.transformer_encoder = nn.TransformerEncoder(encoder_layers, nlayers)
        self.embedding = nn.Embedding(ntoken, d_model)
        self.segment = nn.Embedding(2, d_model)
        self.d_model = d_model
        self.linear = nn.Linear(d_model, ntoken)

    def forward(self, src, segments):
        pad = src == 0
        src = src.t()  # (T, B)
        x = self.embedding(src) * math.sqrt(self.d_model) + self.segment(segments.t())
        x = self.pos_encoder(x)
        output = self.transformer_encoder(x, src_key_padding_mask=pad)
        return self.linear(output).transpose(0, 1)
