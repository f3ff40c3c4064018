"""Our BERT as one function of its weights, with switches for the mistakes a learner makes (`Recipe`).

The checker loads seeded weights into the learner's model and into this function, runs both on the same sentence
pairs and compares them stage by stage. Stage names say which of our modules' output a value is; a learner's
module that holds the same weights is hooked for the same stage. Shapes: B batch, T tokens, H hidden, nh heads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor

from bertviz_lite.model.config import BertConfig
from bertviz_lite.model.embeddings import sinusoidal_position_table
from bertviz_lite.model.modeling import BertForPreTraining, meta_model

SEED = 0
PAD = 0  # the exercise pads with id 0
UNK = 1
CLS = 2
SEP = 3
MASK = 4
STD_EPS = 1e-6  # the eps of the Annotated Transformer's and BERT-pytorch's own LayerNorm
MASKED_QUERY = -1e9  # what learners write in masked_fill; the variants that mask the wrong side use it


def check_config() -> BertConfig:
    """The tiny model every check runs: fast on one core, big enough to tell the mistakes apart."""
    return BertConfig(
        vocab_size=100,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        max_position_embeddings=64,
        layer_norm_eps=1e-12,
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
    )


def seeded_weights(config: BertConfig, seed: int = SEED) -> dict[str, Tensor]:
    """Our parameters under Hugging Face's names, drawn large enough that every mistake moves the numbers.

    BERT's own N(0, 0.02) leaves GELU's inputs near 0, where GELU and its tanh form agree to 1e-7; LayerNorms at
    1 and 0 would hide a LayerNorm used twice. Here every weight, bias and LayerNorm is random.
    """
    generator = torch.Generator().manual_seed(seed)
    model = BertForPreTraining(config, init_weights=False)
    weights = {}
    for name, param in model.named_parameters():
        if param.dim() == 1:
            base = 1.0 if name.endswith("LayerNorm.weight") else 0.0
            value = base + 0.2 * torch.randn(param.shape, generator=generator)
        elif "embeddings" in name:
            value = 0.5 * torch.randn(param.shape, generator=generator)
        else:
            value = torch.randn(param.shape, generator=generator) * 1.2 / math.sqrt(param.shape[1])
        weights[name] = value
    weights["bert.embeddings.word_embeddings.weight"][PAD] = 0.0  # padding_idx, as nn.Embedding keeps it
    return weights


def our_shapes(config: BertConfig) -> dict[str, tuple[int, ...]]:
    """Our BERT's parameter shapes at these sizes, Hugging Face names, without allocating it (the meta device)."""
    return {name: tuple(param.shape) for name, param in meta_model(config).named_parameters()}


def reference_weights(
    weights: dict[str, Tensor], unmapped: list[str], eps: float = 1e-12
) -> dict[str, Tensor]:
    """Our weights in float64 for the reference, with the biases the learner's model has no place for set to 0
    (a Linear without bias) and the LayerNorm epsilon theirs uses."""
    reference = {
        k: (torch.zeros_like(v) if k in unmapped and k.endswith(".bias") else v).double()
        for k, v in weights.items()
    }
    reference["eps"] = torch.tensor(eps, dtype=torch.float64)
    return reference


def sentence_pairs(config: BertConfig, seed: int = SEED) -> tuple[Tensor, Tensor]:
    """4 sentence pairs as one padded batch: (input_ids, token_type_ids), each (4, 12); every row has padding."""
    generator = torch.Generator().manual_seed(seed + 1)
    ids = torch.full((4, 12), PAD)
    segments = torch.zeros(4, 12, dtype=torch.long)
    for row, (len_a, len_b) in enumerate([(4, 4), (3, 2), (5, 3), (2, 2)]):
        words = torch.randint(MASK + 1, config.vocab_size, (len_a + len_b,), generator=generator).tolist()
        tokens = [CLS, *words[:len_a], SEP, *words[len_a:], SEP]
        ids[row, : len(tokens)] = torch.tensor(tokens)
        segments[row, len_a + 2 : len(tokens)] = 1
    return ids, segments


