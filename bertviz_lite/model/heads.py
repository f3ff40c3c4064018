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


# On the CPU in bf16 autocast, oneDNN keeps a packed bf16 copy of the vocabulary decoder (23 MB for 30,522 words)
# for every row count it has multiplied, up to 1,024 of them. The number of masked tokens changes every step, so a
# run grew by ~45 MB a step until the kernel killed it at 24 GB (bench/RESULTS.md). Row counts rounded up to a
# multiple of this keep a few shapes only.
CPU_BF16_ROW_BUCKET = 128


def bucketed_rows(rows: Tensor) -> Tensor:
    """`rows` (M, H), followed by zero rows up to a multiple of CPU_BF16_ROW_BUCKET when the CPU runs in bf16
    autocast (elsewhere as they are); the caller keeps the first M outputs, so nothing else changes."""
    if rows.device.type != "cpu" or not torch.is_autocast_enabled("cpu"):
        return rows
    extra = -rows.shape[0] % CPU_BF16_ROW_BUCKET
    return torch.cat([rows, rows.new_zeros(extra, rows.shape[1])]) if extra else rows
