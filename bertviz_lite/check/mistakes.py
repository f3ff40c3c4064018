"""The mistakes the checker can name: each a reference with one known mistake (a `Recipe` with one field changed).

To add a code: write a function that takes the current recipe (and the evidence from the learner's run) and returns
the recipe with your mistake, or None where it cannot apply, and register it with `@mistake(code, sentence)`. The
checker tries every registered mistake at the first stage that differs and keeps the one that explains the most
stages; tests/check/test_mistakes.py plants each code in a learner's file and expects it named.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from torch import Tensor

from bertviz_lite.check.reference import Recipe


@dataclass(frozen=True)
class Mistake:
    """A stable code, the sentence that names it, and whether BERT would call it an error or a design choice."""

    code: str
    message: str
    apply: Callable[[Recipe, dict[str, Tensor]], Recipe | None]
    design_choice: bool = False
    absent: str | None = None  # our parameter that, when their model has no place for it, shows this mistake


MISTAKES: list[Mistake] = []


def mistake(code: str, message: str, design_choice: bool = False, absent: str | None = None):
    """Register a function (recipe, evidence) -> recipe with that one mistake, or None where it cannot apply.

    `absent`: our parameter whose absence from their model shows the mistake without a search (no pooler weights:
    no pooler); the mistake is then applied first."""

    def register(apply: Callable[[Recipe, dict[str, Tensor]], Recipe | None]):
        MISTAKES.append(Mistake(code, message, apply, design_choice, absent))
        return apply

    return register


def _set(recipe: Recipe, **fields) -> Recipe | None:
    """The recipe with these fields, or None where it already has them."""
    changed = replace(recipe, **fields)
    return None if all(getattr(recipe, k) == v for k, v in fields.items()) else changed


@mistake(
    "learned-vs-sinusoidal",
    "Your position embeddings are the fixed sin/cos table of the Transformer paper; "
    "BERT learns a position table (a design difference, not an error).",
    design_choice=True,
)
def _sinusoidal(recipe, evidence):
    return _set(recipe, positions="sinusoidal")


@mistake(
    "no-position-embedding",
    "Your embeddings add no position embedding: without it the encoder cannot tell the order of the tokens.",
)
def _no_positions(recipe, evidence):
    return _set(recipe, positions="none")


@mistake(
    "sinusoidal-formula",
    "Your fixed position table departs from sin/cos of pos / 10000^(2i/d) "
    "(check the exponent, the 10000 and which dimensions take sin and which cos).",
)
def _own_table(recipe, evidence):
    table = evidence.get("position_table")
    return None if table is None else replace(recipe, positions="table", position_table=table)


@mistake(
    "segment-offset",
    "Your segment embedding takes segments 1 and 2 with 0 for padding (as the BERT-pytorch "
    "tutorial); BERT's token_type_ids are 0 for sentence A and 1 for sentence B.",
    design_choice=True,
)
def _segment_offset(recipe, evidence):
    return _set(recipe, segment_offset=True)


@mistake(
    "no-segment-embedding",
    "Your embeddings add no segment (token type) embedding: sentence A and sentence "
    "B look alike to the encoder.",
)
def _no_segments(recipe, evidence):
    return _set(recipe, segments=False)


@mistake(
    "scaled-embeddings",
    "Your token embeddings are multiplied by sqrt(hidden_size) before the sum, as the Transformer paper's (and "
    "the Annotated Transformer's and PyTorch's tutorial's) are; BERT adds them unscaled (a design difference, not an "
    "error, but BERT's weights expect them unscaled).",
    design_choice=True,
)
def _scaled_embeddings(recipe, evidence):
    return _set(recipe, scaled_tokens=True)


@mistake(
    "no-embedding-layernorm",
    "Your embeddings skip the LayerNorm after token + position + segment.",
    absent="bert.embeddings.LayerNorm.weight",
)
def _no_embedding_layernorm(recipe, evidence):
    return _set(recipe, embedding_layernorm=False)


@mistake("scale-dk", "Your attention divides the scores by d_k instead of sqrt(d_k).")
def _scale_dk(recipe, evidence):
    return _set(recipe, scale="dk")


@mistake("scale-dk", "Your attention does not scale the scores; BERT divides them by sqrt(d_k).")
def _unscaled(recipe, evidence):
    return _set(recipe, scale="none")


@mistake(
    "softmax-axis",
    "Your softmax runs over the queries (dim=-2); each query's row of scores must sum to 1 (dim=-1).",
)
def _softmax_axis(recipe, evidence):
    return _set(recipe, softmax_dim=-2)


@mistake("mask-ignored", "Your attention ignores the padding mask: real tokens attend to [PAD] positions.")
def _mask_ignored(recipe, evidence):
    return _set(recipe, mask="ignored")


@mistake(
    "mask-on-queries",
    "Your padding mask hides padding queries (rows) instead of padding keys (columns): "
    "mask the scores with a (B, 1, 1, T) mask.",
)
def _mask_on_queries(recipe, evidence):
    return _set(recipe, mask="queries")


@mistake(
    "mask-inverted",
    "Your padding mask is inverted: tokens attend only to [PAD] positions (mask where "
    "attention_mask == 0, not == 1).",
)
def _mask_inverted(recipe, evidence):
    return _set(recipe, mask="inverted")


@mistake(
    "heads-split",
    "Your heads are cut from the wrong axis: view (B, T, H) as (B, T, heads, head_dim), then "
    "transpose to (B, heads, T, head_dim).",
)
def _heads_no_transpose(recipe, evidence):
    return _set(recipe, heads="no-transpose")


@mistake(
    "heads-split",
    "Your heads take every n-th dimension: view (B, T, H) as (B, T, heads, head_dim), not "
    "(B, T, head_dim, heads).",
)
def _heads_inner(recipe, evidence):
    return _set(recipe, heads="inner")


@mistake(
    "pre-ln",
    "Your layers normalise before each sub-layer (pre-LN: x + f(LayerNorm(x))); BERT normalises "
    "after the residual (post-LN: LayerNorm(x + f(x))).",
)
def _pre_ln(recipe, evidence):
    return _set(recipe, layer_norm="pre")


@mistake(
    "shared-layernorm",
    "Your layer uses one LayerNorm for both sub-layers; BERT has one after attention and "
    "another after the feed-forward.",
)
def _shared_layernorm(recipe, evidence):
    return _set(recipe, shared_layernorm=True)


@mistake(
    "layernorm-formula",
    "Your LayerNorm divides by the standard deviation plus eps (unbiased, as the Annotated "
    "Transformer's does); BERT's divides by sqrt(variance + eps) with the biased variance (nn.LayerNorm).",
)
def _layer_norm_formula(recipe, evidence):
    return _set(recipe, layer_norm_formula="std")


def _layer_norm_eps(eps: float) -> Callable[[Recipe, dict[str, Tensor]], Recipe | None]:
    """The variant whose LayerNorms use `eps`, where their code passes it to F.layer_norm and no module shows it."""

    def apply(recipe, evidence):
        return _set(recipe, layer_norm_eps=eps)

    return apply


for _eps, _what in (
    (1e-5, "eps=1e-05 (PyTorch's default)"),
    (1e-6, "eps=1e-06 (the tutorials' own LayerNorm's)"),
):
    mistake(
        "layernorm-eps",
        f"Your LayerNorms use {_what} where BERT's use 1e-12 (a design difference, not an error).",
        design_choice=True,
    )(_layer_norm_eps(_eps))


@mistake(
    "no-residual",
    "Your attention block has no residual connection: add the block's input before the LayerNorm.",
)
def _no_attention_residual(recipe, evidence):
    return _set(recipe, attention_residual=False)


@mistake(
    "no-residual",
    "Your feed-forward block has no residual connection: add the block's input before the LayerNorm.",
)
def _no_feed_forward_residual(recipe, evidence):
    return _set(recipe, feed_forward_residual=False)


@mistake("gelu-tanh", "Your feed-forward uses GELU's tanh approximation; BERT's GELU is exact (erf).")
def _gelu_tanh(recipe, evidence):
    return _set(recipe, activation="gelu-tanh")


@mistake("relu", "Your feed-forward uses ReLU; BERT uses GELU.")
def _relu(recipe, evidence):
    return _set(recipe, activation="relu")


@mistake("gelu-tanh", "Your MLM head's transform uses GELU's tanh approximation; BERT's GELU is exact (erf).")
def _head_gelu_tanh(recipe, evidence):
    return _set(recipe, head_activation="gelu-tanh")


@mistake("relu", "Your MLM head's transform uses ReLU; BERT uses GELU.")
def _head_relu(recipe, evidence):
    return _set(recipe, head_activation="relu")


@mistake(
    "no-pooler",
    "Your NSP head reads the [CLS] vector directly; BERT passes it through the pooler "
    "(dense + tanh) first (a design difference, not an error).",
    design_choice=True,
    absent="bert.pooler.dense.weight",
)
def _no_pooler(recipe, evidence):
    return _set(recipe, pooler=False)


@mistake(
    "mlm-head-plain-linear",
    "Your MLM head is one linear layer; BERT's transforms first (dense, GELU, "
    "LayerNorm) and then decodes (a design difference, not an error).",
    design_choice=True,
    absent="cls.predictions.transform.dense.weight",
)
def _mlm_plain(recipe, evidence):
    return _set(recipe, mlm_transform=False)


def by_code(code: str) -> list[Mistake]:
    return [m for m in MISTAKES if m.code == code]


# Found from the learner's run itself rather than by a variant of the reference.
OBSERVED = {
    "dropout-active": "Two calls in eval mode give different numbers: your dropout stays on (use nn.Dropout "
    "modules, or F.dropout(x, p, training=self.training)).",
    "mlm-head-untied": "Your MLM decoder has its own weight matrix; BERT ties it to the word embeddings "
    "(a design difference, not an error).",
    "final-layernorm": "Your encoder ends with a LayerNorm after its last layer, as pre-LN encoders do; BERT's has "
    "none (a design difference, not an error).",
    "log-probabilities": "Your model returns log-probabilities (log_softmax) where the exercise asks for logits "
    "(a design difference, not an error).",
}
CODES = sorted({m.code for m in MISTAKES} | set(OBSERVED))
# Codes that are a difference from BERT, not an error: a model whose only findings are these matches.
DESIGN_CHOICES = frozenset(
    {m.code for m in MISTAKES if m.design_choice}
    | {"mlm-head-untied", "final-layernorm", "log-probabilities"}
)
