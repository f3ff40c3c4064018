"""AppTest: the Beyond attention page on minilm-english and demo-tiny, checked through the numbers in its figures."""

from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from bertviz_lite.figures.tabs import BEYOND_ATTENTION_TABS, titles
from bertviz_lite.inspection import explore
from bertviz_lite.loading.pretrained import DEFAULT_MODEL, DEMO, MINILM
from tests.app.conftest import APP, HAS_DEMO, PAIR, array, charts, no_exception, texts
from tests.app.tiny_checkpoint import save_tiny

PAGE = "pages_app/explore/5_Beyond_attention.py"
TABS = titles(BEYOND_ATTENTION_TABS)
FIGURES = {
    "Norm-weighted attention": {"beyond_raw_attention", "beyond_norm_attention", "beyond_special_share"},
    "Attribution": {"beyond_attribution"},
    "Head knock-out": {"beyond_knockout", "beyond_model_view_0"},
    "Layer by layer": {"beyond_logit_lens"},
}


@pytest.fixture(scope="module", params=["english", "demo"])
def model_state(request, tiny_folder) -> dict:
    """Sidebar state for the default English model, or demo-tiny (the tiny folder when the checkpoint is absent)."""
    if request.param == "english":
        return {"model_picker": DEFAULT_MODEL}
    return (
        {"model_picker": DEMO} if HAS_DEMO else {"model_picker": "Another folder…", "model_path": tiny_folder}
    )


def open_page(state: dict, **extra) -> AppTest:
    """app.py on the Beyond attention page with this sidebar state (and extra session state), after its run."""
    at = AppTest.from_file(APP, default_timeout=120)
    for key, value in {"sentence_a": PAIR[0], "sentence_b": PAIR[1], **state, **extra}.items():
        at.session_state[key] = value
    at.switch_page(PAGE)
    at.run()
    return at


def own_trace(loaded, state, masked=()) -> explore.PairTrace:
    model, tokenizer = loaded(state)
    return explore.trace_pair(model, tokenizer, *PAIR, masked_positions=masked)


@pytest.mark.parametrize("tab", TABS)
def test_every_view_renders_with_its_csv(model_state, tab):
    at = open_page(model_state, beyond_view=tab)
    no_exception(at)
    assert not at.error, texts(at)
    shown = charts(at)
    assert FIGURES[tab] <= set(shown), (tab, list(shown))
    assert len(at.get("download_button")) >= len(shown)


def test_norm_view_shows_the_weights_and_the_norms_of_the_trace(model_state, loaded):
    at = open_page(model_state, beyond_view=TABS[0], beyond_layer=1, beyond_head=0)
    no_exception(at)
    trace = own_trace(loaded, model_state)
    shown = charts(at)
    np.testing.assert_allclose(
        array(shown["beyond_raw_attention"]["data"][0]["z"]), trace.attentions[1, 0], atol=1e-6
    )
    norm = array(shown["beyond_norm_attention"]["data"][0]["z"])
    value_norm = norm / np.where(trace.attentions[1, 0] > 0, trace.attentions[1, 0], 1.0)
    # ‖α f(x_j)‖ = α ‖f(x_j)‖: dividing by the weight leaves one norm per key column
    np.testing.assert_allclose(value_norm, np.broadcast_to(value_norm[:1], value_norm.shape), rtol=1e-3)
    assert "[CLS] and [SEP] receive" in " ".join(el.value for el in at.info)


def test_attribution_lists_every_method_with_its_correlation(model_state):
    at = open_page(model_state, beyond_view="Attribution")
    no_exception(at)
    heatmap = charts(at)["beyond_attribution"]["data"][0]
    assert [x.split("<br>")[0] for x in heatmap["x"]][0] == "leave-one-out"
    assert sum("ρ = " in x for x in heatmap["x"]) == 5
    table = at.dataframe[0].value
    assert len(table) == 5 and table["spearman_with_leave_one_out"].between(-1, 1).all()
    assert "Completeness" in " ".join(c.value for c in at.caption)


