"""AppTest: the Meaning in context page for "bank" on minilm-english and demo-tiny, checked against the package."""

from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from bertviz_lite.inspection.views import meaning_in_context as meaning
from bertviz_lite.loading.pretrained import DEFAULT_MODEL, DEMO, load
from bertviz_lite.server import access
from bertviz_lite.text.corpora import senses
from pages_app.common._sidebar import OTHER_FOLDER
from tests.app.conftest import APP, HAS_DEMO, PAIR, array, charts, no_exception

PAGE = "pages_app/explore/6_Meaning_in_context.py"


@pytest.fixture(scope="module", params=[DEFAULT_MODEL, DEMO])
def model_state(request, tiny_folder) -> dict:
    if request.param == DEMO and not HAS_DEMO:
        return {"model_picker": OTHER_FOLDER, "model_path": tiny_folder}
    return {"model_picker": request.param}


def run_meaning(state: dict, query: dict | None = None, **extra) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    for key, value in {"sentence_a": PAIR[0], "sentence_b": PAIR[1], **state, **extra}.items():
        at.session_state[key] = value
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.switch_page(PAGE)
    at.run()
    return at


def test_bank_shows_its_senses_the_layer_slider_and_the_neighbour_table(model_state, loaded):
    at = run_meaning(model_state)
    no_exception(at)
    model, tokenizer = loaded(model_state)
    data = meaning.word_contexts(model, tokenizer, senses.sense_index(), "bank", unlabelled=False)
    layers = model.config.num_hidden_layers
    slider = at.select_slider(key="meaning_layer")
    assert slider.options == meaning.layer_names(layers) and slider.value == layers
    figures = charts(at)
    scatter = figures["meaning_scatter_0"]
    senses_drawn = [
        t["name"] for t in scatter["data"] if not t["name"].startswith(("another", "other", "neighbours"))
    ]
    assert len(senses_drawn) >= 2 and any(name.startswith("sloping land") for name in senses_drawn)
    points = np.concatenate([array(t["x"]) for t in scatter["data"][:-1]])
    expected = meaning.context_projection(data, layers).points[:, 0]
    order = np.concatenate([array(t["customdata"]) for t in scatter["data"][:-1]])
    assert np.allclose(points, expected[order], atol=1e-4)
    separation = meaning.sense_separation(data)
    assert np.allclose(
        array(figures["meaning_separation"]["data"][0]["y"]), separation.accuracy * 100, equal_nan=True
    )
    table = at.dataframe[0].value
    own = meaning.nearest_neighbours(
        meaning.pool_from_contexts(data, layers), data.vectors[layers, 0], 10, exclude=data.occurrences[0]
    ).to_frame()
    assert table["word"].tolist() == own["word"].tolist() and np.allclose(
        table["similarity"], own["similarity"]
    )
    assert at.query_params["word"] in ("bank", ["bank"])


def test_a_lower_layer_redraws_and_another_word_is_typed(model_state):
    at = run_meaning(model_state)
    at.select_slider(key="meaning_layer").set_value(0).run()
    no_exception(at)
    assert "embeddings" in charts(at)["meaning_scatter_0"]["layout"]["title"]["text"]
    at.selectbox(key="meaning_word").set_value("light").run()
    no_exception(at)
    assert "“light”" in charts(at)["meaning_scatter_0"]["layout"]["title"]["text"]
    linked = run_meaning(model_state, query={"word": "<b>two</b> words"})  # AppTest cannot type a new option
    no_exception(linked)
    assert "Type one word" in linked.warning[0].value and linked.selectbox(key="meaning_word").value == "bank"


@pytest.mark.skipif(not HAS_DEMO, reason="checkpoints/demo-tiny is missing")
def test_the_walkthrough_link_asks_first_then_reveals():
    at = run_meaning({"model_picker": DEMO}, query={"word": "bank", "preset": "bank"})
    no_exception(at)
    assert "meaning_separation" not in charts(at)
    assert at.radio(key="meaning_guess").options == meaning.layer_names(2)
    at.radio(key="meaning_guess").set_value("layer 1").run()
    at.button(key="meaning_reveal").click().run()
    verdict = (at.success or at.warning)[0].value
    assert "held-out sentences get their sense right" in verdict
    assert "meaning_separation" in charts(at)
    assert "river (your sentence)" in " ".join(t["name"] for t in charts(at)["meaning_scatter_0"]["data"])


@pytest.mark.skipif(not HAS_DEMO, reason="checkpoints/demo-tiny is missing")
def test_neighbours_over_the_whole_index(monkeypatch):
    """A small index stands in for the whole one (the real one takes a minute on MiniLM)."""
    whole = senses.sense_index()
    small = senses.SenseIndex(
        whole.sentences[:200] + [whole.sentences[n] for n, _, _ in whole.by_word["bank"]]
    )
    monkeypatch.setattr(senses, "sense_index", lambda: small)
    # The model's version (a key of every page cache) names the stand-in index: the pool and word contexts are made
    # afresh from it, and no other test meets them; clearing every cache instead reloaded every model and re-ran the
    # warm-up, here and in the tests after.
    version = access.fenced_version
    monkeypatch.setattr(
        access, "fenced_version", lambda source: f"{version(source)} with a small sense index"
    )
    at = run_meaning({"model_picker": DEMO}, meaning_scope="every labelled word of the index")
    no_exception(at)
    model, tokenizer = load(DEMO)
    data = meaning.word_contexts(model, tokenizer, small, "bank", unlabelled=False)
    pool = meaning.index_pool(model, tokenizer, small, 2)
    expected = meaning.nearest_neighbours(
        pool, data.vectors[2, 0], 10, exclude=data.occurrences[0]
    ).to_frame()
    table = at.dataframe[0].value
    assert table["before"].tolist() == expected["before"].tolist()
    assert np.allclose(table["similarity"], expected["similarity"], atol=1e-4)
