"""Beyond attention weights: norm-weighted attention, token attribution checked against leave-one-out, head masks.

Torch and numpy in, numpy out; no Streamlit. Shapes: L layers, nh heads, T tokens, H hidden size, hd head size,
N a batch of variants of one input. The explained quantity ("target") is a log-probability: of one token at
one MLM position, or of IsNext from the NSP head; or a contrast: logit(token) − logit(foil) at one MLM position
("why *he* rather than *she*?"), which equals log P(token) − log P(foil).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from bertviz_lite.model.attention_masks import additive_mask
from bertviz_lite.model.modeling import BertForPreTraining

HEAD_NAME = re.compile(r"^L(\d+)H(\d+)$")
MAX_BATCH_TOKENS = 2048  # tokens per batch of IG points or leave-one-out copies: bounds memory at 512 tokens


@dataclass(frozen=True)
class Target:
    """What is explained: log P(token_id) at an MLM position, or log P(IsNext) when position is None.

    With a foil_id, the contrast logit(token_id) − logit(foil_id) at the position instead.
    """

    position: int | None
    token_id: int | None = None
    foil_id: int | None = None

    def __post_init__(self):
        if self.position is not None and self.token_id is None:
            raise ValueError("an MLM target needs the token whose probability is explained")
        if self.foil_id is not None and (self.position is None or self.foil_id == self.token_id):
            raise ValueError("a contrast needs an MLM position and two different candidate tokens")


# ---------------------------------------------------------------- norm-weighted attention


def attention_output_weights(model: BertForPreTraining) -> np.ndarray:
    """Each layer's attention output dense weight W_O, [L, H, H] (out, in), as numpy."""
    return np.stack(
        [layer.attention.output.dense.weight.detach().float().numpy() for layer in model.bert.encoder.layer]
    )


def transformed_values(values, output_weight) -> np.ndarray:
    """f^h(x_j) = W_O[:, head h's slice] · v^h_j for one layer (value bias in, output bias out): [nh, T, H].

    values [nh, T, hd] are the layer's value vectors (bias included, as the trace keeps them).
    """
    values = np.asarray(values, dtype=np.float64)
    num_heads, _, head_dim = values.shape
    weight = np.asarray(output_weight, dtype=np.float64)
    return np.einsum("htd,ohd->hto", values, weight.reshape(weight.shape[0], num_heads, head_dim))


def norm_weighted_attention(probs, values, output_weight) -> tuple[np.ndarray, np.ndarray]:
    """Kobayashi et al. (2020) for one layer: per head ‖α^h_ij f^h(x_j)‖ [nh, T, T], and over heads
    ‖Σ_h α^h_ij f^h(x_j)‖ [T, T].

    The head-summed norm is the norm of the summed vectors (what the layer adds to token i from token j),
    computed exactly through each key's Gram matrix of its heads' vectors.
    """
    probs = np.asarray(probs, dtype=np.float64)  # [nh, T, T]
    vectors = transformed_values(values, output_weight)  # [nh, T, H]
    per_head = probs * np.linalg.norm(vectors, axis=-1)[:, None, :]
    gram = np.einsum("htd,gtd->thg", vectors, vectors)  # [T(key), nh, nh]
    by_key = probs.transpose(2, 0, 1)  # [T(key), nh, T(query)]
    squared = (by_key * np.matmul(gram, by_key)).sum(axis=1)  # [T(key), T(query)]
    return per_head, np.sqrt(np.clip(squared, 0.0, None)).T


# ---------------------------------------------------------------- a differentiable forward from embeddings


def summed_embeddings(model: BertForPreTraining, input_ids: Tensor, token_type_ids: Tensor) -> Tensor:
    """Token + position + segment embeddings, before LayerNorm: (N, T, H)."""
    positions = torch.arange(input_ids.shape[1], device=input_ids.device)
    return model.bert.embeddings.summed(input_ids, token_type_ids, positions)


def target_scores(
    model: BertForPreTraining, summed: Tensor, attention_mask: Tensor, target: Target
) -> Tensor:
    """The target's log-probability for each of N summed-embedding inputs (N, T, H) -> (N,); differentiable."""
    hidden = model.bert.embeddings.LayerNorm(summed)
    mask = attention_mask.expand(summed.shape[0], -1)
    hidden = model.bert.encoder(hidden, additive_mask(mask, hidden.dtype))
    if target.position is None:
        return F.log_softmax(model.cls.seq_relationship(model.bert.pooler(hidden)), dim=-1)[:, 0]
    return mlm_scores(model, hidden[:, target.position], target)


def mlm_scores(model: BertForPreTraining, hidden: Tensor, target: Target) -> Tensor:
    """An MLM target's score (N,) from the hidden states (N, H) at its position; differentiable.

    A contrast projects onto its two candidates only (the softmax's normaliser cancels in the difference).
    """
    head = model.cls.predictions
    transformed = head.transform(hidden)
    if target.foil_id is None:
        return F.log_softmax(F.linear(transformed, head.decoder.weight, head.bias), dim=-1)[
            :, target.token_id
        ]
    pair = [target.token_id, target.foil_id]
    logits = F.linear(transformed, head.decoder.weight[pair], head.bias[pair])  # (N, 2)
    return logits[:, 0] - logits[:, 1]


