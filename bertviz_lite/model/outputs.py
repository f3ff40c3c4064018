"""What the model returns: dataclasses of tensors, under Hugging Face's names where transformers has them.

Shapes: B batch, T tokens, H hidden size, nh heads, hd head size, V vocabulary, M masked positions.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor


@dataclass
class EmbeddingParts:
    """The three embeddings of each token, their sum, and the sum after LayerNorm; each (B, T, H)."""

    token: Tensor
    position: Tensor
    segment: Tensor
    sum: Tensor
    layer_norm: Tensor


@dataclass
class LayerAttention:
    """What one layer's self-attention computed, per head: queries, keys, values and probabilities."""

    query: Tensor  # (B, nh, T, hd)
    key: Tensor  # (B, nh, T, hd)
    value: Tensor  # (B, nh, T, hd)
    probs: Tensor  # (B, nh, T, T), rows sum to 1


@dataclass
class BertTrace:
    """Everything one forward pass computes that the app shows, for one batch."""

    embeddings: EmbeddingParts
    layers: tuple[LayerAttention, ...]  # one per encoder layer
    hidden_states: tuple[Tensor, ...]  # embedding output, then each layer: (B, T, H)
    pooled: Tensor  # (B, H)
    mlm_logits: Tensor | None  # (B, T, V); None for a model without a trained MLM head
    nsp_logits: Tensor | None  # (B, 2), index 0 = IsNext as in Hugging Face; None without an NSP head
    attention_mask: Tensor  # (B, T)

    # Per layer, under transformers' names: attentions (B, nh, T, T) probabilities; queries, keys, values.
    attentions = property(lambda self: tuple(layer.probs for layer in self.layers))
    queries = property(lambda self: tuple(layer.query for layer in self.layers))
    keys = property(lambda self: tuple(layer.key for layer in self.layers))
    values = property(lambda self: tuple(layer.value for layer in self.layers))


@dataclass
class BertModelOutput:
    """What `BertModel` returns, under transformers' names."""

    last_hidden_state: Tensor  # (B, T, H)
    pooler_output: Tensor  # (B, H)


@dataclass
class PretrainingOutput:
    """Losses of one pre-training step; MLM logits only at the masked positions."""

    loss: Tensor
    mlm_loss: Tensor
    nsp_loss: Tensor
    mlm_logits: Tensor  # (M, V) for the M masked positions
    mlm_labels: Tensor  # (M,)
    nsp_logits: Tensor  # (B, 2)
