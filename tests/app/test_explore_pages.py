"""AppTest: every explore page on MiniLM and demo-tiny, checked through the numbers in its figures."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from bertviz_lite.figures import tabs
from bertviz_lite.figures.tabs import titles
from bertviz_lite.inspection import analysis, explore, views
from bertviz_lite.loading.pretrained import DEFAULT_MODEL, DEMO
from tests.app.conftest import (
    APP,
    HAS_DEMO,
    PAGES,
    PAIR,
    array,
    charts,
    chips,
    no_exception,
    run_app,
    texts,
)
from tests.app.tiny_checkpoint import save_tiny
from tests.attention_samples import mosaic_tile

ATTENTION_TABS = titles(tabs.ATTENTION_TABS)[1:]  # after the Heatmap, which a visit opens


def own_trace(loaded, state, masked=(), pair=PAIR, max_length=128) -> explore.PairTrace:
    model, tokenizer = loaded(state)
    return explore.trace_pair(model, tokenizer, *pair, max_length=max_length, masked_positions=masked)


# ---------------------------------------------------------------- tokens


def test_tokens_page_chips_and_table_match_the_tokenizer(source, loaded):
    at = run_app(source)
    no_exception(at)
    _, tokenizer = loaded(source)
    encoding = tokenizer.encode_pair(*PAIR)
    shown = chips(at.get("html")[0].value)
    assert [c[0] for c in shown] == encoding.tokens
    assert [c[1] for c in shown] == encoding.position_ids
    assert [c[2] for c in shown] == encoding.token_type_ids
    assert "bvl-cls" in shown[0][3] and "bvl-sep" in shown[-1][3]
    table = at.dataframe[0].value
    assert table["token"].tolist() == encoding.tokens
    assert table["id"].tolist() == encoding.input_ids
    assert table["segment"].tolist() == encoding.token_type_ids


def test_masking_panel_shows_bert_masking_and_resamples(source, loaded):
    at = run_app(source)
    _, tokenizer = loaded(source)
    encoding = tokenizer.encode_pair(*PAIR)
    for seed in (0, 1):
        expected = views.masking_frame(
            encoding, views.mask_encoding(encoding, tokenizer, 0.15, seed), tokenizer
        )
        table = at.dataframe[1].value
        assert table["decision"].tolist() == expected["decision"].tolist()
        assert table["MLM label"].tolist() == expected["MLM label"].tolist()
        masked_chips = chips(at.get("html")[1].value)
        assert [c[0] for c in masked_chips] == table["model input"].tolist()
        assert all(
            ("bvl-dec-mask" in c[3]) == (d == "[MASK]")
            for c, d in zip(masked_chips, table["decision"], strict=True)
        )
        chosen = table["decision"] != "not chosen"
        assert (table.loc[chosen, "MLM label"] == table.loc[chosen, "original"]).all()
        assert (table.loc[table["decision"] == "[MASK]", "model input"] == "[MASK]").all()
        next(b for b in at.button if b.label == "Resample").click().run()
    assert at.session_state["mask_seed"] == 2


# ---------------------------------------------------------------- embeddings


def test_embedding_sum_equals_token_plus_position_plus_segment(source, loaded):
    at = run_app(source, "embeddings")
    no_exception(at)
    figures = charts(at)
    token, position, segment, summed, layer_norm = (
        array(t["z"]).astype(np.float64) for t in figures["embedding_parts"]["data"]
    )
    np.testing.assert_allclose(summed, token + position + segment, atol=1e-5)
    model, tokenizer = loaded(source)
    ids = torch.tensor(tokenizer.encode_pair(*PAIR).input_ids)
    np.testing.assert_allclose(
        token, model.bert.embeddings.word_embeddings.weight[ids].detach().numpy(), atol=1e-6
    )
    ln = model.bert.embeddings.LayerNorm
    expected_ln = torch.nn.functional.layer_norm(
        torch.tensor(summed, dtype=torch.float32), ln.normalized_shape, ln.weight, ln.bias, ln.eps
    )
    np.testing.assert_allclose(layer_norm, expected_ln.detach().numpy(), atol=1e-4)
    norms = {t["name"]: array(t["y"]) for t in figures["embedding_norms"]["data"]}
    np.testing.assert_allclose(norms["sum"], np.linalg.norm(summed, axis=1), rtol=1e-5)
    for name in ("position_similarity_model", "position_similarity_sinusoidal"):
        np.testing.assert_allclose(np.diag(array(figures[name]["data"][0]["z"])), 1.0, atol=1e-5)
    points = sum(len(array(t["x"])) for t in figures["pca"]["data"])
    assert points == len(ids)


# ---------------------------------------------------------------- attention


def test_attention_heatmap_rows_sum_to_one_and_match_the_model(source, loaded):
    at = run_app(source, "attention")
    no_exception(at)
    z = array(charts(at)["attention_heatmap"]["data"][0]["z"]).astype(np.float64)
    np.testing.assert_allclose(z.sum(axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(z, own_trace(loaded, source).attentions[0, 0], atol=1e-6)


def test_sentence_filter_cuts_the_heatmap_to_a_to_b(source, loaded):
    at = run_app(source, "attention", attn_sentence_filter="A→B", attn_layer=1, attn_head=1)
    no_exception(at)
    trace = own_trace(loaded, source)
    heatmap = charts(at)["attention_heatmap"]["data"][0]
    sentence = analysis.sentence_ids(trace.segments, trace.special)
    rows = np.flatnonzero(sentence == 0)
    cols = np.flatnonzero(sentence == 1)
    np.testing.assert_allclose(array(heatmap["z"]), trace.attentions[1, 1][np.ix_(rows, cols)], atol=1e-6)
    assert len(heatmap["y"]) == rows.size and len(heatmap["x"]) == cols.size


@pytest.mark.parametrize("tab", ATTENTION_TABS)
def test_attention_views_show_the_trace(source, loaded, tab):
    at = run_app(source, "attention", attn_view=tab, attn_layer=1, attn_head=1)
    no_exception(at)
    trace = own_trace(loaded, source)
    num_layers, num_heads, count = trace.attentions.shape[:3]
    figures = charts(at)
    wide = [
        key for key in figures if not key.startswith("narrow__")
    ]  # a phone's version shares its figure's CSV
    assert len(at.get("download_button")) >= len(wide) >= 1
    assert (len(wide) < len(figures)) == (
        tab in ("Head view", "Model view", "Neuron view")
    )  # drawn for phones too
    if tab == "Head view":
        legend = {t["name"] for t in figures["head_view"]["data"] if t.get("showlegend")}
        assert legend == {f"head {h}" for h in range(num_heads)}
        ys = np.concatenate(
            [array(t["y"]) for t in figures["head_view"]["data"] if t.get("meta", {}).get("level")]
        )
        ys = ys[np.isfinite(ys)]
        assert ys.size and ys.min() >= 0 and ys.max() < count
    elif tab == "Model view":
        mosaic = array(figures["model_view"]["data"][0]["z"])
        size = figures["model_view"]["layout"]["meta"]["tile"]
        for layer, head in np.ndindex(num_layers, num_heads):
            tile = mosaic_tile(mosaic, layer, head, size)
            np.testing.assert_allclose(tile.sum(axis=1), 1.0, atol=1e-5)
        np.testing.assert_allclose(mosaic_tile(mosaic, 1, 1, size), trace.attentions[1, 1], atol=1e-6)
        picker = next(t for t in figures["model_view"]["data"] if t["type"] == "scatter")
        assert len(array(picker["x"])) == num_layers * num_heads
        np.testing.assert_allclose(
            array(figures["model_view_head"]["data"][0]["z"]), trace.attentions[1, 1], atol=1e-6
        )
    elif tab == "Neuron view":
        bars = next(t for t in figures["neuron_view"]["data"] if t.get("name") == "softmax weight")
        np.testing.assert_allclose(array(bars["x"]), trace.attentions[1, 1, 1], atol=1e-5)
    elif tab == "Head statistics":
        z = array(figures["head_statistics"]["data"][0]["z"])
        expected = analysis.attention_statistics(trace.attentions, trace.tokens)
        np.testing.assert_allclose(z.ravel(), expected["entropy"], atol=1e-5)
        assert len(at.dataframe[0].value) == num_layers * num_heads
    elif tab == "Rollout":
        z = array(figures["rollout"]["data"][0]["z"])
        np.testing.assert_allclose(z.sum(axis=1), 1.0, atol=1e-5)
        np.testing.assert_allclose(z, analysis.attention_rollout(trace.attentions)[-1], atol=1e-5)


def test_attention_page_stays_light_at_512_tokens():
    long_a = "the quick brown fox jumps over the lazy dog " * 40
    long_b = "a small bird sings in the tall tree " * 40
    for tab in ["Heatmap", "Head view", "Model view"]:
        at = run_app(
            {"model_picker": "all-MiniLM-L6-v2"},
            "attention",
            sentence_a=long_a,
            sentence_b=long_b,
            max_length=512,
            attn_view=tab,
        )
        no_exception(at)
        assert "truncated to 512 tokens" in texts(at)
        figures = charts(at)
        if tab == "Heatmap":
            assert array(figures["attention_heatmap"]["data"][0]["z"]).shape == (512, 512)
        if tab == "Head view":
            lines = sum(
                len(array(t["x"])) // 3
                for t in figures["head_view"]["data"]
                if t.get("meta", {}).get("level")
            )
            assert 0 < lines <= views.attention.HEAD_VIEW_MAX_LINES
        if tab == "Model view":
            assert figures["model_view"]["layout"]["meta"]["tile"] == 32
            assert array(figures["model_view"]["data"][0]["z"]).shape == (6 * 33 - 1, 12 * 33 - 1)
        assert sum(len(el.proto.spec) for el in at.get("plotly_chart")) < 8_000_000


# ---------------------------------------------------------------- predictions


def test_minilm_predictions_page_explains_and_offers_the_english_model():
    at = run_app({"model_picker": "all-MiniLM-L6-v2"}, "predictions")
    no_exception(at)
    assert "cannot guess masked words" in texts(at)
    button = next(b for b in at.button if b.label == f"Switch to {DEFAULT_MODEL}")
    button.click().run()
    assert at.session_state["model_picker"] == DEFAULT_MODEL
    assert any(key.startswith("predictions_") for key in charts(at))


def test_fresh_app_opens_on_the_english_model_and_fills_in_paris():
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["sentence_a"] = "Paris is the [MASK] of France."
    at.session_state["sentence_b"] = "It is famous for the Eiffel Tower."
    at.run()
    assert at.selectbox(key="model_picker").value == DEFAULT_MODEL
    assert "MLM/NSP heads trained here on English" in " ".join(c.value for c in at.sidebar.caption)
    at.switch_page(PAGES["predictions"]).run()
    no_exception(at)
    predictions = [key for key in charts(at) if key.startswith("predictions_")]
    assert len(predictions) == 1
    top = list(charts(at)[predictions[0]]["data"][0]["y"])
    assert "capital" in top[:5], top
    p_is_next = array(charts(at)["nsp"]["data"][0]["x"])
    assert p_is_next.shape == (2,) and abs(p_is_next.sum() - 1) < 1e-6


def test_a_first_guess_copied_from_the_input_gets_a_note():
    at = run_app(
        {"model_picker": DEFAULT_MODEL}, "predictions", sentence_a="Monday comes after [MASK].", sentence_b=""
    )
    no_exception(at)
    top = list(
        next(chart for key, chart in charts(at).items() if key.startswith("predictions_"))["data"][0]["y"]
    )
    notes = [c.value for c in at.caption if "already shows" in c.value]
    assert top[0] == "monday" and len(notes) == 1 and "*monday*" in notes[0], (top, notes)  # it copies: noted
    at.session_state["sentence_a"] = "Paris is the [MASK] of France."
    at.run()
    assert not [c.value for c in at.caption if "already shows" in c.value]  # "capital" is no copy: no note


def test_demo_predictions_match_the_mlm_and_nsp_heads(loaded, tiny_folder):
    state = (
        {"model_picker": DEMO} if HAS_DEMO else {"model_picker": "Another folder…", "model_path": tiny_folder}
    )
    at = run_app(state, "predictions")
    no_exception(at)
    chosen = at.multiselect[0].value
    assert len(chosen) == 1
    trace = own_trace(loaded, state, masked=chosen)
    model, tokenizer = loaded(state)
    bars = charts(at)[f"predictions_{chosen[0]}"]["data"][0]
    probs = torch.softmax(torch.tensor(trace.mlm_logits[chosen[0]], dtype=torch.float64), -1)
    top = torch.topk(probs, 10)
    np.testing.assert_allclose(array(bars["x"]), top.values.numpy(), rtol=1e-5)
    assert list(bars["y"]) == tokenizer.convert_ids_to_tokens(top.indices.tolist())
    nsp = array(charts(at)["nsp"]["data"][0]["x"])  # on the pair as typed, not with the page's own mask
    as_typed = own_trace(loaded, state).nsp_logits
    np.testing.assert_allclose(nsp, torch.softmax(torch.tensor(as_typed, dtype=torch.float64), -1), rtol=1e-5)
    assert "as typed" in " ".join(c.value for c in at.caption)


def test_typed_mask_is_predicted(loaded, tiny_folder):
    state = (
        {"model_picker": DEMO} if HAS_DEMO else {"model_picker": "Another folder…", "model_path": tiny_folder}
    )
    at = run_app(state, "predictions", sentence_a="The cat sat on the [MASK].")
    no_exception(at)
    _, tokenizer = loaded(state)
    position = tokenizer.encode_pair("The cat sat on the [MASK].", PAIR[1]).tokens.index("[MASK]")
    assert at.multiselect[0].value == []
    assert f"predictions_{position}" in charts(at)


# ---------------------------------------------------------------- inputs, errors, state


@pytest.mark.parametrize(
    ("extra", "kind", "message"),
    [
        ({"sentence_a": ""}, "error", "Sentence A is empty"),
        ({"sentence_a": "   \t "}, "error", "Sentence A is empty"),
        ({"sentence_a": "word " * 4000, "sentence_b": ""}, "warning", "truncated"),
        ({"sentence_a": "🎉🦜 party"}, "warning", "[UNK]"),
        (
            {"model_picker": "Another folder…", "model_path": "/no/such/folder"},
            "error",
            "only from the server's",
        ),
        ({"model_picker": "Another folder…", "model_path": "/root/.ssh"}, "error", "only from the server's"),
        ({"model_picker": "Another folder…", "model_path": ""}, "error", "Type the path of a model folder"),
    ],
    ids=["empty-A", "only-spaces", "20k-characters", "emoji", "missing-folder", "secret-folder", "no-path"],
)
def test_bad_input_gives_a_plain_message_on_every_page(extra, kind, message):
    at = run_app({"model_picker": "all-MiniLM-L6-v2"}, **extra)
    for page in PAGES:
        if page != "tokens":
            at.switch_page(PAGES[page]).run()
        no_exception(at)
        assert any(message in el.value for el in getattr(at, kind)), (page, texts(at))


def test_a_one_layer_one_head_model_shows_every_view(tmp_path):
    state = {
        "model_picker": "Another folder…",
        "model_path": str(save_tiny(tmp_path / "m", num_layers=1, num_heads=1)),
    }
    for tab in ["Heatmap", *ATTENTION_TABS]:
        at = run_app(state, "attention", attn_view=tab)
        no_exception(at)
        assert charts(at), tab
    for page in ["embeddings", "predictions"]:
        no_exception(run_app(state, page))


def test_a_folder_that_is_not_bert_is_refused(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "gpt2"}', encoding="utf-8")
    at = run_app({"model_picker": "Another folder…", "model_path": str(tmp_path)}, "attention")
    no_exception(at)
    assert "not a BERT model" in at.error[0].value


def test_the_pair_persists_across_pages_and_models_switch_cleanly(tiny_folder):
    at = run_app({"model_picker": "all-MiniLM-L6-v2"}, "attention", attn_layer=5, attn_head=11)
    no_exception(at)
    at.sidebar.text_input(key="sentence_a").set_value("A dog barked loudly.").run()
    at.switch_page("pages_app/explore/1_Tokens.py").run()
    assert at.sidebar.text_input(key="sentence_a").value == "A dog barked loudly."
    assert [c[0] for c in chips(at.get("html")[0].value)][:5] == ["[CLS]", "a", "dog", "barked", "loudly"]
    at.switch_page("pages_app/explore/3_Attention.py").run()
    at.session_state["model_picker"] = "Another folder…"
    at.session_state["model_path"] = tiny_folder
    at.session_state["attn_layer"] = 5  # beyond the tiny model's 2 × 4
    at.session_state["attn_head"] = 11
    at.run()
    no_exception(at)
    assert (at.session_state["attn_layer"], at.session_state["attn_head"]) == (0, 0)
    assert "knows 64 positions" in texts(at)


def test_the_head_picker_chooses_the_head_the_head_view_shows():
    at = run_app({"model_picker": DEMO} if HAS_DEMO else {}, "attention", attn_view="Head view")
    assert not at.exception
    at.selectbox(key="attn_head").set_value(1).run()
    assert at.multiselect(key="hv_heads").value == [1]
    assert {
        trace["legendgroup"] for trace in charts(at)["head_view"]["data"] if trace.get("legendgroup")
    } == {"head 1"}


def _opened_with(page: str, query: dict) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update({"a": PAIR[0], "b": PAIR[1], **query})
    at.switch_page(PAGES[page])
    return at.run()


def test_a_link_reopens_the_masked_tokens_the_knocked_out_heads_and_the_picked_token():
    predictions = _opened_with("predictions", {"masked": "2,4,999"})
    assert not predictions.exception
    assert predictions.multiselect(key="pred_mask").value == [2, 4]  # 999 is past this input's end
    assert {"predictions_2", "predictions_4"} <= set(charts(predictions))
    beyond = _opened_with(
        "beyond_attention", {"tab": "Head knock-out", "knocked": "L0H1,L1H0", "token": "-1"}
    )
    assert not beyond.exception
    assert beyond.multiselect(key="beyond_heads").value == ["L0H1", "L1H0"]
    assert beyond.selectbox(key="beyond_target").value == -1  # the next-sentence decision
    neuron = _opened_with("attention", {"tab": "Neuron view", "token": "3"})
    assert neuron.selectbox(key="nv_query").value == 3
