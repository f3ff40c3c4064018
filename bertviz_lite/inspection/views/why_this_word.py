"""The data behind "Why this word": minimal pairs, contrastive predictions and activation patching between two sentences.

Sentence A and sentence B are read as two separate inputs, each alone as segment A ("[CLS] A [SEP]"). Minimal pairs:
each sentence scored by its pseudo-log-likelihood (Salazar et al., 2020; inspection/minimal_pairs.py), every
non-special token masked in turn, the tokens where the two differ marked. Contrast and patching: A is the
clean sentence, B the corrupted one. The contrast is logit(target) − logit(foil) at the first [MASK] of A, e.g.
logit('france') − logit('italy') in "Paris is the capital of [MASK]." Each view's data has a to_frame().
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher

import numpy as np
import pandas as pd
import torch

from bertviz_lite.inspection import explore, patching
from bertviz_lite.inspection.analysis import unique_labels
from bertviz_lite.inspection.attribution import Target, mlm_scores
from bertviz_lite.inspection.minimal_pairs import builtin_minimal_pairs, token_log_probs
from bertviz_lite.inspection.views.beyond_attention import (
    Attribution,
    layer_logits,
    layer_names,
    target_label,
    token_attribution,
)
from bertviz_lite.inspection.walkthrough import Question
from bertviz_lite.limits import MAX_WORD_CHARS, check_text
from bertviz_lite.model.modeling import BertForPreTraining
from bertviz_lite.text.tokenization import MASK_TOKEN, BertTokenizer, Encoding

# What `bertviz_lite.inspection.views` offers at its top (its __init__ lists them by name).
__all__ = [
    "EXAMPLES",
    "ContrastLens",
    "PairLikelihood",
    "Patching",
    "activation_patching",
    "builtin_pair_choices",
    "contrast_attribution",
    "contrast_lens",
    "contrast_question",
    "default_candidates",
    "pair_likelihood",
    "pair_likelihood_question",
    "patching_question",
]
# Built-in clean / corrupted pairs of equal length in minilm-english's vocabulary, each with a [MASK] in A, and the
# two candidates: (A, B, target, foil).
EXAMPLES = {
    "capital: Paris / Rome": (
        "Paris is the capital of [MASK].",
        "Rome is the capital of [MASK].",
        "france",
        "italy",
    ),
    "pronoun: woman / man": (
        "The woman said that [MASK] was tired.",
        "The man said that [MASK] was tired.",
        "she",
        "he",
    ),
    "tense: yesterday / tomorrow": (
        "Yesterday she [MASK] to the market.",
        "Tomorrow she [MASK] to the market.",
        "went",
        "goes",
    ),
    "agreement across an attractor": (
        "The keys to the cabinet [MASK] lost.",
        "The key to the cabinets [MASK] lost.",
        "are",
        "is",
    ),
    # minilm-english copies the day it was given (issue 18); patching shows the last layer's heads carry it over
    "copying: Monday / Friday": (
        "Monday comes after [MASK].",
        "Friday comes after [MASK].",
        "sunday",
        "monday",
    ),
}
# The layers × positions grid runs about T²·L²/2 token-layer passes: on one thread of the busy 2-core machine 0.18 s
# at 16 tokens, 0.55 s at 32, 1.7 s at 64 (bench/explain_latency.py); longer inputs are refused rather than left to
# hang a lecture.
MAX_PATCHING_TOKENS = 64
NOISY_GAP = 0.5  # logits: clean and corrupted runs closer than this leave shares of little


def encode_alone(tokenizer: BertTokenizer, sentence: str, max_length: int = 128) -> Encoding:
    """[CLS] sentence [SEP], as a sentence A with no B."""
    if not sentence or not sentence.strip():
        raise ValueError("Both sentences are needed here: type sentence A and sentence B in the sidebar.")
    return explore.encode(tokenizer, sentence, None, max_length)


def mask_position(encoding: Encoding) -> int:
    """The first [MASK] of a sentence, where the two candidates compete."""
    for position, token in enumerate(encoding.tokens):
        if token == MASK_TOKEN:
            return position
    raise ValueError(
        f"Sentence A has no {MASK_TOKEN}: type {MASK_TOKEN} in sentence A where the two candidate words "
        "would go, or load an example."
    )


def candidate_id(tokenizer: BertTokenizer, word: str) -> int:
    """The vocabulary id of a candidate word, which must be one token of this model's vocabulary (or a piece: "##s")."""
    check_text(word or "", MAX_WORD_CHARS, "A candidate word")
    if word and word.strip() in tokenizer.vocab:
        return int(tokenizer.vocab[word.strip()])
    pieces = encode_alone(tokenizer, word or " ").tokens[1:-1] if word and word.strip() else []
    if len(pieces) != 1 or pieces[0] == "[UNK]":
        shown = " + ".join(pieces) if pieces else "nothing"
        raise ValueError(
            f"{word!r} is not one token of this model's vocabulary (it becomes {shown}); "
            "pick a word that is one token, as the model predicts one token at a [MASK]."
        )
    return int(tokenizer.convert_tokens_to_ids(pieces[0]))