def _chunks(count: int, tokens: int) -> list[slice]:
    size = max(1, MAX_BATCH_TOKENS // max(tokens, 1))
    return [slice(start, min(start + size, count)) for start in range(0, count, size)]


# ---------------------------------------------------------------- gradients


@dataclass(frozen=True)
class GradientAttribution:
    """Integrated gradients and gradient × input per token, with what completeness needs."""

    integrated_gradients: np.ndarray  # [T], sums to score - baseline_score (up to the quadrature error)
    gradient_x_input: np.ndarray  # [T] ∇f(x) · x per token
    score: float  # f(x)
    baseline_score: float  # f(baseline)
    steps: int

    @property
    def completeness_error(self) -> float:
        """|Σ IG − (f(x) − f(baseline))| relative to |f(x) − f(baseline)|."""
        delta = self.score - self.baseline_score
        return abs(float(self.integrated_gradients.sum()) - delta) / max(abs(delta), 1e-12)


def trapezoid_weights(steps: int) -> np.ndarray:
    """Weights of the trapezoid rule on steps equal intervals of [0, 1]: steps + 1 numbers summing to 1."""
    if steps < 1:
        raise ValueError(f"integrated gradients needs at least 1 step, got {steps}")
    weights = np.full(steps + 1, 1.0 / steps)
    weights[[0, -1]] /= 2
    return weights


def integrated_gradients(
    model: BertForPreTraining,
    input_ids: Tensor,
    token_type_ids: Tensor,
    attention_mask: Tensor,
    target: Target,
    baseline_ids: Tensor,
    steps: int = 32,
) -> GradientAttribution:
    """Integrated gradients (Sundararajan et al., 2017) on the summed input embeddings, trapezoid rule.

    The path runs from the baseline's summed embeddings (baseline_ids with the same positions and segments)
    to the input's; gradient × input comes free from the gradient at the input (α = 1).
    """
    model.eval()
    with torch.no_grad():
        x = summed_embeddings(model, input_ids, token_type_ids)  # (1, T, H)
        baseline = summed_embeddings(model, baseline_ids, token_type_ids)
    alphas = torch.linspace(0, 1, steps + 1, dtype=x.dtype)
    weights = torch.as_tensor(trapezoid_weights(steps), dtype=x.dtype)
    total = torch.zeros_like(x[0])
    scores = []
    last_grad = None
    for part in _chunks(steps + 1, x.shape[1]):
        points = (baseline + alphas[part, None, None] * (x - baseline)).requires_grad_(True)  # (n, T, H)
        with torch.enable_grad():
            values = target_scores(model, points, attention_mask, target)
            (grads,) = torch.autograd.grad(values.sum(), points)
        total += (weights[part, None, None] * grads).sum(0)
        scores.append(values.detach())
        last_grad = grads[-1]
    scores = torch.cat(scores)
    ig = ((x[0] - baseline[0]) * total).sum(-1)
    grad_x_input = (x[0] * last_grad).sum(-1)
    return GradientAttribution(
        ig.double().numpy(), grad_x_input.double().numpy(), float(scores[-1]), float(scores[0]), steps
    )


# ---------------------------------------------------------------- leave one out


@torch.no_grad()
def leave_one_out(
    model: BertForPreTraining,
    input_ids: Tensor,
    token_type_ids: Tensor,
    attention_mask: Tensor,
    target: Target,
    replacement_id: int,
) -> tuple[np.ndarray, float]:
    """f(x) − f(x with token j replaced by replacement_id) for every j, each a new forward pass: ([T], f(x)).

    Positions that already hold the replacement give 0 (the input is unchanged there).
    """
    model.eval()
    length = input_ids.shape[1]
    variants = input_ids.repeat(length + 1, 1)  # row j replaces token j; the last row is the input itself
    variants[torch.arange(length), torch.arange(length)] = replacement_id
    scores = []
    for part in _chunks(length + 1, length):
        rows = variants[part]
        summed = summed_embeddings(model, rows, token_type_ids.expand_as(rows))
        scores.append(target_scores(model, summed, attention_mask, target))
    scores = torch.cat(scores).double()
    return (scores[-1] - scores[:-1]).numpy(), float(scores[-1])


# ---------------------------------------------------------------- rank correlation


def rank(values) -> np.ndarray:
    """Ranks 0..n-1 of values, ties given their average rank (as scipy.stats.rankdata, minus 1)."""
    values = np.asarray(values, dtype=np.float64)
    order = np.argsort(values, kind="stable")
    ranks = np.empty(values.size)
    ranks[order] = np.arange(values.size)
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    return (np.bincount(inverse, weights=ranks) / counts)[inverse]


def spearman(a, b) -> float:
    """Spearman's rank correlation of two equal-length vectors; nan when either is constant."""
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    if a.size != b.size:
        raise ValueError(f"cannot correlate {a.size} values with {b.size}")
    ra = rank(a) - (a.size - 1) / 2
    rb = rank(b) - (b.size - 1) / 2
    denominator = float(np.sqrt((ra**2).sum() * (rb**2).sum()))
    return float((ra * rb).sum() / denominator) if denominator > 0 else float("nan")


# ---------------------------------------------------------------- head masks


def head_name(layer: int, head: int) -> str:
    """ "L{layer}H{head}", 0-based as everywhere in the app."""
    return f"L{layer}H{head}"


def head_mask(names: Sequence[str], num_layers: int, num_heads: int) -> Tensor:
    """A (layers, heads) mask of ones with 0 at every head named "L{layer}H{head}"; a ValueError names a bad one."""
    mask = torch.ones(num_layers, num_heads)
    for name in names:
        match = HEAD_NAME.match(name)
        if not match or int(match[1]) >= num_layers or int(match[2]) >= num_heads:
            raise ValueError(
                f"{name!r} is not a head of this model: use L0H0 … L{num_layers - 1}H{num_heads - 1}"
            )
        mask[int(match[1]), int(match[2])] = 0.0
    return mask
