"""What the model returns: dataclasses of tensors, under Hugging Face's names where transformers has them.

Shapes: B batch, T tokens, H hidden size, nh heads, hd head size, V vocabulary, M masked positions.
Each tensor field of a trace declares its token axes (`token_axes`): model/batching.py's split_trace cuts a padded
batch's trace into one trace per example by them, so a new field must say which of its axes run over tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from torch import Tensor


def token_axes(*axes: int, **metadata):
    """A tensor field whose axes `axes` run over tokens (axis 0 is the batch); () for one value per example."""
    return field(metadata={"token_axes": axes, **metadata})


@dataclass
class EmbeddingParts:
    """The three embeddings of each token, their sum, and the sum after LayerNorm; each (B, T, H)."""

    token: Tensor = token_axes(1)
    position: Tensor = token_axes(1)
    segment: Tensor = token_axes(1)
    sum: Tensor = token_axes(1)
    layer_norm: Tensor = token_axes(1)


def per_layer(name: str, axes: tuple[int, ...] = (2,)):
    """A LayerAttention field; `name` is its tuple over layers on BertTrace and its array on explore.PairTrace;
    `axes` its token axes, (2,) for a (B, nh, T, …) tensor."""
    return token_axes(*axes, per_layer=name)


@dataclass
class LayerAttention:
    """What one layer's self-attention computed, per head: queries, keys, values and probabilities.

    A new intermediate is one more field here, recorded in BertSelfAttention.forward_with_attention (or
    BertLayer.forward_with_attention); BertTrace.layer_tensors(name) and PairTrace.layer_array(name) offer it under its
    per_layer name (transformers' names where they exist); the four below also have their own properties on both.
    """

    query: Tensor = per_layer("queries")  # (B, nh, T, hd)
    key: Tensor = per_layer("keys")  # (B, nh, T, hd)
    value: Tensor = per_layer("values")  # (B, nh, T, hd)
    probs: Tensor = per_layer("attentions", (2, 3))  # (B, nh, T, T), rows sum to 1


def per_layer_names(layer: LayerAttention) -> dict[str, str]:
    """{per-layer name: field name} of a layer's intermediates, e.g. {"attentions": "probs", …}."""
    return {spec.metadata["per_layer"]: spec.name for spec in fields(layer) if "per_layer" in spec.metadata}


@dataclass
class BertTrace:
    """Everything one forward pass computes that the app shows, for one batch."""

    embeddings: EmbeddingParts
    layers: tuple[LayerAttention, ...]  # one per encoder layer
    hidden_states: tuple[Tensor, ...] = token_axes(1)  # embedding output, then each layer: (B, T, H)
    pooled: Tensor = token_axes()  # (B, H)
    mlm_logits: Tensor | None = token_axes(1)  # (B, T, V); None for a model without a trained MLM head
    nsp_logits: Tensor | None = (
        token_axes()
    )  # (B, 2), index 0 = IsNext as in Hugging Face; None without an NSP head
    attention_mask: Tensor = token_axes(1)  # (B, T)

    def per_layer(self) -> dict[str, str]:
        """{per-layer name: LayerAttention field} of the intermediates this trace recorded."""
        return per_layer_names(self.layers[0]) if self.layers else {}

    def layer_tensors(self, name: str) -> tuple[Tensor, ...]:
        """One intermediate per layer, by its per_layer name ("attentions", "queries", …); KeyError for another."""
        field_name = self.per_layer()[name]
        return tuple(getattr(layer, field_name) for layer in self.layers)

    @property
    def attentions(self) -> tuple[Tensor, ...]:
        """Per layer: the attention probabilities (B, nh, T, T), as transformers names them."""
        return tuple(layer.probs for layer in self.layers)

    @property
    def queries(self) -> tuple[Tensor, ...]:
        """Per layer: (B, nh, T, hd)."""
        return tuple(layer.query for layer in self.layers)

    @property
    def keys(self) -> tuple[Tensor, ...]:
        """Per layer: (B, nh, T, hd)."""
        return tuple(layer.key for layer in self.layers)

    @property
    def values(self) -> tuple[Tensor, ...]:
        """Per layer: (B, nh, T, hd)."""
        return tuple(layer.value for layer in self.layers)


@dataclass
class BertModelOutput:
    """What `BertModel` returns, under transformers' names."""

    last_hidden_state: Tensor  # (B, T, H)
    pooler_output: Tensor  # (B, H)


@dataclass
class BertForPreTrainingOutput:
    """What `BertForPreTraining` returns, under transformers' names: both heads' logits."""

    prediction_logits: Tensor  # (B, T, V) the MLM head at every position
    seq_relationship_logits: Tensor  # (B, 2) the NSP head on the pooled [CLS]; index 0 = B follows A


@dataclass
class PretrainingOutput:
    """Losses of one pre-training step; MLM logits only at the rows `labelled_positions` chose."""

    loss: Tensor
    mlm_loss: Tensor
    nsp_loss: Tensor
    mlm_logits: Tensor  # (K, V): the M labelled positions first, then K - M rows whose label is -100
    mlm_labels: Tensor  # (K,)
    nsp_logits: Tensor  # (B, 2)
