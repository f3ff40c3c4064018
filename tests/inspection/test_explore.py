"""Tests for bertviz_lite.inspection.explore and bertviz_lite.inspection.views: the data behind each explore page,
on a tiny random BERT."""

from __future__ import annotations

import copy
import io

import numpy as np
import pandas as pd
import pytest
import torch

from bertviz_lite.figures import head_view_figure, model_view_figure, neuron_view_figure
from bertviz_lite.figures.attention import MAX_TICK_LABELS, _attention_heatmap, _rollout_heatmap
from bertviz_lite.figures.model_view import PICKER_NAME
from bertviz_lite.inspection import analysis, explore, views
from bertviz_lite.inspection.views.attention import HEAD_VIEW_MAX_LINES, HEAD_VIEW_MAX_TOP_K
from bertviz_lite.inspection.views.predictions import copy_note, default_masks
from tests.app.tiny_checkpoint import build_tiny
from tests.attention_samples import mosaic_tile

PAIR = ("The cat sat on the mat because it was tired.", "It fell asleep in the warm sun.")


@pytest.fixture(scope="module")
def tiny():
    return build_tiny(max_positions=64)


@pytest.fixture(scope="module")
def trace(tiny):
    model, tokenizer = tiny
    return explore.trace_pair(model, tokenizer, *PAIR)


def test_trace_pair_shapes_and_eval_mode(tiny):
    model, tokenizer = tiny
    model.train()  # the trace must switch dropout off itself
    first = explore.trace_pair(model, tokenizer, *PAIR)
    second = explore.trace_pair(model, tokenizer, *PAIR)
    assert not model.training
    count = len(tokenizer.encode_pair(*PAIR))
    assert first.attentions.shape == (2, 4, count, count)
    assert first.queries.shape == (2, 4, count, 8)
    assert first.hidden_states.shape == (3, count, 32)
    assert first.mlm_logits.shape == (count, tokenizer.vocab_size) and first.nsp_logits.shape == (2,)
    np.testing.assert_array_equal(first.attentions, second.attentions)
    np.testing.assert_allclose(first.attentions.sum(-1), 1.0, atol=1e-5)
    assert first.has_sentence_b


def test_trace_pair_writes_mask_at_chosen_positions(tiny):
    model, tokenizer = tiny
    masked = explore.trace_pair(model, tokenizer, *PAIR, masked_positions=[3, 1])
    assert masked.masked_positions == (1, 3)
    assert [masked.tokens[i] for i in (1, 3)] == ["[MASK]", "[MASK]"]
    assert views.mask_token_positions(masked.tokens) == [1, 3]
    assert masked.encoding.tokens[1] != "[MASK]"  # the encoding keeps the original tokens
    with pytest.raises(ValueError, match="must lie in"):
        explore.trace_pair(model, tokenizer, *PAIR, masked_positions=[999])


def test_max_length_is_capped_by_the_position_table(tiny):
    model, tokenizer = tiny
    assert explore.effective_max_length(model, 512) == 64
    long = explore.trace_pair(model, tokenizer, "the cat sat " * 50, None, max_length=512)
    assert long.num_tokens == 64 and long.encoding.truncated


def test_encode_treats_blank_b_as_absent_and_rejects_blank_a(tiny):
    _, tokenizer = tiny
    assert explore.encode(tokenizer, "the cat", "   ", 32).tokens[-1] == "[SEP]"
    assert explore.encode(tokenizer, "the cat", "  ", 32).tokens.count("[SEP]") == 1
    with pytest.raises(ValueError, match="Sentence A is empty"):
        explore.encode(tokenizer, "  ", "the cat", 32)