def knockout_bars(at) -> dict[str, dict[str, float]]:
    """{"with every head" / "heads knocked out": {"subplot: label": probability}} from the knock-out figure."""
    bars: dict[str, dict[str, float]] = {}
    for trace in charts(at)["beyond_knockout"]["data"]:
        values = bars.setdefault(trace["name"], {})
        values.update(
            {f"{trace['yaxis']}: {y}": float(x) for y, x in zip(trace["y"], array(trace["x"]), strict=True)}
        )
    return bars


def test_head_knockout_changes_the_predictions_shown(model_state, loaded):
    model, _ = loaded(model_state)
    last = model.config.num_hidden_layers - 1
    at = open_page(model_state, beyond_view="Head knock-out")
    no_exception(at)
    first = knockout_bars(at)
    assert first["with every head"] == pytest.approx(
        first["heads knocked out"], abs=1e-6
    )  # nothing knocked out yet
    heads = [f"L{layer}H{head}" for layer in (0, last) for head in range(model.config.num_attention_heads)]
    at.multiselect(key="beyond_heads").set_value(heads).run()
    no_exception(at)
    now = knockout_bars(at)
    shared = set(first["with every head"]) & set(now["with every head"])
    assert shared and all(abs(now["with every head"][k] - first["with every head"][k]) < 1e-6 for k in shared)
    assert (
        max(abs(now["with every head"][k] - now["heads knocked out"][k]) for k in now["with every head"])
        > 1e-3
    )
    assert "Knocked out: L0H0" in charts(at)["beyond_knockout"]["layout"]["title"]["text"]


def test_layer_by_layer_ends_on_the_final_prediction(model_state, loaded):
    at = open_page(model_state, beyond_view="Layer by layer")
    no_exception(at)
    model, _ = loaded(model_state)
    lens = charts(at)["beyond_logit_lens"]["data"]
    top = array(lens[0]["z"])
    answer = array(lens[1]["x"])
    assert top.shape[0] == answer.size == model.config.num_hidden_layers + 1
    assert abs(answer[-1] - top[-1, 0]) < 1e-6  # the last layer's top prediction is the answer


def test_an_encoder_without_heads_gets_norms_and_a_plain_message():
    at = open_page({"model_picker": MINILM}, beyond_view=TABS[0])
    no_exception(at)
    assert "beyond_norm_attention" in charts(at)
    for tab in TABS[1:]:
        at = open_page({"model_picker": MINILM}, beyond_view=tab)
        no_exception(at)
        assert "no trained MLM or NSP head" in texts(at), tab


def test_a_one_layer_one_head_model_shows_every_view(tmp_path):
    state = {
        "model_picker": "Another folder…",
        "model_path": str(save_tiny(tmp_path / "m", num_layers=1, num_heads=1)),
    }
    for tab in TABS:
        at = open_page(state, beyond_view=tab)
        no_exception(at)
        assert FIGURES[tab] <= set(charts(at)), tab


def test_a_typed_mask_is_explained_first_and_new_text_resets_the_choice(loaded):
    state = {"model_picker": DEFAULT_MODEL}
    _, tokenizer = loaded(state)
    at = open_page(state, beyond_view="Layer by layer", sentence_a="Paris is the [MASK] of France.")
    no_exception(at)
    position = tokenizer.encode_pair("Paris is the [MASK] of France.", PAIR[1]).tokens.index("[MASK]")
    assert at.selectbox(key="beyond_target").value == position
    assert "capital" in charts(at)["beyond_logit_lens"]["data"][0]["text"][-1][:3]
    at.selectbox(key="beyond_target").set_value(1).run()
    assert at.selectbox(key="beyond_target").value == 1
    at.sidebar.text_input(key="sentence_a").set_value("The [MASK] barked at the mailman.").run()
    no_exception(at)
    assert at.selectbox(key="beyond_target").value == 2  # [CLS] the [MASK]
