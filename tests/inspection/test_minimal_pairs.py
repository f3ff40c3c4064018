import math

import pytest
import torch

import bertviz_lite
from bertviz_lite.inspection.minimal_pairs import (
    builtin_minimal_pairs,
    phenomena,
    pseudo_log_likelihood,
    token_log_probs,
)


@pytest.fixture(scope="module")
def demo():
    return bertviz_lite.load("demo-tiny")


def _loop_pll(model, tokenizer, sentence: str) -> float:
    """The definition, one masked forward pass per token."""
    encoding = tokenizer.encode_pair(sentence, None)
    total = 0.0
    for i, special in enumerate(encoding.special_tokens_mask):
        if special:
            continue
        ids = torch.tensor([encoding.input_ids])
        ids[0, i] = tokenizer.mask_token_id
        with torch.no_grad():
            logits = model.mlm_logits(ids, torch.zeros_like(ids))[0, i]
        total += torch.log_softmax(logits.double(), -1)[encoding.input_ids[i]].item()
    return total


def test_pseudo_log_likelihood_equals_a_loop_of_masked_passes(demo):
    model, tokenizer = demo
    for sentence in ("The cat sat on the mat.", "Tom fed the dog in the garden."):
        assert pseudo_log_likelihood(model, tokenizer, sentence) == pytest.approx(
            _loop_pll(model, tokenizer, sentence), abs=1e-4
        )


def test_token_log_probs_score_every_non_special_token_once(demo):
    model, tokenizer = demo
    scored = token_log_probs(model, tokenizer, "The cat sat.")
    assert [token for token, _ in scored] == tokenizer.encode_pair("The cat sat.", None).tokens[1:-1]
    assert all(log_prob < 0 and math.isfinite(log_prob) for _, log_prob in scored)


def test_builtin_pairs_cover_five_phenomena_and_differ_in_one_place():
    pairs = builtin_minimal_pairs()
    assert len(pairs) >= 100
    assert phenomena(pairs) == [
        "agreement_attractor",
        "determiner_noun_agreement",
        "irregular_past",
        "argument_structure",
        "negative_polarity",
    ]
    assert pairs[0].good == "The key to the cabinets is on the table."
    assert pairs[0].bad == "The key to the cabinets are on the table."
    for pair in pairs:
        good = pair.good.split()
        bad = pair.bad.split()
        assert len(good) == len(bad) and sum(g != b for g, b in zip(good, bad, strict=True)) == 1, pair
