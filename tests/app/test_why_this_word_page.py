"""AppTest: the Why-this-word page on minilm-english and demo-tiny, checked through the numbers in its figures."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from bertviz_lite import patched_logits
from bertviz_lite.inspection.views import why_this_word
from bertviz_lite.inspection.views.why_this_word import builtin_pair_choices as contrast_choices
from bertviz_lite.loading.pretrained import DEFAULT_MODEL, DEMO
from tests.app.conftest import APP, array, charts, no_exception, texts

PAGE = "pages_app/explore/7_Why_this_word.py"
CAPITAL = why_this_word.EXAMPLES["capital: Paris / Rome"]
# demo-tiny splits most words into pieces: this pair keeps the same length there
AGREEMENT = why_this_word.EXAMPLES["agreement across an attractor"]
PAIR = ("The keys to the cabinet are on the table.", "The keys to the cabinet is on the table.")
FIGURES = {
    ("Minimal pairs", None): {"contrast_minimal_pair"},
    ("Contrastive prediction", None): {"contrast_by_layer", "contrast_attribution"},
    ("Activation patching", "residual stream"): {"contrast_patching_residual"},
    ("Activation patching", "attention vs feed-forward"): {
        "contrast_patching_attention",
        "contrast_patching_feed-forward",
    },
    ("Activation patching", "heads"): {"contrast_patching_head"},
}


@pytest.fixture(scope="module", params=["english", "demo"])
def model_state(request) -> dict:
    """Sidebar state and a same-length pair with its candidates, for minilm-english or demo-tiny."""
    if request.param == "english":
        a, b, target, foil = CAPITAL
        return {
            "model_picker": DEFAULT_MODEL,
            "sentence_a": a,
            "sentence_b": b,
            "contrast_target": target,
            "contrast_foil": foil,
        }
    return {
        "model_picker": DEMO,
        "sentence_a": AGREEMENT[0],
        "sentence_b": AGREEMENT[1],
    }  # the model's own candidates


def open_page(state: dict, reveal: bool = True, **extra) -> AppTest:
    """app.py on this page with the state, after its run (and after pressing every Reveal button)."""
    at = AppTest.from_file(APP, default_timeout=120)
    for key, value in {**state, **extra}.items():
        at.session_state[key] = value
    at.switch_page(PAGE)
    at.run()
    for button in [b for b in at.button if reveal and (b.key or "").startswith("walk_reveal_button_")]:
        button.click().run()
    return at


@pytest.mark.parametrize(("tab", "restore"), list(FIGURES))
def test_every_view_renders_with_its_csv(model_state, tab, restore):
    state = {
        **model_state,
        **(dict(zip(("sentence_a", "sentence_b"), PAIR, strict=True)) if tab == "Minimal pairs" else {}),
    }
    at = open_page(state, why_this_word_view=tab, **({"why_this_word_restore": restore} if restore else {}))
    no_exception(at)
    assert not at.error, texts(at)
    shown = charts(at)
    assert FIGURES[tab, restore] <= set(shown), (tab, list(shown))
    assert len(at.get("download_button")) >= len(shown)
    if restore in (None, "residual stream"):  # the views with a question showed it, then the answer
        assert "No guess made" in texts(at)


def test_the_question_hides_the_figure_until_the_reveal(model_state):
    at = open_page(model_state, reveal=False, why_this_word_view="Activation patching")
    no_exception(at)
    assert not charts(at) and at.radio(key="walk_choice_patching").options[-1].startswith("never")
    at.radio(key="walk_choice_patching").set_value(at.radio(key="walk_choice_patching").options[0]).run()
    at.button(key="walk_reveal_button_patching").click().run()
    assert "contrast_patching_residual" in charts(at)
    assert any(
        text in texts(at) + " ".join(el.value for el in at.success) for text in ("Right!", "Not this time")
    )


def _own_metric(loaded_model, state, target: str, foil: str) -> tuple[float, float, int]:
    model, tokenizer = loaded_model
    a = why_this_word.encode_alone(tokenizer, state["sentence_a"])
    b = why_this_word.encode_alone(tokenizer, state["sentence_b"])
    position = a.tokens.index("[MASK]")
    ids = tokenizer.convert_tokens_to_ids([target, foil])
    with torch.no_grad():
        ends = [model.mlm_logits(e.to_tensors()["input_ids"])[0, position] for e in (a, b)]
    return float(ends[0][ids[0]] - ends[0][ids[1]]), float(ends[1][ids[0]] - ends[1][ids[1]]), position


def _candidates(at) -> tuple[str, str]:
    """The candidates the page used: typed, or the defaults named in the placeholders."""
    words = []
    for key in ("contrast_target", "contrast_foil"):
        box = at.text_input(key=key)
        words.append(box.value or box.proto.placeholder.split(": ")[-1])
    return words[0], words[1]


def test_the_contrast_by_layer_ends_on_the_models_logit_difference(model_state, loaded):
    at = open_page(model_state, why_this_word_view="Contrastive prediction")
    no_exception(at)
    target, foil = _candidates(at)
    clean, _, _ = _own_metric(loaded(model_state), model_state, target, foil)
    bars = charts(at)["contrast_by_layer"]["data"][0]
    assert array(bars["x"])[-1] == pytest.approx(clean, abs=1e-4)
    attribution = charts(at)["contrast_attribution"]["layout"]["title"]["text"]
    assert f"logit('{target}') − logit('{foil}')" in attribution


def test_the_residual_grid_is_the_recovered_share_of_patched_runs(model_state, loaded):
    at = open_page(model_state, why_this_word_view="Activation patching")
    no_exception(at)
    target, foil = _candidates(at)
    model, tokenizer = loaded(model_state)
    clean, corrupted, position = _own_metric((model, tokenizer), model_state, target, foil)
    share = array(charts(at)["contrast_patching_residual"]["data"][0]["z"]).astype(float)
    layers = model.config.num_hidden_layers
    assert share.shape[0] == layers + 1
    assert share[layers, position] == pytest.approx(
        1.0, abs=1e-4
    )  # the last layer at the [MASK] is the answer
    ids = [
        why_this_word.encode_alone(tokenizer, model_state[k]).to_tensors()["input_ids"]
        for k in ("sentence_a", "sentence_b")
    ]
    logits = patched_logits(model, *ids, None, 1, position)[0, position]
    own = float(
        logits[tokenizer.convert_tokens_to_ids(target)] - logits[tokenizer.convert_tokens_to_ids(foil)]
    )
    assert share[1, position] == pytest.approx((own - corrupted) / (clean - corrupted), abs=1e-3)
    same = [
        i
        for i, (a, b) in enumerate(
            zip(
                *(
                    why_this_word.encode_alone(tokenizer, model_state[k]).tokens
                    for k in ("sentence_a", "sentence_b")
                ),
                strict=True,
            )
        )
        if a == b
    ]
    np.testing.assert_allclose(
        share[0, same], 0.0, atol=1e-4
    )  # an unchanged token's embedding restores nothing


def test_sentences_of_different_lengths_or_without_a_mask_get_a_sentence(model_state):
    at = open_page(
        {**model_state, "sentence_b": model_state["sentence_b"] + " And much more besides."},
        why_this_word_view="Activation patching",
    )
    no_exception(at)
    assert "must have the same number of tokens" in texts(at) and not charts(at)
    at = open_page(
        {**model_state, "sentence_a": "No mask here."}, why_this_word_view="Contrastive prediction"
    )
    no_exception(at)
    assert "Sentence A has no [MASK]" in texts(at) and not charts(at)


def test_an_example_fills_both_sentences_and_the_candidates():
    at = open_page({"model_picker": DEFAULT_MODEL}, reveal=False, why_this_word_view="Contrastive prediction")
    no_exception(at)
    name = "pronoun: woman / man"
    at.selectbox(key="why_this_word_example").set_value(name).run()
    no_exception(at)
    assert at.selectbox(key="why_this_word_example").value is None  # ready for the next pick
    a, b, target, foil = why_this_word.EXAMPLES[name]
    assert at.session_state["sentence_a"] == a and at.session_state["sentence_b"] == b
    assert (
        at.text_input(key="contrast_target").value == target
        and at.text_input(key="contrast_foil").value == foil
    )


def test_a_link_carries_both_sentences_and_the_candidates():
    at = AppTest.from_file(APP, default_timeout=120)
    a, b, target, foil = CAPITAL
    at.query_params.update({"a": a, "b": b, "target": target, "foil": foil})
    at.switch_page(PAGE)
    at.session_state["why_this_word_view"] = "Contrastive prediction"
    at.run()
    no_exception(at)
    assert (
        at.text_input(key="contrast_target").value == target
        and at.text_input(key="contrast_foil").value == foil
    )
    assert (
        at.query_params["target"] == target and at.query_params["foil"] == foil and at.query_params["a"] == a
    )


def test_minimal_pairs_show_each_sentences_pll_token_by_token(model_state, loaded):
    from bertviz_lite.inspection.minimal_pairs import pseudo_log_likelihood

    at = open_page(
        {**model_state, "sentence_a": PAIR[0], "sentence_b": PAIR[1]}, why_this_word_view="Minimal pairs"
    )
    no_exception(at)
    model, tokenizer = loaded(model_state)
    bars = charts(at)["contrast_minimal_pair"]["data"]
    for trace, sentence in zip(bars, PAIR, strict=True):
        assert -array(trace["y"]).sum() == pytest.approx(
            pseudo_log_likelihood(model, tokenizer, sentence), abs=1e-4
        )
    colours = [trace["marker"]["color"] for trace in bars]
    assert all("#ff7f0e" in c for c in colours)  # the tokens where the sentences differ are marked in each
    assert sum(c.count("#ff7f0e") for c in colours) < sum(len(c) for c in colours)  # …and only those


def test_a_built_in_minimal_pair_fills_both_sentences():
    at = open_page({"model_picker": DEFAULT_MODEL}, reveal=False, why_this_word_view="Minimal pairs")
    label = at.selectbox(key="why_this_word_pair").options[1]
    at.selectbox(key="why_this_word_pair").set_value(label).run()
    no_exception(at)
    a, b = contrast_choices()[label]
    assert (at.session_state["sentence_a"], at.session_state["sentence_b"]) == (a, b)
    assert at.radio(key="walk_choice_minimal_pair").options == ["A", "B"]


def test_a_sentence_with_a_mask_is_not_scored_as_a_minimal_pair(model_state):
    at = open_page(model_state, why_this_word_view="Minimal pairs")
    no_exception(at)
    assert "sentence A has a [MASK] in it" in texts(at) and not charts(at)