def gelu_tanh(x: Tensor) -> Tensor:
    return F.gelu(x, approximate="tanh")


ACTIVATIONS = {"gelu": F.gelu, "gelu-tanh": gelu_tanh, "relu": F.relu}


@dataclass(frozen=True)
class Recipe:
    """How the reference computes; BERT by default. Each mistake in mistakes.py flips one field."""

    positions: str = (
        "learned"  # "learned" | "sinusoidal" | "table" (position_table, the learner's own) | "none"
    )
    position_table: Tensor | None = field(default=None, compare=False)
    segments: bool = True  # False: no segment embedding at all
    segment_offset: bool = False  # segments looked up as 1/2 with row 0 (padding) zero
    embedding_layernorm: bool = True
    scale: str = "sqrt"  # "sqrt" | "dk" | "none"
    softmax_dim: int = -1
    mask: str = "keys"  # "keys" | "ignored" | "queries" | "inverted"
    heads: str = "split"  # "split" | "no-transpose" | "inner"
    layer_norm: str = "post"  # "post" | "pre"
    shared_layernorm: bool = False
    layer_norm_formula: str = (
        "torch"  # "torch" | "std": (x - mean) / (unbiased std + eps), as tutorials write it
    )
    attention_residual: bool = True
    feed_forward_residual: bool = True
    activation: str = "gelu"
    head_activation: str = "gelu"
    pooler: bool = True
    mlm_transform: bool = True
    final_layernorm: bool = (
        False  # a LayerNorm (weight 1, bias 0) after the last layer, as pre-LN encoders have
    )
    log_softmax: bool = False  # the model returns MLM log-probabilities, as the BERT-pytorch tutorial's does
    # an eps their code passes to F.layer_norm itself, where no module's attribute shows it
    layer_norm_eps: float | None = None
    # token embeddings times sqrt(hidden_size) in the sum, as in the Transformer paper
    scaled_tokens: bool = False


def embedding_stages(w: dict[str, Tensor], ids: Tensor, seg: Tensor, recipe: Recipe) -> dict[str, Tensor]:
    """Token, position and segment embeddings, their sum and its LayerNorm. (B, T, H) each."""
    prefix = "bert.embeddings."
    token = F.embedding(ids, w[prefix + "word_embeddings.weight"])
    table = w[prefix + "position_embeddings.weight"]
    if recipe.positions == "sinusoidal":
        table = sinusoidal_position_table(table.shape[0], table.shape[1]).to(table.dtype)
    elif recipe.positions == "table":
        table = recipe.position_table.to(table.dtype)
    elif recipe.positions == "none":
        table = torch.zeros_like(table)
    position = table[: ids.shape[1]].unsqueeze(0).expand_as(token)
    segment_table = w[prefix + "token_type_embeddings.weight"]
    if recipe.segment_offset:  # fed BERT's 0/1, a 1/2 table gives sentence A the padding row and B row "1"
        segment_table = torch.cat([torch.zeros_like(segment_table[:1]), segment_table])
    segment = F.embedding(seg, segment_table) * float(recipe.segments)
    scale = math.sqrt(token.shape[-1]) if recipe.scaled_tokens else 1.0
    summed = token * scale + position + segment
    stages = {
        "embeddings.token": token,
        "embeddings.position": position,
        "embeddings.segment": segment,
        "embeddings.sum": summed,
    }
    if recipe.embedding_layernorm:
        stages["embeddings.layer_norm"] = _layer_norm(summed, w, prefix + "LayerNorm", recipe)
    return stages


