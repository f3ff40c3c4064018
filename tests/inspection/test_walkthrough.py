"""The walkthrough's steps, questions and answers, and its figures, on small arrays (no model, no app)."""

import numpy as np
import pytest

from bertviz_lite.figures._common import NARROW_TITLE_CHARS
from bertviz_lite.figures.walkthrough import MAX_ID_COLUMNS, ids_figure, one_head_figure, residual_figure
from bertviz_lite.inspection import walkthrough as walk
from bertviz_lite.model.config import BertConfig
from tests.attention_samples import TOKENS, random_attention
from tests.trace_arrays import pair_trace


class FakeTokenizer:
    """Ids are the letters a, b, c, …: enough for mlm_question."""

    def convert_ids_to_tokens(self, ids):
        return [chr(ord("a") + i) for i in ids]


def test_nine_steps_in_the_lecture_order_with_texts_that_fill_in():
    assert walk.STEP_KEYS == (
        "tokens",
        "ids",
        "embeddings",
        "one_head",
        "many_heads",
        "residual",
        "mlm",
        "nsp",
        "build",  # the last points on to the Build section (Your BERT)
    )
    config = BertConfig(
        vocab_size=100,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    facts = walk.step_facts(config, 100, 8, "dog")
    texts = [walk.step_text(step, facts) for step in walk.STEPS]
    assert all("{" not in text for text in texts)
    assert "“dog”" in texts[0] and "(d = 8)" in texts[3] and "32 → 64 → 32" in texts[5]
    assert "Your BERT" in texts[-1] and "Build" in texts[-1]
    assert [walk.clamp_step(n) for n in (-5, 0, 1, 9, 10, 99)] == [1, 1, 1, 9, 9, 9]


def test_attention_question_answer_is_the_heaviest_key_among_the_options():
    attn = random_attention(2, 4, 8, 8, seed=3)
    question = walk.attention_question(pair_trace(attn, TOKENS), layer=1, head=2, query=2)
    best = int(np.argmax(attn[1, 2, 2]))
    assert question.answer == f"{TOKENS[best]} ({best})"
    assert {"[CLS] (0)", "dog (2)", "the (1)", "##gy (3)", "[SEP] (4)"} <= set(question.options)
    assert question.answer in question.options and len(set(question.options)) == len(question.options)
    assert f"{attn[1, 2, 2, best]:.0%}" in question.explanation


def test_check_answer_right_wrong_and_no_guess():
    question = walk.nsp_question(0.8)
    assert question.answer == walk.NSP_OPTIONS[0]
    assert walk.check_answer(question, walk.NSP_OPTIONS[0]) == walk.Verdict(
        True, "Right! The model gives 80% that B follows A."
    )
    wrong = walk.check_answer(question, walk.NSP_OPTIONS[1])
    assert not wrong.correct and wrong.message.startswith("Not this time: you said No")
    assert not walk.check_answer(question, None).correct
    assert walk.nsp_question(0.2).answer == walk.NSP_OPTIONS[1]
    with pytest.raises(ValueError, match="is not one of the options"):
        walk.check_answer(question, "maybe")


def test_mlm_question_offers_the_top_three_and_the_hidden_word():
    logits = np.full((3, 8), -5.0)
    logits[1, [4, 2, 6]] = [3.0, 2.0, 1.0]  # e, then c, then g
    question = walk.mlm_question(logits, FakeTokenizer(), position=1, original="h")
    assert question.options == ("c", "e", "g", "h") and question.answer == "e"
    assert "“e”" in question.explanation and "hidden word was “h”" in question.explanation
    typed = walk.mlm_question(logits, FakeTokenizer(), position=1, original=None)
    assert typed.options == ("c", "e", "g") and "hidden" not in typed.explanation


def test_one_head_data_reproduces_the_attention_row():
    rng = np.random.default_rng(0)
    queries, keys, values = (rng.normal(size=(2, 4, 8, 8)) for _ in range(3))
    trace = pair_trace(random_attention(2, 4, 8, 8), TOKENS, queries, keys, values)
    data = walk.one_head_data(trace, layer=1, head=3, query_index=5)
    scores = keys[1, 3] @ queries[1, 3, 5] / np.sqrt(8)
    expected = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()
    np.testing.assert_allclose(data.weights, expected, atol=1e-6)  # the trace holds float32, as the model's
    np.testing.assert_allclose(
        data.contributions, np.linalg.norm(expected[:, None] * values[1, 3], axis=1), rtol=1e-5
    )
    assert list(data.to_frame()["key"]) == TOKENS
    fig = one_head_figure(data)
    np.testing.assert_allclose(fig.data[1].x, expected)
    assert fig.layout.title.text.startswith("Layer 1, head 3: the query of it (5)")


def test_residual_changes_are_relative_and_drawn_per_layer():
    states = np.ones((3, 2, 4))
    states[1:] *= 3  # layer 1 triples every vector (change 2), layer 2 keeps it (change 0)
    data = walk.residual_changes(pair_trace(random_attention(2, 1, 2, 2), ["a", "b"], hidden_states=states))
    np.testing.assert_allclose(data.change, [[2, 2], [0, 0]])
    assert len(data.to_frame()) == 4
    fig = residual_figure(data)
    assert list(fig.data[0].y) == ["layer 1", "layer 2"]


def test_ids_figure_shows_token_position_and_segment_per_column():
    fig = ids_figure(TOKENS, list(range(8)), [0, 0, 0, 0, 0, 1, 1, 1])
    assert fig.data[0].text[0] == TOKENS and fig.data[0].text[2][-1] == "1"
    assert list(fig.data[0].z[2]) == [0, 0, 0, 0, 0, 1, 1, 1]
    with pytest.raises(ValueError, match="segment ids"):
        ids_figure(TOKENS, list(range(8)), [0])


# ---------------------------------------------------------------- phone versions (show_figure's `narrow`)


def title_lines(fig) -> list[str]:
    return fig.layout.title.text.split("<br>")


def fits_a_phone(fig) -> bool:
    """A two-line title of at most NARROW_TITLE_CHARS a line (a one-line title ran past a 358-px figure)."""
    lines = title_lines(fig)
    return len(lines) == 2 and all(len(line) <= NARROW_TITLE_CHARS for line in lines)


def test_phone_ids_table_has_a_row_a_token_with_the_same_cells():
    """22 columns of ~10 px on a phone ran their token labels into each other: the phone's table is one row a token."""
    tokens = [*TOKENS, "<b>x</b>"]  # a folder model's vocabulary can hold anything: shown as text
    segments = [0, 0, 0, 0, 0, 1, 1, 1, 1]
    wide = ids_figure(tokens, range(9), segments)
    phone = ids_figure(tokens, range(9), segments, narrow=True)
    assert len(title_lines(wide)) == 1 and fits_a_phone(phone)
    assert np.asarray(phone.data[0].text).tolist() == np.asarray(wide.data[0].text).T.tolist()
    np.testing.assert_array_equal(np.asarray(phone.data[0].z), np.asarray(wide.data[0].z).T)
    assert phone.data[0].text[-1][0] == wide.data[0].text[0][-1] == "&lt;b&gt;x&lt;/b&gt;"
    assert phone.layout.height >= 24 * len(tokens)  # rows of 16-px text


def test_phone_residual_has_a_row_a_token_and_its_colour_bar_below():
    states = np.arange(1, 25, dtype=float).reshape(3, 2, 4)
    data = walk.residual_changes(pair_trace(random_attention(2, 1, 2, 2), ["a", "b"], hidden_states=states))
    wide = residual_figure(data)
    phone = residual_figure(data, narrow=True)
    np.testing.assert_allclose(np.asarray(phone.data[0].z), np.asarray(wide.data[0].z).T)
    assert list(phone.data[0].y) == list(wide.data[0].x) == ["a (0)", "b (1)"] and list(phone.data[0].x) == [
        "L1",
        "L2",
    ]
    assert phone.data[0].colorbar.orientation == "h" and wide.data[0].colorbar.orientation is None
    assert fits_a_phone(phone) and len(title_lines(wide)) == 1


def test_phone_one_head_has_short_plot_titles_and_the_same_bars():
    rng = np.random.default_rng(1)
    queries, keys, values = (rng.normal(size=(1, 2, 8, 4)) for _ in range(3))
    trace = pair_trace(random_attention(1, 2, 8, 8), TOKENS, queries, keys, values)
    data = walk.one_head_data(trace, layer=0, head=1, query_index=2)
    wide = one_head_figure(data)
    phone = one_head_figure(data, narrow=True)
    assert max(len(note.text) for note in wide.layout.annotations) > 15  # desktop: as it was
    assert all(len(note.text) <= 10 for note in phone.layout.annotations)  # three ~80-px plots
    assert phone.to_plotly_json()["data"] == wide.to_plotly_json()["data"]
    assert fits_a_phone(phone) and " ".join(title_lines(phone)) == wide.layout.title.text


def test_phone_tables_of_a_long_input_show_its_first_tokens_and_say_so():
    """600 words on a phone: a row a token would make a figure thousands of pixels tall; both tables stop at
    MAX_ID_COLUMNS rows, and the title's third line says how many of how many."""
    tokens = [f"w{i}" for i in range(100)]
    ids = ids_figure(tokens, range(100), [0] * 100, narrow=True)
    states = np.ones((3, 100, 4)) * np.arange(1, 4)[:, None, None]
    changes = walk.residual_changes(
        pair_trace(random_attention(2, 1, 100, 100), tokens, hidden_states=states)
    )
    residual = residual_figure(changes, narrow=True)
    for fig, rows in ((ids, len(ids.data[0].text)), (residual, len(residual.data[0].y))):
        assert rows == MAX_ID_COLUMNS
        lines = title_lines(fig)
        assert len(lines) == 3 and lines[2] == f"first {MAX_ID_COLUMNS} of 100 tokens"
        assert all(len(line) <= NARROW_TITLE_CHARS for line in lines)
    np.testing.assert_allclose(np.asarray(residual.data[0].z), changes.change.T[:MAX_ID_COLUMNS])
