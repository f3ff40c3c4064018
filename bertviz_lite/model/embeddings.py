"""BERT's input embeddings (Hugging Face's `BertEmbeddings`): token + position + segment, LayerNorm, dropout."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from bertviz_lite.model.config import BertConfig
from bertviz_lite.model.dropout import BertDropout
from bertviz_lite.model.outputs import EmbeddingParts


def sinusoidal_position_table(num_positions: int, dim: int) -> Tensor:
    """The fixed table of Vaswani et al.: sin on even dimensions, cos on odd ones. (num_positions, dim)"""
    position = torch.arange(num_positions, dtype=torch.float64).unsqueeze(1)
    div = torch.exp(torch.arange(0, dim, 2, dtype=torch.float64) * (-math.log(10000.0) / dim))
    table = torch.zeros(num_positions, dim, dtype=torch.float64)
    table[:, 0::2] = torch.sin(position * div)
    table[:, 1::2] = torch.cos(position * div[: dim // 2])
    return table.float()


class BertEmbeddings(nn.Module):
    """Token + position + segment embeddings, then LayerNorm and dropout."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(
            config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id
        )
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = BertDropout(config.hidden_dropout_prob)
        if config.position_embedding_type == "sinusoidal":
            table = sinusoidal_position_table(config.max_position_embeddings, config.hidden_size)
            self.position_embeddings.weight = nn.Parameter(table, requires_grad=False)

    def parts(self, input_ids: Tensor, token_type_ids: Tensor, position_ids: Tensor) -> EmbeddingParts:
        token = self.word_embeddings(input_ids)
        position = self.position_embeddings(position_ids).expand_as(token)
        segment = self.token_type_embeddings(token_type_ids)
        summed = token + position + segment
        return EmbeddingParts(token, position, segment, summed, self.LayerNorm(summed))

    def summed(self, input_ids: Tensor, token_type_ids: Tensor, position_ids: Tensor) -> Tensor:
        """Token + segment + position embeddings before LayerNorm, added in transformers' order."""
        summed = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        return summed + self.position_embeddings(position_ids)

    def forward(self, input_ids: Tensor, token_type_ids: Tensor, position_ids: Tensor) -> Tensor:
        return self.dropout(self.LayerNorm(self.summed(input_ids, token_type_ids, position_ids)))
