"""The contrast views: logit(target) − logit(foil) layer by layer, its attribution, and the patching grid's data."""

import dataclasses

import numpy as np
import pytest
import torch

from bertviz_lite.inspection import attribution, patching
from bertviz_lite.inspection.attribution import Target
from bertviz_lite.inspection.views import why_this_word
from bertviz_lite.loading.pretrained import DEFAULT_MODEL, DEMO, load
from bertviz_lite.loading.run_folder import CHECKPOINTS_DIR

pytestmark = pytest.mark.skipif(
    not (CHECKPOINTS_DIR / DEMO / "config.json").is_file(), reason="demo-tiny is missing"
)
A, B = why_this_word.EXAMPLES["agreement across an attractor"][
    :2
]  # the same length in demo-tiny's vocabulary


@pytest.fixture(scope="module")
def demo():
    return load(DEMO)


def ids_of(tokenizer, text):
    return why_this_word.encode_alone(tokenizer, text).to_tensors()["input_ids"]


def test_the_lens_of_the_difference_is_the_head_on_every_hidden_state(demo):
    model, tokenizer = demo
    target, foil = why_this_word.default_candidates(model, tokenizer, A, B)
    lens = why_this_word.contrast_lens(model, tokenizer, A, target, foil)
    ids = tokenizer.convert_tokens_to_ids([target, foil])
    with torch.no_grad():
        states = model.trace(ids_of(tokenizer, A)).hidden_states
        own = [model.cls.predictions(h[0, lens.position]) for h in states]
    np.testing.assert_allclose(lens.difference, [float(x[ids[0]] - x[ids[1]]) for x in own], atol=1e-4)
    assert lens.layers[0] == "embeddings" and len(lens.layers) == model.config.num_hidden_layers + 1
    np.testing.assert_allclose(lens.target_probs[-1], float(own[-1].softmax(-1)[ids[0]]), atol=1e-6)
    assert list(lens.to_frame().columns[:4]) == ["layer", f"logit_{target}", f"logit_{foil}", "difference"]


def test_the_contrast_attribution_is_leave_one_out_of_the_difference(demo):
    model, tokenizer = demo
    target, foil = why_this_word.default_candidates(model, tokenizer, A, B)
    data = why_this_word.contrast_attribution(model, tokenizer, A, target, foil, steps=32)
    ids = ids_of(tokenizer, A)
    position = why_this_word.mask_position(why_this_word.encode_alone(tokenizer, A))
    pair = tokenizer.convert_tokens_to_ids([target, foil])

    def difference(input_ids):
        with torch.no_grad():
            logits = model.mlm_logits(input_ids)[0, position]
        return float(logits[pair[0]] - logits[pair[1]])

    for j in (1, 3, position):
        masked = ids.clone()
        masked[0, j] = tokenizer.mask_token_id
        assert data.scores["leave-one-out"][j] == pytest.approx(
            difference(ids) - difference(masked), abs=1e-4
        )
    assert data.label == f"logit({target!r}) − logit({foil!r}) at position {position}"
    assert data.score == pytest.approx(difference(ids), abs=1e-4)
    assert data.completeness_error < 0.01  # integrated gradients add up to f(x) − f(baseline)


