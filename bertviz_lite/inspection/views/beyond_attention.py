"""The data behind the explanation views: token attribution against leave-one-out, head knock-out, the logit lens.

Each takes a trace (explore.PairTrace, whose model runs again) plus the prediction to explain: an MLM position,
or position=None for the NSP decision. Each view's data has a to_frame() for its CSV download.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from bertviz_lite.inspection import analysis, attribution
from bertviz_lite.inspection.attribution import Target
from bertviz_lite.inspection.explore import PairTrace
from bertviz_lite.inspection.views.predictions import (
    default_mask_position,
    is_next_probability,
    mask_token_positions,
    maskable_positions,
)
from bertviz_lite.model.modeling import BertForPreTraining
from bertviz_lite.text.tokenization import MASK_TOKEN, BertTokenizer, Encoding

# What `bertviz_lite.inspection.views` offers at its top (its __init__ lists them by name).
__all__ = [
    "Attribution",
    "HeadKnockout",
    "LogitLens",
    "default_choice",
    "explain_choices",
    "head_knockout",
    "logit_lens",
    "token_attribution",
]

NSP_LABELS = ("IsNext", "NotNext")
LOO = "leave-one-out"
# Leave-one-out runs the model once per token and IG steps + 1 times with gradients: about 8 s on one CPU
# thread at 128 tokens (bench/explain_latency.py), so longer inputs are refused rather than left to hang.
MAX_ATTRIBUTION_TOKENS = 128
METHODS = (
    LOO,
    "attention (last layer)",
    "rollout",
    "norm-weighted",
    "gradient × input",
    "integrated gradients",
)


def explain_choices(encoding: Encoding, model: BertForPreTraining) -> list[int | None]:
    """What can be explained: ordinary tokens' positions (with an MLM head), then None for NSP (with its head and a B)."""
    positions = maskable_positions(encoding) if model.has_mlm_head else []
    has_b = any(s == 1 for s in encoding.sequence_ids if s is not None)
    return [*positions, *([None] if model.has_nsp_head and has_b else [])]


def default_choice(encoding: Encoding, choices: Sequence[int | None]) -> int | None:
    """A [MASK] typed in the text, else the Predictions page's default token, else the first choice (NSP, say)."""
    for candidate in [*mask_token_positions(encoding.tokens), default_mask_position(encoding)]:
        if candidate is not None and candidate in choices:
            return candidate
    return choices[0] if choices else None


def explained_masks(encoding: Encoding, position: int | None) -> tuple[int, ...]:
    """Where to put [MASK] to explain `position`: there, unless the text holds one; nowhere for NSP (None)."""
    if position is None or encoding.tokens[position] == MASK_TOKEN:
        return ()
    return (position,)


def _needs_head(model: BertForPreTraining, position: int | None) -> None:
    if position is None and not model.has_nsp_head:
        raise ValueError(
            "This model has no trained next-sentence (NSP) head, so there is no NSP decision to explain."
        )
    if position is not None and not model.has_mlm_head:
        raise ValueError(
            "This model has no trained masked-language-model head, so it predicts no words to explain."
        )


def explained_target(
    mlm_logits, position: int | None, token_id: int | None = None, foil_id: int | None = None
) -> Target:
    """The model's top prediction at an MLM position (or the NSP decision when position is None).

    token_id / foil_id: explain that token instead, or the contrast logit(token_id) − logit(foil_id).
    """
    if position is None:
        return Target(None)
    if token_id is None:
        token_id = int(np.argmax(np.asarray(mlm_logits)[position]))
    return Target(position, token_id, foil_id)


def target_label(tokenizer: BertTokenizer, target: Target) -> str:
    """ "log P(IsNext)", "log P('capital') at position 4" or "logit('he') − logit('she') at position 4"."""
    if target.position is None:
        return "log P(IsNext)"
    token = tokenizer.convert_ids_to_tokens([target.token_id])[0]
    if target.foil_id is not None:
        foil = tokenizer.convert_ids_to_tokens([target.foil_id])[0]
        return f"logit({token!r}) − logit({foil!r}) at position {target.position}"
    return f"log P({token!r}) at position {target.position}"


def _inputs(input_ids, segments) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    ids = torch.as_tensor(np.asarray(input_ids), dtype=torch.long)[None]
    return ids, torch.as_tensor(np.asarray(segments), dtype=torch.long)[None], torch.ones_like(ids)


# ---------------------------------------------------------------- attribution


