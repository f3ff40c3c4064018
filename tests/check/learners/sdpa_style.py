"""A learner's BERT whose attention calls F.scaled_dot_product_attention: the probabilities stay inside that call."""

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
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        return self.norm(self.word(input_ids) + self.position(positions) + self.segment(token_type_ids))


class BertAttention(nn.Module):
    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)
        self.value = nn.Linear(hidden_size, hidden_size)
        self.out = nn.Linear(hidden_size, hidden_size)

    def forward(self, x, mask):
        b, t, h = x.shape
        q, k, v = (
            proj(x).view(b, t, self.num_heads, -1).transpose(1, 2)
            for proj in (self.query, self.key, self.value)
        )
        context = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask.bool()
        )  # (B, nh, T, hd); True: attend
        return self.out(context.transpose(1, 2).reshape(b, t, h))


class BertMLP(nn.Module):
    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.fc1 = nn.Linear(hidden_size, intermediate_size)
        self.fc2 = nn.Linear(intermediate_size, hidden_size)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class BertLayer(nn.Module):
    def __init__(self, hidden_size, num_heads, intermediate_size):
        super().__init__()
        self.attention = BertAttention(hidden_size, num_heads)
        self.ln1 = nn.LayerNorm(hidden_size, eps=1e-12)
        self.mlp = BertMLP(hidden_size, intermediate_size)
        self.ln2 = nn.LayerNorm(hidden_size, eps=1e-12)

    def forward(self, x, mask):
        x = self.ln1(x + self.attention(x, mask))
        return self.ln2(x + self.mlp(x))


class Bert(nn.Module):
    def __init__(self, vocab_size, hidden_size, num_layers, num_heads, intermediate_size, max_len):
        super().__init__()
        self.embeddings = BertEmbedding(vocab_size, hidden_size, max_len)
        self.layers = nn.ModuleList(
            BertLayer(hidden_size, num_heads, intermediate_size) for _ in range(num_layers)
        )
        self.mlm_dense = nn.Linear(hidden_size, hidden_size)
        self.mlm_norm = nn.LayerNorm(hidden_size, eps=1e-12)
        self.mlm_bias = nn.Parameter(torch.zeros(vocab_size))

    def forward(self, input_ids, token_type_ids):
        mask = (input_ids != 0)[:, None, None, :]  # (B, 1, 1, T)
        x = self.embeddings(input_ids, token_type_ids)
        for layer in self.layers:
            x = layer(x, mask)
        x = self.mlm_norm(F.gelu(self.mlm_dense(x)))
        return x @ self.embeddings.word.weight.T + self.mlm_bias
