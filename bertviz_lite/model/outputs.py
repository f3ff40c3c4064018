"""What the model returns: dataclasses of tensors, under Hugging Face's names where transformers has them.

Shapes: B batch, T tokens, H hidden size, nh heads, hd head size, V vocabulary, M masked positions.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from torch import Tensor


@dataclass
class EmbeddingParts:
    """The three embeddings of each token, their sum, and the sum after LayerNorm; each (B, T, H)."""

    token: Tensor
    position: Tensor
    segment: Tensor
    sum: Tensor
    layer_norm: Tensor


def per_layer(name: str):
    """A LayerAttention field; `name` is its tuple over layers on BertTrace and its array on explore.PairTrace."""
    return field(metadata={"per_layer": name})


@dataclass
class LayerAttention:
    """What one layer's self-attention computed, per head: queries, keys, values and probabilities.

    A new intermediate is one more field here, recorded in BertSelfAttention.explicit (or BertLayer.explicit);
    BertTrace and PairTrace offer it under its per_layer name (transformers' names where they exist).
    """

    query: Tensor = per_layer("queries")  # (B, nh, T, hd)
    key: Tensor = per_layer("keys")  # (B, nh, T, hd)
    value: Tensor = per_layer("values")  # (B, nh, T, hd)
    probs: Tensor = per_layer("attentions")  # (B, nh, T, T), rows sum to 1


def per_layer_names(layer: LayerAttention) -> dict[str, str]:
    """{per-layer name: field name} of a layer's intermediates, e.g. {"attentions": "probs", …}."""
    return {spec.metadata["per_layer"]: spec.name for spec in fields(layer) if "per_layer" in spec.metadata}


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

    def per_layer(self) -> dict[str, str]:
        """{per-layer name: LayerAttention field} of the intermediates this trace recorded."""
        return per_layer_names(self.layers[0]) if self.layers else {}

    def __getattr__(self, name: str) -> tuple[Tensor, ...]:
        """Per layer, under transformers' names: attentions (B, nh, T, T) probabilities; queries, keys, values."""
        layers = self.__dict__.get("layers", ())
        if layers and name in (names := per_layer_names(layers[0])):
            return tuple(getattr(layer, names[name]) for layer in layers)
        raise AttributeError(f"BertTrace has no attribute {name!r}")


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
