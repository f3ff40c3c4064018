"""AppTest: the Walkthrough page step by step on the default model and demo-tiny, its questions, and shared links."""

from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from bertviz_lite.inspection import explore, views
from bertviz_lite.inspection import walkthrough as walk
from bertviz_lite.loading.pretrained import DEFAULT_MODEL, DEMO, MINILM
from bertviz_lite.loading.run_folder import CHECKPOINTS_DIR
from bertviz_lite.text.display import plain_markdown
from pages_app.common._sidebar import OTHER_FOLDER
from tests.app.conftest import APP, HAS_DEMO, PAIR, array, charts, no_exception, run_app, texts

HAS_DEFAULT = (CHECKPOINTS_DIR / DEFAULT_MODEL / "config.json").is_file()
# The figure each step without a question shows, by chart key (the tokens step shows HTML chips).
STEP_CHARTS = {
    "ids": "walk_ids",
    "embeddings": "walk_embeddings",
    "many_heads": "walk_model_view",
    "residual": "walk_residual",
}
QUESTION_KEYS = {"one_head": "attention", "mlm": "mlm", "nsp": "nsp"}
# The steps whose figure has a phone version (show_figure's narrow: its title on two lines, colour bars stacked).
PHONE_STEPS = {
    "ids": "walk_ids",
    "embeddings": "walk_embeddings",
    "one_head": "walk_one_head",
    "many_heads": "walk_model_view",
    "residual": "walk_residual",
}


@pytest.fixture(params=["default", "demo"])
def walk_state(request, tiny_folder) -> dict:
    if request.param == "default":
        return {"model_picker": DEFAULT_MODEL}
    return {"model_picker": DEMO} if HAS_DEMO else {"model_picker": OTHER_FOLDER, "model_path": tiny_folder}


def reveal(at: AppTest, key: str, choice: str | None) -> AppTest:
    """Pick an answer to the step's question (None: no guess) and press Reveal."""
    if choice is not None:
        at.radio(key=f"walk_choice_{key}").set_value(choice).run()
    return at.button(key=f"walk_reveal_button_{key}").click().run()


def test_every_step_runs_and_shows_its_figure(walk_state):
    at = run_app(walk_state, "walkthrough")
    for number, step in enumerate(walk.STEPS, start=1):
        no_exception(at)
        assert at.header[0].value == f"Step {number} of {len(walk.STEPS)}: {step.title}"
        if step.key in STEP_CHARTS:
            assert STEP_CHARTS[step.key] in charts(at), step.key
        if step.key in QUESTION_KEYS:
            assert not any(key.startswith(f"walk_{step.key}") for key in charts(at))  # nothing given away
            reveal(at, QUESTION_KEYS[step.key], None)
            no_exception(at)
            assert "No guess made" in at.warning[0].value
            assert any(key.startswith("walk_") for key in charts(at)), step.key
        phone_charts = {key for key in charts(at) if key.startswith("narrow__")}
        assert phone_charts == ({f"narrow__{PHONE_STEPS[step.key]}"} if step.key in PHONE_STEPS else set()), (
            step.key
        )
        assert at.button(key="walk_prev").disabled == (number == 1)
        if number < len(walk.STEPS):
            at.button(key="walk_next").click().run()
    assert at.button(key="walk_next").disabled
    assert at.query_params["step"] == [str(len(walk.STEPS))] or at.query_params["step"] == str(
        len(walk.STEPS)
    )


def own_trace(loaded, state) -> explore.PairTrace:
    model, tokenizer = loaded(state)
    encoding = explore.encode(tokenizer, *PAIR, 128)
    return explore.trace_pair(model, tokenizer, *PAIR, 128, [views.default_mask_position(encoding)])


def test_attention_question_right_then_wrong(walk_state, loaded):
    at = run_app(walk_state, "walkthrough", walk_step=4, attn_layer=1, attn_head=1)
    trace = own_trace(loaded, walk_state)
    query = trace.masked_positions[0]
    question = walk.attention_question(trace, layer=1, head=1, query=query)
    reveal(at, "attention", question.answer)
    no_exception(at)
    assert at.success[0].value.startswith("Right!")
    bars = next(t for t in charts(at)["walk_one_head"]["data"] if t["name"].startswith("2."))
    np.testing.assert_allclose(array(bars["x"]), trace.attentions[1, 1, query], atol=1e-5)
    at.button(key="walk_again_attention").click().run()
    wrong = next(option for option in question.options if option != question.answer)
    reveal(at, "attention", wrong)
    assert at.warning[0].value.startswith(plain_markdown(f"Not this time: you said {wrong}."))
    assert plain_markdown(question.explanation) in at.warning[0].value  # tokens shown as text (issue 22)


def test_nsp_question_right_and_wrong(walk_state, loaded):
    at = run_app(walk_state, "walkthrough", walk_step=8)
    trace = own_trace(loaded, walk_state)
    question = walk.nsp_question(views.is_next_probability(trace.nsp_logits))
    reveal(at, "nsp", question.answer)
    assert at.success[0].value.startswith("Right!")
    np.testing.assert_allclose(array(charts(at)["walk_nsp"]["data"][0]["x"]).sum(), 1.0, atol=1e-6)
    at.button(key="walk_again_nsp").click().run()
    reveal(at, "nsp", next(o for o in question.options if o != question.answer))
    assert at.warning[0].value.startswith("Not this time")
    no_exception(at)


