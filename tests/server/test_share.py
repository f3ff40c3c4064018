"""Shareable links: untrusted query parameters read back safely, and the state written as a link."""

from urllib.parse import parse_qs, urlparse

from bertviz_lite import limits
from bertviz_lite.server import share

MODELS = ["minilm-english", "all-MiniLM-L6-v2", "demo-tiny"]


def test_a_good_link_reads_back_exactly():
    state = share.parse_query(
        {
            "a": "Hi there.",
            "b": "",
            "model": "demo-tiny",
            "layer": "1",
            "head": "3",
            "step": "4",
            "present": "1",
        },
        MODELS,
        "minilm-english",
    )
    assert state == share.SharedState("Hi there.", "", "demo-tiny", layer=1, head=3, step=4, present=True)
    link = share.share_link("http://host:8501/", "Attention", state)
    assert link.startswith("http://host:8501/Attention?")
    assert (
        share.parse_query(
            {k: v[0] for k, v in parse_qs(urlparse(link).query).items()} | {"b": ""}, MODELS, "minilm-english"
        )
        == state
    )


def test_a_link_carries_the_sentence_filter_and_the_open_tab():
    state = share.SharedState(layer=2, head=5, sentence_filter="A→B", tab="Model view")
    query = share.query_for(state)
    assert query == {"layer": "2", "head": "5", "filter": "A→B", "tab": "Model view"}
    assert share.parse_query(query, MODELS, "minilm-english") == state
    bad = share.parse_query({"filter": "C→D", "tab": "<script>"}, MODELS, "minilm-english")
    assert bad.sentence_filter is None and bad.tab is None
    assert "sentence filter ('C→D') is not one of All, A→A" in bad.notes[0] and "tab" in bad.notes[1]


def test_a_link_carries_the_token_the_masked_positions_and_the_knocked_out_heads():
    state = share.SharedState(token=-1, masked=(3, 7), knocked=("L0H1", "L5H11"))
    query = share.query_for(state)
    assert query == {"token": "-1", "masked": "3,7", "knocked": "L0H1,L5H11"}
    assert share.parse_query(query, MODELS, "minilm-english") == state
    bad = share.parse_query(
        {"masked": "1,x", "knocked": "L0H1,rm -rf", "token": "-5"}, MODELS, "minilm-english"
    )
    assert bad.masked is None and bad.knocked is None and bad.token == -1
    assert len(share.parse_query({"masked": ",".join(["1"] * 500)}, MODELS, "m").masked) == share.MAX_LIST


def test_untrusted_values_are_replaced_cut_or_clamped_with_a_note():
    state = share.parse_query(
        {"model": "/etc/passwd", "layer": "-2", "head": "1e9", "step": "0", "a": "x" * 5000, "present": "no"},
        MODELS,
        "minilm-english",
    )
    assert state.model == "minilm-english" and state.layer == 0 and state.head is None and state.step == 1
    assert len(state.text_a) == limits.MAX_LINK_SENTENCE_CHARS and state.present is False
    notes = " ".join(state.notes)
    assert "does not offer" in notes and "/etc" not in notes
    assert "cut to 2,000" in notes and "not a whole number" in notes and "-2 is out of range" in notes


def test_clamp_index_to_the_model_and_empty_links():
    assert share.clamp_index(3, 6, "layer") == (3, None)
    value, note = share.clamp_index(9, 2, "head")
    assert value == 1 and note == "This model has 2 heads (0–1); the link's head 9 shows as 1."
    assert share.parse_query({}, MODELS, "minilm-english") == share.SharedState()
    assert share.share_link("http://h/", "", share.SharedState()) == "http://h"
    assert share.query_for(share.SharedState(layer=0, present=False)) == {"layer": "0"}


def test_a_long_sentence_is_cut_in_the_link_too():
    query = share.query_for(share.SharedState(text_a="word " * 5000, text_b="short"))
    assert len(query["a"]) == limits.MAX_LINK_SENTENCE_CHARS and query["b"] == "short"


def test_the_candidate_words_of_why_this_word_travel_in_a_link_cut_to_a_word():
    state = share.parse_query(
        {"a": "Paris is the capital of [MASK].", "target": "france", "foil": "x" * 80},
        MODELS,
        "minilm-english",
    )
    assert state.target == "france" and state.foil == "x" * limits.MAX_WORD_CHARS
    assert "The foil word in the link was 80 characters long; it is cut to 50." in state.notes
    link = share.share_link("http://host:8501", "why_this_word", state)
    back = share.parse_query(
        {k: v[0] for k, v in parse_qs(urlparse(link).query).items()}, MODELS, "minilm-english"
    )
    assert (back.text_a, back.target, back.foil) == (state.text_a, "france", state.foil)