def test_encoding_frame_and_input_warnings(tiny):
    _, tokenizer = tiny
    encoding = tokenizer.encode_pair("the cat 🎉 sat", "it fell", max_length=6)
    frame = views.encoding_frame(encoding)
    assert frame.columns.tolist() == ["token", "id", "segment", "position", "attention_mask", "word"]
    assert frame["token"].tolist() == encoding.tokens and frame["word"].iloc[0] == ""
    notes = explore.input_warnings(encoding, 6)
    assert any("truncated to 6 tokens" in n for n in notes)
    assert not explore.input_warnings(tokenizer.encode_pair("the cat"), 128)
    assert any(
        "1 piece of the text is not" in n
        for n in explore.input_warnings(tokenizer.encode_pair("the 🎉 cat"), 128)
    )
    assert any(
        "2 pieces of the text are not" in n
        for n in explore.input_warnings(tokenizer.encode_pair("🎉 a 🐝"), 128)
    )


def test_mask_encoding_is_reproducible_and_spares_special_tokens(tiny):
    _, tokenizer = tiny
    encoding = tokenizer.encode_pair(*PAIR)
    first = views.mask_encoding(encoding, tokenizer, 0.5, seed=3)
    again = views.mask_encoding(encoding, tokenizer, 0.5, seed=3)
    other = views.mask_encoding(encoding, tokenizer, 0.5, seed=4)
    assert torch.equal(first.decisions, again.decisions)
    assert not torch.equal(first.decisions, other.decisions)
    special = torch.tensor(encoding.special_tokens_mask, dtype=torch.bool)
    assert (first.decisions[special] == 0).all()
    random_ids = first.input_ids[first.decisions == 2]
    assert not set(random_ids.tolist()) & set(tokenizer.all_special_ids)
    frame = views.masking_frame(encoding, first, tokenizer)
    chosen = frame["decision"] != "not chosen"
    assert (frame.loc[chosen, "MLM label"] == frame.loc[chosen, "original"]).all()
    assert (frame.loc[~chosen, "MLM label"] == "").all()
    assert (frame.loc[frame["decision"] == "[MASK]", "model input"] == "[MASK]").all()


def test_embedding_helpers(tiny, trace):
    model, _ = tiny
    assert views.embedding_sum_error(trace) < 1e-6
    window = views.embedding_window(trace, start=5, size=4)
    parts = window.parts
    tokens = window.tokens
    assert tokens == trace.tokens[5:9] and all(p.shape == (4, 32) for p in parts)
    assert explore.token_window(10, 50, 4) == slice(6, 10)
    assert explore.token_window(3, 0, 64) == slice(0, 3)
    learned, sinusoidal = views.position_tables(model, 1000)
    assert learned.shape == sinusoidal.shape == (64, 32)
    np.testing.assert_allclose(learned, model.bert.embeddings.position_embeddings.weight.detach().numpy())
    np.testing.assert_allclose(sinusoidal, analysis.sinusoidal_position_table(64, 32))
    choices = views.vector_choices(2)
    assert choices[-1] == "after layer 2"
    np.testing.assert_array_equal(views.vectors_for(trace, choice=choices[-1]), trace.hidden_states[2])
    np.testing.assert_array_equal(views.vectors_for(trace, choice=choices[0]), trace.embeddings["token"])
    with pytest.raises(ValueError, match="unknown vectors"):
        views.vectors_for(trace, choice="nonsense")


def test_attention_block_follows_the_sentence_filter(trace):
    sentence = analysis.sentence_ids(trace.segments, trace.special)
    block_map = views.attention_map(trace, layer=1, head=2, sentence_filter="B→A")
    block = block_map.weights
    q_tokens = block_map.query_tokens
    k_tokens = block_map.key_tokens
    rows = np.flatnonzero(sentence == 1)
    cols = np.flatnonzero(sentence == 0)
    np.testing.assert_array_equal(block, trace.attentions[1, 2][np.ix_(rows, cols)])
    assert q_tokens == [trace.tokens[i] for i in rows] and k_tokens[0] == "[CLS]"
    frame = block_map.to_frame()
    assert len(frame) == rows.size * cols.size
    assert frame["query_index"].iloc[0] == rows[0] and frame["key_index"].iloc[-1] == cols[-1]
    full = views.attention_map(trace, layer=0, head=0, sentence_filter="All").weights
    np.testing.assert_array_equal(full, trace.attentions[0, 0])
    first = views.attention_map(trace, layer=0, head=0)
    fig = _attention_heatmap(first.weights, first.query_tokens, first.key_tokens, first.title)
    np.testing.assert_array_equal(fig.data[0].z, trace.attentions[0, 0])
    assert fig.layout.xaxis.nticks is None  # short inputs keep every label


