"""A learner's BERT on torch's nn.MultiheadAttention (batch_first, key_padding_mask), built from a config object,
fc1/fc2 feed-forward, HF-like heads with a tied decoder and a pooler."""

import torch
import torch.nn.functional as F
from torch import nn


class EncoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(
            config.hidden_size, config.num_attention_heads, batch_first=True
        )
        self.ln_1 = nn.LayerNorm(config.hidden_size, eps=1e-12)
        self.fc1 = nn.Linear(config.hidden_size, config.intermediate_size)
        self.fc2 = nn.Linear(config.intermediate_size, config.hidden_size)
        self.ln_2 = nn.LayerNorm(config.hidden_size, eps=1e-12)

    def forward(self, x, padding):
        attended, _ = self.self_attn(x, x, x, key_padding_mask=padding, need_weights=False)
        x = self.ln_1(x + attended)
        return self.ln_2(x + self.fc2(F.gelu(self.fc1(x))))


class Bert(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.token_embedding = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embedding = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.segment_embedding = nn.Embedding(2, config.hidden_size)
        self.embedding_norm = nn.LayerNorm(config.hidden_size, eps=1e-12)
        self.blocks = nn.ModuleList([EncoderLayer(config) for _ in range(config.num_hidden_layers)])
        self.pooler = nn.Linear(config.hidden_size, config.hidden_size)
        self.nsp = nn.Linear(config.hidden_size, 2)
        self.mlm_transform = nn.Linear(config.hidden_size, config.hidden_size)
        self.mlm_layer_norm = nn.LayerNorm(config.hidden_size, eps=1e-12)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size)
        self.decoder.weight = self.token_embedding.weight

    def forward(self, input_ids, token_type_ids):
        positions = torch.arange(input_ids.shape[1])
        x = (
            self.token_embedding(input_ids)
            + self.position_embedding(positions)
            + self.segment_embedding(token_type_ids)
        )
        x = self.embedding_norm(x)
        for block in self.blocks:
            x = block(x, input_ids == 0)
        self.next_sentence_logits = self.nsp(torch.tanh(self.pooler(x[:, 0])))
        return self.decoder(self.mlm_layer_norm(F.gelu(self.mlm_transform(x))))
