"""The minimal-pairs view: each sentence's pseudo-log-likelihood token by token, and where the two differ."""

import numpy as np
import pytest
import torch

import bertviz_lite
from bertviz_lite.inspection.views import why_this_word
from bertviz_lite.loading.pretrained import DEMO, load
from bertviz_lite.loading.run_folder import CHECKPOINTS_DIR


def test_the_differing_tokens_are_those_outside_the_shared_runs():
    a, b = why_this_word.differing_tokens(["the", "key", "is", "here"], ["the", "keys", "are", "here", "now"])
    assert a.tolist() == [False, True, True, False] and b.tolist() == [False, True, True, False, True]
    same = why_this_word.differing_tokens(["a", "b"], ["a", "b"])
    assert not same[0].any() and not same[1].any()


def test_built_in_pairs_are_labelled_with_a_blank_and_alternate_the_grammatical_one():
    choices = why_this_word.builtin_pair_choices()
    labels = list(choices)
    assert labels[0].endswith("___ on the table. (is / are)")
    firsts = [choices[label] for label in labels[:2]]
    assert firsts[0][0].endswith("is on the table.")  # good first…
    assert firsts[1][0].endswith("is on the table.") and firsts[1][1].endswith(
        "are on the table."
    )  # …then bad first
    assert len(set(labels)) == len(labels)


@pytest.mark.skipif(not (CHECKPOINTS_DIR / DEMO / "config.json").is_file(), reason="demo-tiny is missing")
def test_each_tokens_log_prob_is_a_masked_forward_pass_of_that_sentence_alone():
    model, tokenizer = load(DEMO)
    a = "the cat sat on the mat."
    b = "the cats sat on the mat."
    data = why_this_word.pair_likelihood(model, tokenizer, a, b)
    for sentence, tokens, log_probs in zip((a, b), data.tokens, data.log_probs, strict=True):
        encoding = tokenizer.encode_pair(sentence, None)
        ids = encoding.to_tensors()["input_ids"]
        assert tokens == encoding.tokens[1:-1]
        own = []
        for position in range(1, ids.shape[1] - 1):
            masked = ids.clone()
            masked[0, position] = tokenizer.mask_token_id
            with torch.no_grad():
                own.append(float(model.mlm_logits(masked)[0, position].log_softmax(-1)[ids[0, position]]))
        np.testing.assert_allclose(log_probs, own, atol=1e-4)
    assert data.preferred == ("A" if data.pll[0] >= data.pll[1] else "B")
    assert data.differs[0].sum() + data.differs[1].sum() >= 1 and not data.differs[0][0]
    assert data.pll[0] == pytest.approx(
        bertviz_lite.pseudo_log_likelihood(model, tokenizer, a), abs=1e-6
    )  # the facade's
    question = why_this_word.pair_likelihood_question(data)
    assert question.answer == data.preferred and f"PLL(A) = {data.pll[0]:.2f}" in question.explanation
    frame = data.to_frame()
    assert list(frame.columns) == ["sentence", "index", "token", "log_prob", "differs"]
    assert len(frame) == len(data.tokens[0]) + len(data.tokens[1])

    with pytest.raises(ValueError, match=r"sentence B has a \[MASK\] in it: type the word there"):
        why_this_word.pair_likelihood(model, tokenizer, a, "the [MASK] sat on the mat.")