def test_head_view_budget_and_mask(trace):
    assert views.head_view_top_k(20, 12) == HEAD_VIEW_MAX_TOP_K
    assert views.head_view_top_k(512, 12) * 512 * 12 <= HEAD_VIEW_MAX_LINES
    assert views.head_view_top_k(512, 12) >= 1
    assert views.head_view_min_weight(22) == 0.04 and views.head_view_min_weight(512) == 0.0
    assert views.head_view_links(trace, layer=1, heads=[0, 3]).to_frame()["head"].unique().tolist() == [0, 3]


def _drawn_lines(fig) -> list:
    """The head view's line traces that draw links (level 0: a head's legend-only entry, no data)."""
    return [t for t in fig.data if t.mode == "lines" and t.meta["level"] > 0]


def test_head_view_figure_windows_queries_and_keys(trace):
    fig = head_view_figure(
        views.head_view_links(
            trace, layer=1, heads=[0, 2], sentence_filter="All", window=slice(4, 10), min_weight=0.0
        )
    )
    columns = [t for t in fig.data if t.mode != "lines"]
    assert [list(c.text) for c in columns] == [trace.tokens[4:10]] * 2
    lines = _drawn_lines(fig)
    assert {t.meta["head"] for t in lines} == {0, 2}
    ys = np.concatenate([np.asarray(t.y, dtype=float) for t in lines])
    assert np.nanmax(ys) < 6 and fig.layout.meta == {"top_k": HEAD_VIEW_MAX_TOP_K, "start": 4, "stop": 10}
    focused = head_view_figure(
        views.head_view_links(
            trace, layer=1, heads=[0], sentence_filter="All", window=slice(4, 10), focus=6, min_weight=0.0
        )
    )
    starts = np.concatenate([np.asarray(t.y, dtype=float)[0::3] for t in _drawn_lines(focused)])
    assert set(starts[np.isfinite(starts)].tolist()) == {
        2.0
    }  # only the query at position 6 = row 2 of the window
    a_to_b = head_view_figure(
        views.head_view_links(trace, layer=0, heads=[0], sentence_filter="A→B", min_weight=0.0)
    )
    sentence = analysis.sentence_ids(trace.segments, trace.special)
    segments = np.concatenate(
        [np.asarray(t.y, dtype=float).reshape(-1, 3)[:, :2] for t in _drawn_lines(a_to_b)]
    ).astype(int)
    assert (sentence[segments[:, 0]] == 0).all() and (sentence[segments[:, 1]] == 1).all()