@dataclass(frozen=True)
class Attribution:
    """Every method's score per token for one prediction, and each one's Spearman correlation to leave-one-out."""

    tokens: list[str]  # [T]
    scores: dict[str, np.ndarray]  # METHODS -> [T]
    correlation: dict[str, float]  # method -> Spearman ρ with leave-one-out over the compared positions
    compared: np.ndarray  # [T] bool: the positions correlated (not the explained [MASK] itself)
    label: str  # what is explained, e.g. "log P('capital') at position 4"
    score: float  # f(input)
    baseline_score: float  # f(every token [MASK])
    completeness_error: float  # |Σ IG − (f(x) − f(baseline))| / |f(x) − f(baseline)|
    steps: int

    @property
    def integrated_gradients_total(self) -> float:
        """Σ IG over the tokens: completeness says it equals f(input) − f(baseline)."""
        return float(self.scores["integrated gradients"].sum())

    def completeness_note(self) -> str:
        """One sentence checking the integrated gradients: their sum against f(input) − f(baseline)."""
        gap = self.score - self.baseline_score
        return (
            f"Completeness: the integrated gradients add up to {self.integrated_gradients_total:.4f}; "
            f"f(input) − f(baseline) = {self.score:.4f} − ({self.baseline_score:.4f}) = {gap:.4f} "
            f"(off by {self.completeness_error:.2%} with {self.steps} steps)."
        )

    def to_frame(self) -> pd.DataFrame:
        """One row per token: index, token, compared, then one column per method."""
        frame = pd.DataFrame(
            {"index": np.arange(len(self.tokens)), "token": self.tokens, "compared": self.compared}
        )
        for method in METHODS:
            frame[method] = self.scores[method]
        return frame

    def correlation_frame(self) -> pd.DataFrame:
        """method, Spearman ρ with leave-one-out."""
        return pd.DataFrame(
            {"method": list(self.correlation), "spearman_with_leave_one_out": list(self.correlation.values())}
        )


def _attention_scores(attentions, values, model: BertForPreTraining, row: int) -> dict[str, np.ndarray]:
    """What the attention-based methods give the explained row's keys."""
    last = len(attentions) - 1
    weight = attribution.attention_output_weights(model)[last]
    _, summed = attribution.norm_weighted_attention(attentions[last], values[last], weight)
    return {
        "attention (last layer)": np.asarray(attentions[last], dtype=np.float64)[:, row].mean(axis=0),
        "rollout": analysis.attention_rollout(attentions)[-1][row],
        "norm-weighted": summed[row],
    }


def token_attribution(
    trace: PairTrace,
    position: int | None = None,
    steps: int = 32,
    token_id: int | None = None,
    foil_id: int | None = None,
) -> Attribution:
    """Leave-one-out ([MASK] in place of each token, the model run again) against attention, rollout, norms and gradients.

    Integrated gradients run on the summed input embeddings from a baseline with every token [MASK]
    (positions and segments kept), over `steps` trapezoid intervals. The explained quantity is the top
    prediction's log-probability, token_id's, or with a foil_id the contrast logit(token_id) − logit(foil_id).
    """
    model = trace.model
    tokenizer = trace.tokenizer
    tokens = trace.tokens
    _needs_head(model, position)
    if len(tokens) > MAX_ATTRIBUTION_TOKENS:
        raise ValueError(
            f"Attribution runs the model once per token, so it takes at most {MAX_ATTRIBUTION_TOKENS} "
            f"tokens; this input has {len(tokens)}. Lower the max length or shorten the sentences."
        )
    target = explained_target(trace.mlm_logits, position, token_id, foil_id)
    ids, segment_ids, mask = _inputs(trace.input_ids, trace.segments)
    loo, _ = attribution.leave_one_out(model, ids, segment_ids, mask, target, tokenizer.mask_token_id)
    baseline = torch.full_like(ids, tokenizer.mask_token_id)
    grads = attribution.integrated_gradients(model, ids, segment_ids, mask, target, baseline, steps)
    scores = {
        LOO: loo,
        **_attention_scores(trace.attentions, trace.values, model, 0 if position is None else position),
        "gradient × input": grads.gradient_x_input,
        "integrated gradients": grads.integrated_gradients,
    }
    compared = np.ones(len(tokens), dtype=bool)
    if position is not None:
        compared[position] = False
    correlation = {m: attribution.spearman(loo[compared], scores[m][compared]) for m in METHODS[1:]}
    return Attribution(
        list(tokens),
        scores,
        correlation,
        compared,
        target_label(tokenizer, target),
        grads.score,
        grads.baseline_score,
        grads.completeness_error,
        steps,
    )


# ---------------------------------------------------------------- head knock-out


@dataclass(frozen=True)
class HeadKnockout:
    """Predictions before and after zeroing some heads: MLM candidates at one position, and P(IsNext)."""

    heads: tuple[str, ...]  # "L{layer}H{head}"
    position: int | None
    candidates: list[str]  # the top-k tokens before and after, best first
    before: np.ndarray  # [C] probabilities with every head
    after: np.ndarray  # [C] probabilities with the heads knocked out
    nsp_before: float | None  # P(IsNext); None without an NSP head
    nsp_after: float | None

    def to_frame(self) -> pd.DataFrame:
        """prediction, before, after: the MLM candidates, then P(IsNext)."""
        rows = [
            {"prediction": f"MLM {self.position}: {t}", "before": b, "after": a}
            for t, b, a in zip(self.candidates, self.before, self.after, strict=True)
        ]
        if self.nsp_before is not None:
            rows.append({"prediction": "NSP: IsNext", "before": self.nsp_before, "after": self.nsp_after})
        return pd.DataFrame(rows, columns=["prediction", "before", "after"]).assign(
            knocked_out=" ".join(self.heads)
        )


