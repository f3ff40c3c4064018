"""A learner's "minimal" BERT: PyTorch's own nn.TransformerEncoderLayer (post-LN, GELU, batch first) stacked by
nn.TransformerEncoder, with src_key_padding_mask True on padding (PyTorch's sense: True = ignore that key)."""

import torch
from torch import nn


class Bert(nn.Module):
    def __init__(self, vocab_size, hidden_size, num_layers, num_heads, intermediate_size, max_len):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, hidden_size)
        self.pos = nn.Embedding(max_len, hidden_size)
        self.seg = nn.Embedding(2, hidden_size)
        self.norm = nn.LayerNorm(hidden_size, eps=1e-12)
        layer = nn.TransformerEncoderLayer(
            hidden_size,
            num_heads,
            intermediate_size,
            dropout=0.1,
            activation="gelu",
            layer_norm_eps=1e-12,
            batch_first=True,
            norm_first=False,
        )
        self.encoder = nn.TransformerEncoder(layer, num_layers)
        self.head = nn.Sequential(
            nn.Linear(hidden_size, hidden_size), nn.GELU(), nn.LayerNorm(hidden_size, eps=1e-12)
        )
        self.decoder = nn.Linear(hidden_size, vocab_size)
        self.decoder.weight = self.tok.weight

    def forward(self, input_ids, token_type_ids):
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.norm(self.tok(input_ids) + self.pos(positions) + self.seg(token_type_ids))
        x = self.encoder(x, src_key_padding_mask=input_ids == 0)
        return self.decoder(self.head(x))