def test_a_model_without_heads_says_so_at_the_prediction_steps():
    for step in (7, 8):
        at = run_app({"model_picker": MINILM}, "walkthrough", walk_step=step)
        no_exception(at)
        assert "has no trained" in at.info[0].value and DEFAULT_MODEL in at.info[0].value
        assert not charts(at)
    if HAS_DEFAULT:
        at.button(key="walk_switch_model").click().run()
        assert at.session_state["model_picker"] == DEFAULT_MODEL and at.radio(key="walk_choice_nsp")


# ---------------------------------------------------------------- shared links


def linked_app(query: dict, page: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update(query)
    if page:
        at.switch_page(page)
    return at.run()


@pytest.mark.skipif(not HAS_DEMO, reason=f"checkpoints/{DEMO} is missing")
def test_a_link_sets_pair_model_layer_head_and_step():
    at = linked_app(
        {
            "a": "A dog barked.",
            "b": "The cat ran off.",
            "model": DEMO,
            "layer": "1",
            "head": "1",
            "step": "4",
            "present": "1",
        }
    )
    no_exception(at)
    assert at.sidebar.text_input(key="sentence_a").value == "A dog barked."
    assert at.session_state["model_picker"] == DEMO and at.session_state["present"] is True
    assert at.header[0].value.startswith(f"Step 4 of {len(walk.STEPS)}")
    assert (at.selectbox(key="attn_layer").value, at.selectbox(key="attn_head").value) == (1, 1)
    assert "layer 1, head 1" in at.radio(key="walk_choice_attention").label


def test_a_link_to_the_attention_page_opens_that_head():
    at = linked_app(
        {"a": PAIR[0], "b": PAIR[1], "model": MINILM, "layer": "3", "head": "7"},
        "pages_app/explore/3_Attention.py",
    )
    no_exception(at)
    assert charts(at)["attention_heatmap"]["layout"]["title"]["text"] == "Layer 3, head 7 (All)"
    assert at.query_params["layer"] in ("3", ["3"]) and at.query_params["head"] in ("7", ["7"])


def test_a_link_to_beyond_attention_opens_that_layer_and_head_and_all_heads_stay_out_of_it():
    at = linked_app(
        {"a": PAIR[0], "b": PAIR[1], "model": MINILM, "layer": "4", "head": "2"},
        "pages_app/explore/5_Beyond_attention.py",
    )
    no_exception(at)
    assert (at.selectbox(key="beyond_layer").value, at.selectbox(key="beyond_head").value) == (4, 2)
    assert at.query_params["layer"] in ("4", ["4"]) and at.query_params["head"] in ("2", ["2"])
    at.selectbox(key="beyond_head").set_value(-1).run()  # all heads: the link leaves the head out
    no_exception(at)
    assert "head" not in at.query_params and at.query_params["layer"] in ("4", ["4"])


def test_untrusted_link_values_are_tamed():
    at = linked_app(
        {"model": "/etc", "layer": "99", "head": "x", "step": "42", "a": "word " * 1000},
        "pages_app/explore/3_Attention.py",
    )
    no_exception(at)
    notes = texts(at)
    assert "does not offer" in notes and "cut to 2,000" in notes and "not a whole number" in notes, notes
    assert "layer 99 shows as 5" in notes
    assert at.session_state["model_picker"] == DEFAULT_MODEL
    assert at.selectbox(key="attn_layer").value == 5
    assert len(at.sidebar.text_input(key="sentence_a").value) == 2000


def test_the_step_can_be_jumped_to_and_is_clamped(walk_state):
    at = run_app(walk_state, "walkthrough", walk_step=99)
    no_exception(at)
    assert at.header[0].value.startswith(f"Step {len(walk.STEPS)} of")
    at.button(key="walk_prev").click().run()
    assert at.header[0].value.startswith(f"Step {len(walk.STEPS) - 1} of")


def _download_keys(at: AppTest) -> list[str]:
    return [button.proto.id.split("-", 2)[-1] for button in at.get("download_button")]


def test_every_step_offers_the_lesson_and_its_figure_as_html(walk_state):
    """Issue 35: "Download this walkthrough" on every step; a step's figure has its own HTML file beside its CSV."""
    at = run_app(walk_state, "walkthrough", walk_step=walk.step_number("residual"))
    no_exception(at)
    keys = _download_keys(at)
    assert "walk_lesson_html" in keys and "walk_residual_html" in keys and "walk_residual_csv" in keys
    lesson = next(b for b in at.get("download_button") if b.proto.id.endswith("walk_lesson_html"))
    assert (
        lesson.proto.label == "Download this walkthrough" and lesson.proto.deferred_file_id
    )  # built on click


def test_a_pair_past_the_export_limit_is_refused_in_a_sentence():
    at = run_app(
        {"model_picker": DEFAULT_MODEL} if HAS_DEFAULT else {"model_picker": MINILM},
        "walkthrough",
        sentence_a="the quick brown fox jumps over the lazy dog " * 20,
        max_length=512,
    )
    no_exception(at)
    assert "walk_lesson_html" not in _download_keys(at)
    assert any(
        caption.value.startswith("A lesson carries every layer and head, so it takes at most 128 tokens")
        for caption in at.caption
    )