def _top_ids(
    model: BertForPreTraining, tokenizer: BertTokenizer, sentence: str, position: int, max_length: int
) -> list[int]:
    encoding = encode_alone(tokenizer, sentence, max_length)
    if position >= len(encoding):
        return []
    model.eval()
    with torch.inference_mode():
        logits = model.mlm_logits(encoding.to_tensors()["input_ids"])[0, position]
    ranked = [int(i) for i in logits.argsort(descending=True)[:20]]
    words = [
        i for i in ranked if tokenizer.convert_ids_to_tokens(i).isalpha()
    ]  # whole words read best as candidates
    return words or [i for i in ranked if i not in set(tokenizer.all_special_ids)]


def default_candidates(
    model: BertForPreTraining, tokenizer: BertTokenizer, text_a: str, text_b: str, max_length: int = 128
) -> tuple[str, str]:
    """A's top prediction at its [MASK] against B's top prediction there (or A's second when they agree)."""
    position = mask_position(encode_alone(tokenizer, text_a, max_length))
    top_a = _top_ids(model, tokenizer, text_a, position, max_length)
    top_b = _top_ids(model, tokenizer, text_b, position, max_length) if text_b and text_b.strip() else []
    foil = next((i for i in top_b if i != top_a[0]), top_a[1])
    return tuple(tokenizer.convert_ids_to_tokens([top_a[0], foil]))


def contrast_target(tokenizer: BertTokenizer, encoding: Encoding, target: str, foil: str) -> Target:
    """The contrast logit(target) − logit(foil) at the sentence's first [MASK]."""
    target_id = candidate_id(tokenizer, target)
    foil_id = candidate_id(tokenizer, foil)
    if target_id == foil_id:
        raise ValueError(f"The two candidates are the same token ({target!r}); pick two different words.")
    return Target(mask_position(encoding), target_id, foil_id)


# ---------------------------------------------------------------- contrastive prediction


@dataclass(frozen=True)
class ContrastLens:
    """Both candidates' logits as the output head reads each layer's hidden state at the [MASK] (logit lens)."""

    layers: list[str]  # "embeddings", "after layer 0", …
    target: str
    foil: str
    target_logits: np.ndarray  # [L + 1]
    foil_logits: np.ndarray  # [L + 1]
    target_probs: np.ndarray  # [L + 1] P(target) from the full softmax
    foil_probs: np.ndarray  # [L + 1]
    position: int

    @property
    def difference(self) -> np.ndarray:
        """logit(target) − logit(foil) per layer, [L + 1]; the last entry is the model's answer."""
        return self.target_logits - self.foil_logits

    def to_frame(self) -> pd.DataFrame:
        """One row per layer: the two logits, their difference and the two probabilities."""
        return pd.DataFrame(
            {
                "layer": self.layers,
                f"logit_{self.target}": self.target_logits,
                f"logit_{self.foil}": self.foil_logits,
                "difference": self.difference,
                f"p_{self.target}": self.target_probs,
                f"p_{self.foil}": self.foil_probs,
            }
        )


def _sentence_trace(model: BertForPreTraining, tokenizer: BertTokenizer, sentence: str, max_length: int):
    encode_alone(tokenizer, sentence, max_length)  # a plain sentence for an empty one
    if not model.has_mlm_head:
        raise ValueError(
            "This model has no trained masked-language-model head, so it predicts no words to contrast."
        )
    return explore.trace_pair(model, tokenizer, sentence, None, max_length)


