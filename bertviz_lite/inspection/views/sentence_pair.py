"""The data behind the minimal-pairs view: which of two sentences the model finds more natural, token by token.

Each sentence is scored alone by its pseudo-log-likelihood (Salazar et al., 2020; inspection/minimal_pairs.py):
every non-special token masked in turn, log P(the token) summed. The tokens where the two sentences differ are
marked, so the place that decides lights up.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher

import numpy as np
import pandas as pd

from bertviz_lite.inspection.minimal_pairs import builtin_minimal_pairs, token_log_probs
from bertviz_lite.inspection.views.contrast import encode_alone
from bertviz_lite.inspection.walkthrough import Question
from bertviz_lite.model.modeling import BertForPreTraining
from bertviz_lite.text.tokenization import MASK_TOKEN, BertTokenizer

# What `bertviz_lite.inspection.views` offers at its top (its __init__ lists them by name).
__all__ = ["PairLikelihood", "builtin_pair_choices", "pair_likelihood", "pair_likelihood_question"]
# Every token is scored by its own masked copy of the sentence, all in one batch: 0.1-0.3 s at 15 tokens on one
# thread (bench/explain_latency.py), T² token passes, so long sentences are refused.
MAX_PLL_TOKENS = 128


def differing_tokens(a: list[str], b: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """[len(a)] and [len(b)] bool: the tokens outside the runs the two lists share (difflib's alignment)."""
    differs_a, differs_b = np.ones(len(a), dtype=bool), np.ones(len(b), dtype=bool)
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
        """"A" or "B": the sentence with the higher pseudo-log-likelihood."""
        return "A" if self.pll[0] >= self.pll[1] else "B"

    def to_frame(self) -> pd.DataFrame:
        """One row per token: sentence, index, token, log_prob, differs."""
        parts = [pd.DataFrame({"sentence": name, "index": np.arange(len(tokens)), "token": tokens,
                               "log_prob": log_probs, "differs": differs})
                 for name, tokens, log_probs, differs in zip("AB", self.tokens, self.log_probs, self.differs, strict=True)]
        return pd.concat(parts, ignore_index=True)


def _scored(model: BertForPreTraining, tokenizer: BertTokenizer, sentence: str, max_length: int, name: str):
    encoding = encode_alone(tokenizer, sentence, max_length)
    if MASK_TOKEN in encoding.tokens:
        raise ValueError(f"A minimal pair scores whole sentences, and sentence {name} has a {MASK_TOKEN} in it: type the "
                         "word there, or load a built-in pair.")
    if len(encoding) > MAX_PLL_TOKENS:
        raise ValueError(f"The pseudo-log-likelihood masks each token in turn, so it takes at most {MAX_PLL_TOKENS} "
                         f"tokens; this sentence has {len(encoding)}.")
    scored = token_log_probs(model, tokenizer, sentence)
    return [token for token, _ in scored], np.asarray([log_prob for _, log_prob in scored], dtype=np.float64)


def pair_likelihood(model: BertForPreTraining, tokenizer: BertTokenizer, text_a: str, text_b: str,
                    max_length: int = 128) -> PairLikelihood:
    """Sentence A against sentence B, each alone: every token's log P with only itself masked."""
    if not model.has_mlm_head:
        raise ValueError("This model has no trained masked-language-model head, so it cannot score sentences.")
    (tokens_a, scores_a), (tokens_b, scores_b) = (_scored(model, tokenizer, s, max_length, name)
                                                  for s, name in ((text_a, "A"), (text_b, "B")))
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
    """"The key to the cabinets ___ on the table. (is / are)": the words the two share, a blank where they differ."""
    words_a, words_b = a.split(), b.split()
    shared, differing = [], ([], [])
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
