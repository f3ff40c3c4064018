"""The data behind the predictions views: the MLM head's top-k at masked positions, and NSP."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from bertviz_lite.inspection.analysis import softmax
from bertviz_lite.text.display import plain_markdown
from bertviz_lite.text.pretraining_data import is_content_word
from bertviz_lite.text.tokenization import MASK_TOKEN, BertTokenizer, Encoding

# What `bertviz_lite.inspection.views` offers at its top (its __init__ collects every module's __all__).
__all__ = [
    "copy_note", "default_mask_position", "is_next_probability", "maskable_positions", "masked_positions",
    "nsp_caption", "nsp_frame", "prediction_title", "top_predictions",
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
    if masked_positions(encoding.tokens):
        return ()
    position = default_mask_position(encoding)
    return () if position is None else (position,)


def masked_positions(tokens: Sequence[str]) -> list[int]:
    """Positions that hold [MASK]: picked in the app, or typed as [MASK] in the text."""
    return [i for i, token in enumerate(tokens) if token == MASK_TOKEN]


def prediction_title(encoding: Encoding, position: int) -> str:
    """Title of one top-k chart: where, and what the token was before masking."""
    original = encoding.tokens[position]
    if original == MASK_TOKEN:
        return f"Position {position}: [MASK] typed in the text"
    return f"Position {position}: [MASK], originally {original!r}"


def top_predictions(mlm_logits, tokenizer: BertTokenizer, position: int, k: int = 10) -> pd.DataFrame:
    """The k most likely tokens at one position of [T, V] logits: rank, token, id, probability."""
    if mlm_logits is None:
        raise ValueError("This model has no trained masked-language-model head, so it cannot predict tokens.")
    probs = softmax(mlm_logits[position])
    top = np.argsort(-probs, kind="stable")[:k]
    return pd.DataFrame(
        {"rank": np.arange(1, top.size + 1), "token": tokenizer.convert_ids_to_tokens(top.tolist()),
         "id": top, "probability": probs[top]}
    )


def copy_note(tokens: Sequence[str], position: int, guess: str) -> str | None:
    """A plain-words note when the first guess at `position` is a content word the input already shows elsewhere
    ("Bees make [MASK]." -> bees): small BERTs copy what they can see. None otherwise (Markdown, escaped)."""
    if not is_content_word(guess) or guess not in (token for i, token in enumerate(tokens) if i != position):
        return None
    return (f"The first guess, *{plain_markdown(guess)}*, is a word the input already shows: small BERTs often copy "
            "a word they can see instead of the answer. The copying example on *Why this word* shows where the copy "
            "comes from.")


def is_next_probability(nsp_logits) -> float | None:
    """P(B follows A) from the NSP head's [2] logits (index 0 = IsNext); None without a head."""
    if nsp_logits is None:
        return None
    return float(softmax(nsp_logits)[0])


def nsp_frame(p_is_next: float) -> pd.DataFrame:
    """The NSP probabilities as a two-row table."""
    return pd.DataFrame({"label": ["IsNext", "NotNext"], "probability": [p_is_next, 1.0 - p_is_next]})


def nsp_caption(p_as_typed: float, p_with_picks: float, picked: int) -> str:
    """What the NSP bar was computed on, and the masked variant in words when tokens were picked to mask."""
    text = "IsNext: B is the sentence that followed A in the text; NotNext: a random sentence. Computed on the pair as typed"
    if picked == 0:
        return text + "."
    tokens = "token" if picked == 1 else "tokens"
    return (f"{text}, without the {picked} {tokens} picked above masked (with them masked, "
            f"P(IsNext) would be {p_with_picks:.1%} instead of {p_as_typed:.1%}).")