def test_a_contrast_target_scores_the_logit_difference_and_refuses_nonsense(demo):
    model, _ = demo
    hidden = torch.randn(3, model.config.hidden_size)
    with torch.no_grad():
        logits = model.cls.predictions(hidden)
        scores = attribution.mlm_scores(model, hidden, Target(0, 11, 12))
        plain = attribution.mlm_scores(model, hidden, Target(0, 11))
    torch.testing.assert_close(scores, logits[:, 11] - logits[:, 12], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(plain, logits.log_softmax(-1)[:, 11])
    for bad in (dict(position=None, token_id=None, foil_id=3), dict(position=2, token_id=5, foil_id=5)):
        with pytest.raises(
            ValueError, match="a contrast needs an MLM position and two different candidate tokens"
        ):
            Target(**bad)


def test_candidates_lengths_and_masks_are_checked_in_sentences(demo):
    model, tokenizer = demo
    assert why_this_word.candidate_id(tokenizer, "the") == tokenizer.convert_tokens_to_ids("the")
    with pytest.raises(
        ValueError, match=r"'paris' is not one token of this model's vocabulary \(it becomes pa \+ ##ri"
    ):
        why_this_word.candidate_id(tokenizer, "paris")
    with pytest.raises(ValueError, match="the same number of tokens. A has 13"):
        why_this_word.aligned_pair(
            tokenizer, "Paris is the capital of [MASK].", "Rome is the capital of [MASK]."
        )
    with pytest.raises(ValueError, match=r"Sentence A has no \[MASK\]"):
        why_this_word.contrast_lens(model, tokenizer, "No mask here.", "the", "a")
    with pytest.raises(ValueError, match="are the same token"):
        why_this_word.activation_patching(model, tokenizer, A, B, "the", "the")


def test_the_patching_view_is_the_grid_as_recovered_shares(demo):
    model, tokenizer = demo
    target, foil = why_this_word.default_candidates(model, tokenizer, A, B)
    data = why_this_word.activation_patching(model, tokenizer, A, B, target, foil, site="residual")
    position = why_this_word.mask_position(why_this_word.encode_alone(tokenizer, A))
    clean, corrupted = (patching.record_run(model, ids_of(tokenizer, s)) for s in (A, B))
    grid = patching.patching_grid(
        model,
        clean,
        corrupted,
        "residual",
        Target(position, *tokenizer.convert_tokens_to_ids([target, foil])),
    )
    np.testing.assert_allclose(data.metric, grid)
    np.testing.assert_allclose(
        data.share, (grid - data.corrupted_metric) / (data.clean_metric - data.corrupted_metric)
    )
    assert data.share[-1, position] == pytest.approx(1.0, abs=1e-5) and data.position == position
    assert data.differing and all(" · " in data.columns[i] for i in data.differing)
    frame = data.to_frame()
    assert len(frame) == data.share.size and list(frame.columns) == [
        "site",
        "layer",
        "position",
        "metric",
        "recovered_share",
    ]
    heads = why_this_word.activation_patching(model, tokenizer, A, B, target, foil, site="head")
    assert heads.columns == [f"head {h}" for h in range(model.config.num_attention_heads)]
    assert data.note() is None or abs(data.clean_metric - data.corrupted_metric) < why_this_word.NOISY_GAP
    close = dataclasses.replace(data, clean_metric=1.2, corrupted_metric=1.0)
    assert "A and B give nearly the same logit(" in close.note() and "(+1.20 against +1.00)" in close.note()
    question = why_this_word.patching_question(data)
    assert question.answer in question.options and question.options[0] == "embeddings"


@pytest.fixture(scope="module")
def english():
    return load(DEFAULT_MODEL)


@pytest.mark.parametrize("name", list(why_this_word.EXAMPLES))
def test_each_example_gives_the_default_model_a_clear_contrast(english, name):
    model, tokenizer = english
    data = why_this_word.activation_patching(model, tokenizer, *why_this_word.EXAMPLES[name])
    assert (
        data.differing and data.position not in data.differing
    )  # the sentences differ, but not at the blank
    assert (
        abs(data.clean_metric - data.corrupted_metric) > why_this_word.NOISY_GAP
    )  # no "too close to read" warning


def test_the_copying_example_shows_the_copy_and_who_carries_it(english):
    model, tokenizer = english
    a, b, target, foil = why_this_word.EXAMPLES["copying: Monday / Friday"]
    residual = why_this_word.activation_patching(model, tokenizer, a, b, target, foil)
    assert residual.clean_metric < 0  # it prefers the word it was given over the day before
    subject = residual.differing[0]
    last = model.config.num_hidden_layers
    assert (residual.share[:last, subject] > 0.8).all()  # the copy stays at "monday" up to the last layer…
    heads = why_this_word.activation_patching(model, tokenizer, a, b, target, foil, site="head")
    best_layer = np.unravel_index(np.nanargmax(heads.share), heads.share.shape)[0]
    assert best_layer == last - 1  # …whose heads carry it to the blank