def test_model_view_figure_has_one_clickable_point_per_tile(trace):
    fig = model_view_figure(views.model_view(trace))
    size = trace.num_tokens  # short input: tiles are not downsampled
    picker = next(t for t in fig.data if t.name == PICKER_NAME)
    assert len(picker.x) == 8 and fig.layout.meta["tile"] == size
    for index, (layer, head) in enumerate(picker.customdata):
        np.testing.assert_allclose(
            mosaic_tile(fig, layer, head, size), trace.attentions[layer, head], atol=1e-6
        )
        assert (index, layer, head) == (layer * 4 + head, index // 4, index % 4)
        step = size + 1  # the point sits in the middle of its tile
        assert (
            head * step < picker.x[index] < head * step + size
            and layer * step < picker.y[index] < layer * step + size
        )
    assert np.isnan(fig.data[0].z[size]).all()  # a gap row between layers
    assert views.model_view_size(512) == 32 and views.model_view_size(20) == 20
    frame = views.model_view(trace, max_tokens=4).to_frame()
    assert len(frame) == 8 * 16
    np.testing.assert_allclose(
        frame.groupby(["layer", "head", "query_index"])["weight"].sum(), 1.0, atol=1e-6
    )


@pytest.mark.parametrize(
    ("selection", "expected"),
    [
        ({"points": [{"customdata": [1, 3], "point_index": 7}]}, (1, 3)),
        ({"points": [{"customdata": {"0": 1, "1": 2}}]}, (1, 2)),
        ({"points": [{"point_index": 6}]}, (1, 2)),
        ({"points": [{"customdata": [9, 9]}]}, None),
        ({"points": []}, None),
        (None, None),
    ],
)
def test_model_view_selection(selection, expected):
    assert explore.model_view_selection(selection, num_layers=2, num_heads=4) == expected


@pytest.mark.parametrize(
    ("selection", "expected"),
    [
        ({"points": [{"curve_number": 3, "customdata": 7}]}, 7),
        ({"points": [{"curve_number": 0}, {"curve_number": 5, "customdata": 2.0}]}, 2),
        ({"points": []}, None),
        (None, None),
    ],
)
def test_clicked_token(selection, expected):
    assert explore.clicked_token(selection) == expected


def test_head_statistics_layer_by_layer_equals_all_at_once(trace):
    expected = analysis.attention_statistics(trace.attentions, trace.tokens)
    pd.testing.assert_frame_equal(views.head_statistics(trace).to_frame(), expected, check_dtype=False)


def test_neuron_figure_and_frame(trace):
    neuron = views.neuron_view(trace, layer=1, head=2, query_index=3)
    fig = neuron_view_figure(neuron)
    weights = next(t for t in fig.data if t.name == "softmax weight")
    np.testing.assert_allclose(weights.x, trace.attentions[1, 2, 3], atol=1e-5)
    frame = neuron.to_frame()
    assert len(frame) == trace.num_tokens and "key_7" in frame and "weighted_value_0" in frame
    np.testing.assert_allclose(frame["weight"].sum(), 1.0)


def test_rollout_rows_sum_to_one_and_long_inputs_get_fewer_labels(trace):
    flow = analysis.attention_rollout(trace.attentions)
    np.testing.assert_allclose(flow.sum(-1), 1.0, atol=1e-6)
    fig = _rollout_heatmap(flow[-1], trace.tokens, "Attention rollout after layer 2")
    np.testing.assert_array_equal(fig.data[0].z, flow[-1])
    assert fig.layout.xaxis.nticks is None
    long = _rollout_heatmap(np.eye(200), [f"t{i}" for i in range(200)], "Attention rollout after layer 1")
    assert long.layout.xaxis.nticks == long.layout.yaxis.nticks == MAX_TICK_LABELS


def test_predictions(tiny):
    model, tokenizer = tiny
    encoding = tokenizer.encode_pair(*PAIR)
    position = views.default_mask_position(encoding)
    assert encoding.sequence_ids[position] == 0 and encoding.tokens[position].isalpha()
    assert position in views.maskable_positions(encoding)
    assert 0 not in views.maskable_positions(encoding)
    trace = explore.trace_pair(model, tokenizer, *PAIR, masked_positions=[position])
    top = views.top_predictions(trace, position, k=5).to_frame()
    probs = torch.softmax(torch.tensor(trace.mlm_logits[position], dtype=torch.float64), -1)
    np.testing.assert_allclose(top["probability"], torch.topk(probs, 5).values.numpy())
    assert top["token"].tolist() == tokenizer.convert_ids_to_tokens(top["id"].tolist())
    p = views.next_sentence(trace).p_is_next
    assert p == pytest.approx(
        torch.softmax(torch.tensor(trace.nsp_logits, dtype=torch.float64), -1)[0].item()
    )
    assert views.next_sentence(trace).to_frame()["probability"].sum() == pytest.approx(1.0)


def test_model_card_names_sizes_vocabulary_and_heads(tiny):
    model, tokenizer = tiny
    config = model.config
    card = explore.model_card(model, tokenizer)
    assert card.startswith(
        f"{config.num_hidden_layers} layers · {config.num_attention_heads} heads · hidden "
    )
    assert card.endswith(f"vocabulary {tokenizer.vocab_size} · learned positions · heads: MLM, NSP")


def test_default_masks_pick_one_word_unless_the_text_already_has_a_mask(tiny):
    _, tokenizer = tiny
    encoding = tokenizer.encode_pair(*PAIR)
    assert default_masks(encoding) == (views.default_mask_position(encoding),)
    typed = tokenizer.encode_pair("The cat sat on the [MASK].", PAIR[1])
    assert default_masks(typed) == ()


def test_predictions_without_heads_say_so(tiny):
    model, tokenizer = copy.deepcopy(tiny)
    model.has_mlm_head = model.has_nsp_head = False  # as for all-MiniLM-L6-v2, whose file has no heads
    headless = explore.trace_pair(model, tokenizer, *PAIR)
    with pytest.raises(ValueError, match="no trained masked-language-model head"):
        views.top_predictions(headless, 1)
    with pytest.raises(ValueError, match="no trained next-sentence"):
        views.next_sentence(headless)
    assert views.is_next_probability(headless.nsp_logits) is None


def test_head_logits_are_made_on_first_use_and_match_a_full_trace(tiny, trace):
    """trace_pair leaves the pre-training heads out of the pass; the logits the pages read are the model's own."""
    model, tokenizer = tiny
    assert trace.output.mlm_logits is None and trace.output.nsp_logits is None
    inputs = trace.encoding.to_tensors()
    with torch.inference_mode():
        full = model.trace(**inputs, heads=True)
    np.testing.assert_allclose(trace.mlm_logits, full.mlm_logits[0].numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(trace.nsp_logits, full.nsp_logits[0].numpy(), rtol=1e-5, atol=1e-5)
    assert trace.mlm_logits.shape == (trace.num_tokens, model.config.vocab_size)


def test_source_version_changes_when_a_checkpoint_is_rewritten(tmp_path):
    from tests.app.tiny_checkpoint import save_tiny

    folder = save_tiny(tmp_path / "ck")
    before = explore.source_version(str(folder))
    assert before == explore.source_version(str(folder)) and "model.safetensors" in before
    save_tiny(folder, max_positions=32)
    assert explore.source_version(str(folder)) != before
    assert explore.source_version("all-MiniLM-L6-v2") == "packaged"
    assert explore.source_version(str(tmp_path / "nothing")) == "missing"


def test_csv_bytes():
    frame = pd.DataFrame({"token": ["a", "b"], "value": [0.25, 0.75]})
    back = pd.read_csv(io.BytesIO(explore.csv_bytes(frame)))
    assert back["value"].tolist() == [0.25, 0.75]


def test_copy_note_names_a_first_guess_the_input_already_shows():
    tokens = ["[CLS]", "bees", "make", "[MASK]", ".", "[SEP]"]
    note = copy_note(tokens, 3, "bees")
    assert note is not None and "*bees*" in note and "Why this word" in note
    assert copy_note(tokens, 3, "honey") is None  # not in the input
    assert (
        copy_note(["[CLS]", "the", "cat", "saw", "the", "[MASK]", "[SEP]"], 5, "the") is None
    )  # function word
    assert copy_note(["[CLS]", "play", "##ing", "[MASK]", "[SEP]"], 3, "##ing") is None  # a piece, not a word
    assert copy_note(["[CLS]", "bees", "[SEP]"], 1, "bees") is None  # the word at the blank itself is no copy


def test_nsp_caption_says_the_pair_is_judged_as_typed_and_gives_the_masked_variant():
    assert views.nsp_caption(0.34, 0.53, 0).endswith("Computed on the pair as typed.")
    with_picks = views.nsp_caption(0.34, 0.53, 2)
    assert "as typed, without the 2 tokens picked above masked" in with_picks
    assert "P(IsNext) would be 53.0% instead of 34.0%" in with_picks
