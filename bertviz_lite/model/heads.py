"""BERT's pre-training heads (Hugging Face's names): the masked-word (MLM) and next-sentence (NSP) layers."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from bertviz_lite.model.config import BertConfig


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, hidden_states: Tensor) -> Tensor:
        return self.LayerNorm(F.gelu(self.dense(hidden_states)))


class BertLMPredictionHead(nn.Module):
    """MLM head: transform, then a decoder tied to the word embeddings, with its own bias."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.transform = BertPredictionHeadTransform(config)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, hidden_states: Tensor) -> Tensor:
        return F.linear(self.transform(hidden_states), self.decoder.weight, self.bias)


class BertPreTrainingHeads(nn.Module):
    """The MLM head on every position and the NSP head on the pooled [CLS] vector."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.predictions = BertLMPredictionHead(config)
        self.seq_relationship = nn.Linear(config.hidden_size, 2)

    def forward(self, sequence_output: Tensor, pooled_output: Tensor) -> tuple[Tensor, Tensor]:
        """(MLM logits (B, T, V), NSP logits (B, 2)), as transformers' BertPreTrainingHeads."""
        return self.predictions(sequence_output), self.seq_relationship(pooled_output)