def contrast_lens(
    model: BertForPreTraining,
    tokenizer: BertTokenizer,
    text_a: str,
    target: str,
    foil: str,
    max_length: int = 128,
) -> ContrastLens:
    """logit(target) − logit(foil) at A's [MASK] as each layer's hidden state would give it (A alone)."""
    trace = _sentence_trace(model, tokenizer, text_a, max_length)
    chosen = contrast_target(tokenizer, trace.encoding, target, foil)
    logits = layer_logits(model, trace.hidden_states, chosen.position).double()  # [L + 1, V]
    probs = logits.softmax(-1).numpy()
    pair = [chosen.token_id, chosen.foil_id]
    names = tokenizer.convert_ids_to_tokens(pair)
    return ContrastLens(
        layer_names(logits.shape[0] - 1),
        names[0],
        names[1],
        logits[:, pair[0]].numpy(),
        logits[:, pair[1]].numpy(),
        probs[:, pair[0]],
        probs[:, pair[1]],
        chosen.position,
    )


def contrast_attribution(
    model: BertForPreTraining,
    tokenizer: BertTokenizer,
    text_a: str,
    target: str,
    foil: str,
    max_length: int = 128,
    steps: int = 32,
) -> Attribution:
    """Which tokens of A make the model prefer target over foil: the Beyond-attention attribution of the contrast.

    Leave-one-out, gradient × input and integrated gradients of logit(target) − logit(foil) (views.token_attribution).
    """
    trace = _sentence_trace(model, tokenizer, text_a, max_length)
    chosen = contrast_target(tokenizer, trace.encoding, target, foil)
    return token_attribution(
        trace, position=chosen.position, steps=steps, token_id=chosen.token_id, foil_id=chosen.foil_id
    )


def contrast_question(lens: ContrastLens) -> Question:
    """Which candidate will the model prefer at the [MASK]?"""
    winner, loser = (lens.target, lens.foil) if lens.difference[-1] >= 0 else (lens.foil, lens.target)
    return Question(
        prompt=f"Which word will the model prefer at the [MASK]: “{lens.target}” or “{lens.foil}”?",
        options=(lens.target, lens.foil),
        answer=winner,
        explanation=f"The model prefers “{winner}”: its logit is {abs(lens.difference[-1]):.2f} above “{loser}”'s, "
        f"P = {max(lens.target_probs[-1], lens.foil_probs[-1]):.1%} against "
        f"{min(lens.target_probs[-1], lens.foil_probs[-1]):.1%}.",
    )


# ---------------------------------------------------------------- activation patching


def aligned_pair(
    tokenizer: BertTokenizer, clean: str, corrupted: str, max_length: int = 128
) -> tuple[Encoding, Encoding]:
    """Both sentences encoded alone; patching swaps states position by position, so their lengths must agree."""
    a = encode_alone(tokenizer, clean, max_length)
    b = encode_alone(tokenizer, corrupted, max_length)
    if len(a) != len(b):
        raise ValueError(
            f"Activation patching puts the clean run's states back position by position, so both sentences must have "
            f"the same number of tokens. A has {len(a)} ({' '.join(a.tokens)}), B has {len(b)} "
            f"({' '.join(b.tokens)}). Change words for words of as many tokens, or pick an example."
        )
    if len(a) > MAX_PATCHING_TOKENS:
        raise ValueError(
            f"Patching runs the model once per layer and position, so it takes at most "
            f"{MAX_PATCHING_TOKENS} tokens; these sentences have {len(a)}."
        )
    return a, b


@dataclass(frozen=True)
class Patching:
    """The contrast recovered when each site of the corrupted run (B) is restored from the clean run (A)."""

    site: str  # patching.SITES
    rows: list[
        str
    ]  # layers: "embeddings", "after layer 0", … for the residual stream; "layer 0", … otherwise
    columns: list[str]  # positions ("Paris · rome" where the tokens differ) or "head 0", …
    metric: np.ndarray  # [rows, columns] logit(target) − logit(foil) of each patched run
    share: (
        np.ndarray
    )  # [rows, columns] (metric − corrupted) / (clean − corrupted); nan when clean = corrupted
    clean_metric: float
    corrupted_metric: float
    label: str  # "logit('france') − logit('italy') at position 6"
    differing: list[int]  # positions where the two sentences' tokens differ
    position: int  # the [MASK] where the candidates compete

    def note(self) -> str | None:
        """A warning when the two runs barely differ in the metric (little to recover, noisy shares)."""
        if abs(self.clean_metric - self.corrupted_metric) >= NOISY_GAP:
            return None
        return (
            f"A and B give nearly the same {self.label} ({self.clean_metric:+.2f} against "
            f"{self.corrupted_metric:+.2f}): there is little to recover, and the shares are noisy."
        )

    def to_frame(self) -> pd.DataFrame:
        """One row per patched run: layer, position or head, the metric and the recovered share."""
        rows, columns = np.meshgrid(np.arange(len(self.rows)), np.arange(len(self.columns)), indexing="ij")
        unit = "head" if self.site == "head" else "position"
        return pd.DataFrame(
            {
                "site": self.site,
                "layer": np.asarray(self.rows)[rows.ravel()],
                unit: np.asarray(self.columns)[columns.ravel()],
                "metric": self.metric.ravel(),
                "recovered_share": self.share.ravel(),
            }
        )


