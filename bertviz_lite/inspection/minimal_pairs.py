"""Grammar shown as numbers: pseudo-log-likelihood (Salazar et al. 2020) and built-in minimal pairs.

A minimal pair is two sentences that differ in one grammatical point ("The key to the cabinets is on the
table." / "... are on the table."). A masked language model "prefers" the sentence with the higher
pseudo-log-likelihood: the sum, over its tokens, of the log-probability of each token when only that token
is replaced by [MASK]. The pairs are generated from templates in corpora/minimal_pairs.json.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch

from bertviz_lite.model.modeling import BertForPreTraining
from bertviz_lite.text.corpora import MINIMAL_PAIRS_PATH
from bertviz_lite.text.tokenization import BertTokenizer


@dataclass(frozen=True)
class MinimalPair:
    """A grammatical sentence and its ungrammatical twin, and the phenomenon they differ in."""

    phenomenon: str
    good: str
    bad: str


@torch.inference_mode()
def token_log_probs(
    model: BertForPreTraining, tokenizer: BertTokenizer, sentence: str
) -> list[tuple[str, float]]:
    """(token, natural log-probability) for each non-special token, each predicted with only itself masked."""
    encoding = tokenizer.encode_pair(sentence, None, max_length=model.config.max_position_embeddings)
    positions = [i for i, special in enumerate(encoding.special_tokens_mask) if not special]
    if not positions:
        raise ValueError(f"{sentence!r} has no tokens to score")
    device = next(model.parameters()).device
    ids = torch.tensor(encoding.input_ids, device=device)
    rows = torch.arange(len(positions), device=device)
    columns = torch.tensor(positions, device=device)
    masked = ids.repeat(len(positions), 1)  # (N, T): copy n has only token positions[n] masked
    masked[rows, columns] = tokenizer.mask_token_id
    model.eval()
    logits = model.mlm_logits(masked, torch.zeros_like(masked))[rows, columns]  # (N, V), segment A only
    log_probs = torch.log_softmax(logits.double(), dim=-1)[rows, ids[columns]]
    return list(zip([encoding.tokens[i] for i in positions], log_probs.tolist(), strict=True))


def pseudo_log_likelihood(model: BertForPreTraining, tokenizer: BertTokenizer, sentence: str) -> float:
    """Sum of each token's log-probability with only that token masked (natural log; the sentence as segment A)."""
    return sum(log_prob for _, log_prob in token_log_probs(model, tokenizer, sentence))


def prefers_good(model: BertForPreTraining, tokenizer: BertTokenizer, pair: MinimalPair) -> bool:
    """Whether the model scores the grammatical sentence higher."""
    return pseudo_log_likelihood(model, tokenizer, pair.good) > pseudo_log_likelihood(
        model, tokenizer, pair.bad
    )


def builtin_minimal_pairs(path: Path = MINIMAL_PAIRS_PATH) -> list[MinimalPair]:
    """Every pair the templates generate: each template of a phenomenon filled with each of its fillers.

    A template's {slots} come from a filler; its contrast slot takes the filler's form for the good sentence and
    the other form for the bad one (e.g. "is" for a singular subject, "are" as the error).
    """
    pairs = []
    for phenomenon in json.loads(path.read_text(encoding="utf-8"))["phenomena"]:
        for template in phenomenon["templates"]:
            for filler in phenomenon["fillers"]:
                pairs.append(_fill(phenomenon["name"], template, filler))
    return pairs


def _fill(phenomenon: str, template: dict, filler: dict) -> MinimalPair:
    """One pair: template["contrast"] maps the filler's `form` to the (good, bad) text of the {contrast} slot.

    That text may name the filler's slots itself ("{past}" / "{participle}") when the words differ per filler.
    """
    good_word, bad_word = template["contrast"][filler["form"]]
    slots = {key: value for key, value in filler.items() if key != "form"}
    good = template["text"].replace("{contrast}", good_word).format(**slots)
    bad = template["text"].replace("{contrast}", bad_word).format(**slots)
    return MinimalPair(phenomenon, good[0].upper() + good[1:], bad[0].upper() + bad[1:])


def phenomena(pairs: list[MinimalPair]) -> list[str]:
    """The phenomena of some pairs, in first-seen order."""
    return list(dict.fromkeys(pair.phenomenon for pair in pairs))
