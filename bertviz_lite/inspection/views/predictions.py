"""The data behind the predictions views: the MLM head's top-k at masked positions, and NSP."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from bertviz_lite.inspection.analysis import softmax
from bertviz_lite.inspection.explore import PairTrace
from bertviz_lite.text.display import plain_markdown
from bertviz_lite.text.pretraining_data import is_content_word
from bertviz_lite.text.tokenization import MASK_TOKEN, Encoding

# What `bertviz_lite.inspection.views` offers at its top (its __init__ lists them by name).
__all__ = [
    "MaskFocus",
    "NextSentence",
    "TopPredictions",
    "default_mask_position",
    "default_masks",
    "is_next_probability",
    "mask_focus",
    "mask_token_positions",
    "maskable_positions",
    "next_sentence",
    "nsp_caption",
    "top_predictions",
]


def maskable_positions(encoding: Encoding) -> list[int]:
    """Positions of ordinary tokens (not [CLS]/[SEP]), the ones a user may mask."""
    return [i for i, special in enumerate(encoding.special_tokens_mask) if not special]


def default_mask_position(encoding: Encoding) -> int | None:
    """A good first token to mask: the last whole word of sentence A, else any ordinary token."""
    ordinary = maskable_positions(encoding)
    words = [i for i in ordinary if encoding.sequence_ids[i] == 0 and encoding.tokens[i].isalpha()]
    return (words or ordinary or [None])[-1]


def default_masks(encoding: Encoding) -> tuple[int, ...]:
    """What to mask before a pick: none if the text has a typed [MASK], else the default position."""
    if mask_token_positions(encoding.tokens):
        return ()
    position = default_mask_position(encoding)
    return () if position is None else (position,)


def mask_token_positions(tokens: Sequence[str]) -> list[int]:
    """Positions that hold [MASK]: picked in the app (PairTrace.masked_positions), or typed as [MASK] in the text."""
    return [i for i, token in enumerate(tokens) if token == MASK_TOKEN]


@dataclass(frozen=True)
class MaskFocus:
    """The token a walk through the model follows: what is masked, the [MASK] asked about, the word hidden there."""

    masked: tuple[int, ...]  # positions written as [MASK] before the trace (none when the text has a [MASK])
    query: int | None  # the first [MASK] of the input
    original: str | None  # the word behind it, when it was masked here (not typed as [MASK])


def mask_focus(encoding: Encoding) -> MaskFocus:
    """The walkthrough's focus for a pair: its first typed [MASK], else the word default_masks hides."""
    masked = default_masks(encoding)
    query = min([*mask_token_positions(encoding.tokens), *masked], default=None)
    return MaskFocus(masked, query, encoding.tokens[query] if masked else None)


def prediction_title(encoding: Encoding, position: int) -> str:
    """Title of one top-k chart: where, and what the token was before masking."""
    original = encoding.tokens[position]
    if original == MASK_TOKEN:
        return f"Position {position}: [MASK] typed in the text"
    return f"Position {position}: [MASK], originally {original!r}"


@dataclass(frozen=True)
class TopPredictions:
    """The MLM head's k most likely tokens at one position of a trace, best first."""

    position: int
    title: str  # where, and what the token was before masking (prediction_title)
    tokens: list[str]  # [k]
    ids: np.ndarray  # [k]
    probabilities: np.ndarray  # [k]
    note: str | None  # copy_note of the first guess

    def to_frame(self) -> pd.DataFrame:
        """rank, token, id, probability."""
        return pd.DataFrame(
            {
                "rank": np.arange(1, len(self.tokens) + 1),
                "token": self.tokens,
                "id": self.ids,
                "probability": self.probabilities,
            }
        )


def top_predictions(trace: PairTrace, position: int, k: int = 10) -> TopPredictions:
    """The k most likely tokens at one position of the trace's MLM logits."""
    if trace.mlm_logits is None:
        raise ValueError("This model has no trained masked-language-model head, so it cannot predict tokens.")
    probs = softmax(trace.mlm_logits[position])
    top = np.argsort(-probs, kind="stable")[:k]
    tokens = list(trace.tokenizer.convert_ids_to_tokens(top.tolist()))
    return TopPredictions(
        position,
        prediction_title(trace.encoding, position),
        tokens,
        top,
        probs[top],
        copy_note(trace.tokens, position, tokens[0]),
    )


def copy_note(tokens: Sequence[str], position: int, guess: str) -> str | None:
    """A plain-words note when the first guess at `position` is a content word the input already shows elsewhere
    ("Bees make [MASK]." -> bees): small BERTs copy what they can see. None otherwise (Markdown, escaped)."""
    if not is_content_word(guess) or guess not in (token for i, token in enumerate(tokens) if i != position):
        return None
    return (
        f"The first guess, *{plain_markdown(guess)}*, is a word the input already shows: small BERTs often copy "
        "a word they can see instead of the answer. The copying example on *Why this word* shows where the copy "
        "comes from."
    )


def is_next_probability(nsp_logits) -> float | None:
    """P(B follows A) from the NSP head's [2] logits (index 0 = IsNext); None without a head."""
    if nsp_logits is None:
        return None
    return float(softmax(nsp_logits)[0])


@dataclass(frozen=True)
class NextSentence:
    """The NSP head's answer: P(B follows A)."""

    p_is_next: float

    def to_frame(self) -> pd.DataFrame:
        """The NSP probabilities as a two-row table."""
        return pd.DataFrame(
            {"label": ["IsNext", "NotNext"], "probability": [self.p_is_next, 1.0 - self.p_is_next]}
        )


def next_sentence(trace: PairTrace) -> NextSentence:
    """P(IsNext) of the trace's pair."""
    if trace.nsp_logits is None:
        raise ValueError("This model has no trained next-sentence (NSP) head.")
    return NextSentence(is_next_probability(trace.nsp_logits))


def nsp_caption(p_as_typed: float, p_with_picks: float, picked: int) -> str:
    """What the NSP bar was computed on, and the masked variant in words when tokens were picked to mask."""
    text = "IsNext: B is the sentence that followed A in the text; NotNext: a random sentence. Computed on the pair as typed"
    if picked == 0:
        return text + "."
    tokens = "token" if picked == 1 else "tokens"
    return (
        f"{text}, without the {picked} {tokens} picked above masked (with them masked, "
        f"P(IsNext) would be {p_with_picks:.1%} instead of {p_as_typed:.1%})."
    )