def _columns(site: str, clean: Encoding, corrupted: Encoding, num_heads: int) -> list[str]:
    if site == "head":
        return [f"head {h}" for h in range(num_heads)]
    tokens = [a if a == b else f"{a} · {b}" for a, b in zip(clean.tokens, corrupted.tokens, strict=True)]
    return unique_labels(tokens)


def activation_patching(
    model: BertForPreTraining,
    tokenizer: BertTokenizer,
    text_a: str,
    text_b: str,
    target: str,
    foil: str,
    site: str = "residual",
    max_length: int = 128,
) -> Patching:
    """Restore each site of B's run (corrupted) from A's run (clean) in turn; how much of logit(target) −
    logit(foil) at A's [MASK] comes back (patching.patching_grid)."""
    if not model.has_mlm_head:
        raise ValueError(
            "This model has no trained masked-language-model head, so there is no prediction to patch."
        )
    clean_encoding, corrupted_encoding = aligned_pair(tokenizer, text_a, text_b, max_length)
    chosen = contrast_target(tokenizer, clean_encoding, target, foil)
    clean = patching.record_run(model, clean_encoding.to_tensors()["input_ids"])
    corrupted = patching.record_run(model, corrupted_encoding.to_tensors()["input_ids"])
    with torch.no_grad():
        ends = [float(mlm_scores(model, run.final[:, chosen.position], chosen)) for run in (clean, corrupted)]
    grid = patching.patching_grid(model, clean, corrupted, site, chosen)
    layers = model.config.num_hidden_layers
    rows = layer_names(layers) if site == "residual" else [f"layer {i}" for i in range(layers)]
    differing = [
        i
        for i, (a, b) in enumerate(zip(clean_encoding.tokens, corrupted_encoding.tokens, strict=True))
        if a != b
    ]
    return Patching(
        site,
        rows,
        _columns(site, clean_encoding, corrupted_encoding, model.config.num_attention_heads),
        grid,
        patching.recovered_share(grid, *ends),
        ends[0],
        ends[1],
        target_label(tokenizer, chosen),
        differing,
        chosen.position,
    )


def patching_question(data: Patching) -> Question:
    """From which layer on does restoring the [MASK] position alone bring back most of the clean answer?"""
    column = data.share[:, data.position]
    reached = [i for i, share in enumerate(column) if share >= 0.5]
    never = "never (not even after the last layer)"
    answer = data.rows[reached[0]] if reached else never
    return Question(
        prompt=f"Put A's hidden state back into B's run at the {MASK_TOKEN} position only: from which layer on does "
        "that bring back at least half of A's answer?",
        options=(*data.rows, never),
        answer=answer,
        explanation=(
            f"From {answer} on: before that the {MASK_TOKEN} position does not yet hold what tells the "
            "sentences apart, it still sits at the tokens that differ."
            if reached
            else f"Restoring the {MASK_TOKEN} position alone never brings back half of it."
        ),
    )


# ---------------------------------------------------------------- minimal pairs

# Every token is scored by its own masked copy of the sentence, all in one batch: 0.1-0.3 s at 15 tokens on one
# thread (bench/explain_latency.py), T² token passes, so long sentences are refused.
MAX_PLL_TOKENS = 128