def _layer_norm(x: Tensor, w: dict[str, Tensor], prefix: str, recipe: Recipe) -> Tensor:
    if recipe.layer_norm_formula == "std":  # the Annotated Transformer's: unbiased std, eps added to it
        normed = (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + STD_EPS)
        return w[prefix + ".weight"] * normed + w[prefix + ".bias"]
    eps = w["eps"].item() if recipe.layer_norm_eps is None else recipe.layer_norm_eps
    return F.layer_norm(x, x.shape[-1:], w[prefix + ".weight"], w[prefix + ".bias"], eps=eps)


def _linear(x: Tensor, w: dict[str, Tensor], prefix: str) -> Tensor:
    return F.linear(x, w[prefix + ".weight"], w[prefix + ".bias"])


def split_heads(x: Tensor, nh: int, how: str) -> Tensor:
    """(B, T, H) -> (B, nh, T, hd), right (`split`) or cut from the wrong axis."""
    batch, seq, hidden = x.shape
    if how == "no-transpose":  # view (B, T, H) as (B, nh, T, hd): heads mix tokens
        return x.reshape(batch, nh, seq, hidden // nh)
    if how == "inner":  # (B, T, hd, nh): head h takes every nh-th dimension
        return x.view(batch, seq, hidden // nh, nh).permute(0, 3, 1, 2)
    return x.view(batch, seq, nh, hidden // nh).transpose(1, 2)


def merge_heads(x: Tensor, how: str) -> Tensor:
    """The inverse of split_heads with the same `how`: (B, nh, T, hd) -> (B, T, H)."""
    batch, nh, seq, hd = x.shape
    if how == "no-transpose":
        return x.reshape(batch, seq, nh * hd)
    if how == "inner":
        return x.permute(0, 2, 3, 1).reshape(batch, seq, nh * hd)
    return x.transpose(1, 2).reshape(batch, seq, nh * hd)


def attention_probs(q: Tensor, k: Tensor, keep: Tensor, recipe: Recipe) -> Tensor:
    """(B, nh, T, T) probabilities from (B, nh, T, hd) queries and keys and the (B, T) padding mask."""
    hd = q.shape[-1]
    divisor = {"sqrt": math.sqrt(hd), "dk": float(hd), "none": 1.0}[recipe.scale]
    scores = q @ k.transpose(-1, -2) / divisor
    if recipe.mask == "keys":
        scores = scores + (1.0 - keep[:, None, None, :].to(scores.dtype)) * torch.finfo(scores.dtype).min
    elif recipe.mask == "queries":
        scores = scores.masked_fill(keep[:, None, :, None] == 0, MASKED_QUERY)
    elif recipe.mask == "inverted":
        scores = scores.masked_fill(keep[:, None, None, :] == 1, MASKED_QUERY)
    return scores.softmax(dim=recipe.softmax_dim)


def _norms(i: int, recipe: Recipe) -> tuple[str, str]:
    p = f"bert.encoder.layer.{i}."
    return p + "attention.output.LayerNorm", p + (
        "attention.output.LayerNorm" if recipe.shared_layernorm else "output.LayerNorm"
    )


def layer_stages(
    x: Tensor, keep: Tensor, w: dict[str, Tensor], i: int, nh: int, recipe: Recipe
) -> dict[str, Tensor]:
    """One encoder layer: probabilities, attention output (before the residual), first LayerNorm, feed-forward
    (second linear's output) and the layer's output."""
    p = f"bert.encoder.layer.{i}."
    ln1 = _norms(i, recipe)[0]
    pre = recipe.layer_norm == "pre"
    attn_in = _layer_norm(x, w, ln1, recipe) if pre else x
    q, k, v = (
        split_heads(_linear(attn_in, w, p + f"attention.self.{n}"), nh, recipe.heads)
        for n in ("query", "key", "value")
    )
    probs = attention_probs(q, k, keep, recipe)
    attention = _linear(merge_heads(probs @ v, recipe.heads), w, p + "attention.output.dense")
    after_attention = attention + x if recipe.attention_residual else attention
    normed = after_attention if pre else _layer_norm(after_attention, w, ln1, recipe)
    name = f"layer.{i}."
    return {
        name + "attention.probs": probs,
        name + "attention.output": attention,
        name + "attention.layer_norm": attn_in if pre else normed,
        **feed_forward_stages(normed, w, i, recipe),
    }


def feed_forward_stages(x: Tensor, w: dict[str, Tensor], i: int, recipe: Recipe) -> dict[str, Tensor]:
    """Layer i's feed-forward block on x (the attention block's output): its second linear's output, and the
    layer's output after the residual and LayerNorm."""
    p = f"bert.encoder.layer.{i}."
    ln2 = _norms(i, recipe)[1]
    pre = recipe.layer_norm == "pre"
    ffn_in = _layer_norm(x, w, ln2, recipe) if pre else x
    activation = ACTIVATIONS[recipe.activation]
    ffn = _linear(activation(_linear(ffn_in, w, p + "intermediate.dense")), w, p + "output.dense")
    after_ffn = ffn + x if recipe.feed_forward_residual else ffn
    out = after_ffn if pre else _layer_norm(after_ffn, w, ln2, recipe)
    return {f"layer.{i}.feed_forward": ffn, f"layer.{i}.output": out}


@torch.no_grad()
def part_stages(
    w: dict[str, Tensor],
    ids: Tensor,
    part_input: Tensor,
    part: str,
    config: BertConfig,
    recipe: Recipe = Recipe(),
) -> dict[str, Tensor]:
    """The stages of one part (attention, mlp, layer) from the input the learner's part was given."""
    x = part_input.to(w["eps"].dtype)
    if part == "mlp":
        return feed_forward_stages(x, w, 0, recipe)
    return layer_stages(x, (ids != PAD).long(), w, 0, config.num_attention_heads, recipe)


def head_stages(hidden: Tensor, w: dict[str, Tensor], recipe: Recipe) -> dict[str, Tensor]:
    """Pooler (its dense layer, before tanh), MLM logits (B, T, V) and NSP logits (B, 2)."""
    stages = {}
    if recipe.pooler:
        stages["pooler"] = _linear(hidden[:, 0], w, "bert.pooler.dense")
        pooled = torch.tanh(stages["pooler"])
    else:
        pooled = hidden[:, 0]
    transformed = hidden
    if recipe.mlm_transform:
        activation = ACTIVATIONS[recipe.head_activation]
        dense = activation(_linear(hidden, w, "cls.predictions.transform.dense"))
        transformed = _layer_norm(dense, w, "cls.predictions.transform.LayerNorm", recipe)
    mlm = F.linear(transformed, w["bert.embeddings.word_embeddings.weight"], w["cls.predictions.bias"])
    nsp = _linear(pooled, w, "cls.seq_relationship")
    if recipe.log_softmax:
        mlm = mlm.log_softmax(-1)
    return {**stages, "mlm_logits": mlm, "nsp_logits": nsp}


@torch.no_grad()
def reference_stages(
    w: dict[str, Tensor], ids: Tensor, seg: Tensor, config: BertConfig, recipe: Recipe = Recipe()
) -> dict[str, Tensor]:
    """Every stage of one forward pass, in the order it is computed, under `recipe`."""
    stages = embedding_stages(w, ids, seg, recipe)
    hidden = stages.get("embeddings.layer_norm", stages["embeddings.sum"])
    keep = (ids != PAD).long()
    for i in range(config.num_hidden_layers):
        layer = layer_stages(hidden, keep, w, i, config.num_attention_heads, recipe)
        stages.update(layer)
        hidden = layer[f"layer.{i}.output"]
    if recipe.final_layernorm:
        ones = torch.ones(hidden.shape[-1], dtype=hidden.dtype)
        hidden = _layer_norm(
            hidden, {"final.weight": ones, "final.bias": ones * 0, "eps": w["eps"]}, "final", recipe
        )
    stages["encoder.output"] = hidden
    stages.update(head_stages(hidden, w, recipe))
    return stages