def _candidates(before: np.ndarray, after: np.ndarray, k: int) -> np.ndarray:
    """Ids of the top-k before, then those of the top-k after not yet listed."""
    ids = [int(i) for i in np.argsort(-before, kind="stable")[:k]]
    return np.asarray(ids + [int(i) for i in np.argsort(-after, kind="stable")[:k] if int(i) not in ids])


def head_knockout(
    trace: PairTrace, heads: Sequence[str] = (), position: int | None = None, k: int = 5
) -> HeadKnockout:
    """MLM top-k at position and P(IsNext), with every head and with the named heads' attention multiplied by 0."""
    model = trace.model
    tokenizer = trace.tokenizer
    mlm_logits = trace.mlm_logits
    nsp_logits = trace.nsp_logits
    if position is not None:
        _needs_head(model, position)
    config = model.config
    mask = attribution.head_mask(heads, config.num_hidden_layers, config.num_attention_heads)
    ids, segment_ids, attention_mask = _inputs(trace.input_ids, trace.segments)
    model.eval()
    knocked = model.trace(ids, segment_ids, attention_mask, head_mask=mask)
    nsp_after = None if nsp_logits is None else is_next_probability(knocked.nsp_logits[0].numpy())
    candidates = []
    before = np.zeros(0)
    after = np.zeros(0)
    if position is not None:
        before = analysis.softmax(np.asarray(mlm_logits)[position])
        after = analysis.softmax(knocked.mlm_logits[0, position].numpy())
        ids_shown = _candidates(before, after, k)
        candidates = tokenizer.convert_ids_to_tokens(ids_shown.tolist())
        before = before[ids_shown]
        after = after[ids_shown]
    return HeadKnockout(
        tuple(heads), position, list(candidates), before, after, is_next_probability(nsp_logits), nsp_after
    )


# ---------------------------------------------------------------- logit lens


def layer_names(num_layers: int) -> list[str]:
    """The hidden states' names: "embeddings", "after layer 0", … (layers counted from 0, as on the Attention page)."""
    return ["embeddings", *(f"after layer {i}" for i in range(num_layers))]


@dataclass(frozen=True)
class LogitLens:
    """The output head applied to every layer's hidden state: its top predictions and the final answer's probability."""

    layers: list[str]  # "embeddings", "after layer 0", … (layers counted from 0, as on the Attention page)
    top_tokens: list[list[str]]  # [L + 1][k]
    top_probs: np.ndarray  # [L + 1, k]
    answer: str  # the final layer's top prediction
    answer_probs: np.ndarray  # [L + 1]
    position: int | None  # None: the NSP head on each layer's pooled [CLS]

    def to_frame(self) -> pd.DataFrame:
        """One row per layer: layer, P(answer), then rank_1 … rank_k token and probability."""
        frame = pd.DataFrame({"layer": self.layers, f"p_{self.answer}": self.answer_probs})
        for rank in range(self.top_probs.shape[1]):
            frame[f"rank_{rank + 1}"] = [tokens[rank] for tokens in self.top_tokens]
            frame[f"p_rank_{rank + 1}"] = self.top_probs[:, rank]
        return frame


@torch.no_grad()
def layer_logits(model: BertForPreTraining, hidden_states, position: int | None) -> torch.Tensor:
    """[L + 1, V] MLM logits at position, or [L + 1, 2] NSP logits, from each layer's hidden state [L + 1, T, H]."""
    hidden = torch.as_tensor(np.asarray(hidden_states), dtype=torch.float32)  # [L + 1, T, H]
    if position is None:
        return model.cls.seq_relationship(model.bert.pooler(hidden))
    return model.cls.predictions(hidden[:, position])


def _layer_probabilities(model: BertForPreTraining, hidden_states, position: int | None) -> np.ndarray:
    """[L + 1, V] MLM probabilities at position, or [L + 1, 2] NSP probabilities, from each layer's hidden state."""
    return layer_logits(model, hidden_states, position).softmax(-1).double().numpy()


def logit_lens(trace: PairTrace, position: int | None = None, k: int = 5) -> LogitLens:
    """What each layer would predict if the MLM head (or the pooler and NSP head) read it directly."""
    model = trace.model
    tokenizer = trace.tokenizer
    _needs_head(model, position)
    probs = _layer_probabilities(model, trace.hidden_states, position)
    top = np.argsort(-probs, axis=-1, kind="stable")[:, : min(k, probs.shape[1])]
    names = NSP_LABELS if position is None else None
    top_tokens = [
        [names[i] for i in row] if names else tokenizer.convert_ids_to_tokens(row.tolist()) for row in top
    ]
    answer = int(top[-1, 0])
    return LogitLens(
        layer_names(probs.shape[0] - 1),
        top_tokens,
        np.take_along_axis(probs, top, axis=-1),
        top_tokens[-1][0],
        probs[:, answer],
        position,
    )