def differing_tokens(a: list[str], b: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """[len(a)] and [len(b)] bool: the tokens outside the runs the two lists share (difflib's alignment)."""
    differs_a = np.ones(len(a), dtype=bool)
    differs_b = np.ones(len(b), dtype=bool)
    for block in SequenceMatcher(a=a, b=b, autojunk=False).get_matching_blocks():
        differs_a[block.a : block.a + block.size] = False
        differs_b[block.b : block.b + block.size] = False
    return differs_a, differs_b


@dataclass(frozen=True)
class PairLikelihood:
    """Both sentences' tokens, each token's log P with only itself masked, and where the sentences differ."""

    tokens: tuple[list[str], list[str]]  # A's and B's non-special tokens
    log_probs: tuple[np.ndarray, np.ndarray]  # natural log, one per token
    differs: tuple[np.ndarray, np.ndarray]  # bool, one per token

    @property
    def pll(self) -> tuple[float, float]:
        """The two pseudo-log-likelihoods (the sums of the tokens' log P)."""
        return float(self.log_probs[0].sum()), float(self.log_probs[1].sum())

    @property
    def preferred(self) -> str:
        """ "A" or "B": the sentence with the higher pseudo-log-likelihood."""
        return "A" if self.pll[0] >= self.pll[1] else "B"

    def to_frame(self) -> pd.DataFrame:
        """One row per token: sentence, index, token, log_prob, differs."""
        parts = [
            pd.DataFrame(
                {
                    "sentence": name,
                    "index": np.arange(len(tokens)),
                    "token": tokens,
                    "log_prob": log_probs,
                    "differs": differs,
                }
            )
            for name, tokens, log_probs, differs in zip(
                "AB", self.tokens, self.log_probs, self.differs, strict=True
            )
        ]
        return pd.concat(parts, ignore_index=True)


def _scored(model: BertForPreTraining, tokenizer: BertTokenizer, sentence: str, max_length: int, name: str):
    encoding = encode_alone(tokenizer, sentence, max_length)
    if MASK_TOKEN in encoding.tokens:
        raise ValueError(
            f"A minimal pair scores whole sentences, and sentence {name} has a {MASK_TOKEN} in it: type the "
            "word there, or load a built-in pair."
        )
    if len(encoding) > MAX_PLL_TOKENS:
        raise ValueError(
            f"The pseudo-log-likelihood masks each token in turn, so it takes at most {MAX_PLL_TOKENS} "
            f"tokens; this sentence has {len(encoding)}."
        )
    scored = token_log_probs(model, tokenizer, sentence)
    return [token for token, _ in scored], np.asarray([log_prob for _, log_prob in scored], dtype=np.float64)


def pair_likelihood(
    model: BertForPreTraining, tokenizer: BertTokenizer, text_a: str, text_b: str, max_length: int = 128
) -> PairLikelihood:
    """Sentence A against sentence B, each alone: every token's log P with only itself masked."""
    if not model.has_mlm_head:
        raise ValueError(
            "This model has no trained masked-language-model head, so it cannot score sentences."
        )
    (tokens_a, scores_a), (tokens_b, scores_b) = (
        _scored(model, tokenizer, s, max_length, name) for s, name in ((text_a, "A"), (text_b, "B"))
    )
    return PairLikelihood((tokens_a, tokens_b), (scores_a, scores_b), differing_tokens(tokens_a, tokens_b))


def pair_likelihood_question(data: PairLikelihood) -> Question:
    """Which sentence will the model find more natural?"""
    gap = abs(data.pll[0] - data.pll[1])
    return Question(
        prompt="Which sentence will the model find more natural (the higher pseudo-log-likelihood)?",
        options=("A", "B"),
        answer=data.preferred,
        explanation=f"The model prefers {data.preferred}: PLL(A) = {data.pll[0]:.2f}, PLL(B) = {data.pll[1]:.2f}, "
        f"{gap:.2f} nats apart.",
    )


def _blanked(a: str, b: str) -> str:
    """ "The key to the cabinets ___ on the table. (is / are)": the words the two share, a blank where they differ."""
    words_a = a.split()
    words_b = b.split()
    shared = []
    differing = ([], [])
    for tag, i1, i2, j1, j2 in SequenceMatcher(a=words_a, b=words_b, autojunk=False).get_opcodes():
        if tag == "equal":
            shared += words_a[i1:i2]
        else:
            shared.append("___")
            differing[0].append(" ".join(words_a[i1:i2]) or "–")
            differing[1].append(" ".join(words_b[j1:j2]) or "–")
    return f"{' '.join(shared)} ({', '.join(differing[0])} / {', '.join(differing[1])})"


def builtin_pair_choices() -> dict[str, tuple[str, str]]:
    """The built-in minimal pairs (inspection/minimal_pairs.py) by label, as (A, B).

    Every other pair puts the ungrammatical sentence first, so "A" is not always the answer.
    """
    choices = {}
    for index, pair in enumerate(builtin_minimal_pairs()):
        a, b = (pair.good, pair.bad) if index % 2 == 0 else (pair.bad, pair.good)
        choices[f"{pair.phenomenon.replace('_', ' ')}: {_blanked(a, b)}"] = (a, b)
    return choices
