"""Meaning in context: the sense index, contextual vectors against transformers, the separation score and the
neighbours against brute-force recomputations, and the figures."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers

from bertviz_lite.figures.meaning_in_context import (
    MAX_LEGEND_SENSES,
    NARROW_LEGEND_ROW,
    context_scatter,
    separation_figure,
)
from bertviz_lite.inspection.views import meaning_in_context as meaning
from bertviz_lite.inspection.word_vectors import WordSpan, hidden_states, loo_centroid_accuracy, span_vectors
from bertviz_lite.loading.pretrained import minilm_dir
from bertviz_lite.text.corpora import senses
from tests.app.tiny_checkpoint import build_tiny

SENTENCES = [
    "He sat on the bank of the river.",
    "The bank raised its rates.",
    "A rash of bank robberies in the city worried the police and the banks.",
]
WORDNET = Path("/usr/share/wordnet")


@pytest.fixture(scope="module")
def tiny():
    return build_tiny(max_positions=64)


@pytest.fixture(scope="module")
def index() -> senses.SenseIndex:
    return senses.sense_index()


# ---------------------------------------------------------------- the sense index


def test_bank_has_its_river_and_money_senses_with_glosses(index):
    found = index.senses_of("bank")
    assert {"n09213565", "n08420278"} <= set(found)  # sloping land; the financial institution
    assert found["n09213565"] == found["n08420278"] == 2
    river = [
        index.sentences[n] for n, _, _ in index.by_word["bank"] if index.sentences[n].synset == "n09213565"
    ]
    assert river[0].gloss.startswith("sloping land") and "canoe" in river[0].text
    mentions = index.mentions("bank")
    assert [m.synset is not None for m in mentions] == sorted(
        (m.synset is not None for m in mentions), reverse=True
    )
    written = {index.sentences[m.sentence].text[m.start : m.end].lower() for m in mentions}
    assert written == {"bank", "banks", "banked", "banking"}  # not "ban" nor "banker"


def test_find_word_knows_inflections_and_irregular_forms():
    text = "She ran home; he runs, they are running, the runner ran."
    assert [text[a:b] for a, b in senses.find_word(text, "run", {"ran"})] == ["ran", "runs", "running", "ran"]
    assert (
        senses.label_words("The geese flew.", "n", ["goose"], senses.read_exceptions(WORDNET))
        == (("goose", 4, 9),)
        if (WORDNET / "noun.exc").is_file()
        else True
    )


def test_the_shipped_index_is_what_the_command_writes(tmp_path):
    if not (WORDNET / "data.noun").is_file():
        pytest.skip("Debian's wordnet-base is not installed")
    output = tmp_path / "senses.jsonl.gz"
    assert senses.main([str(WORDNET), str(output)]) == 0
    assert output.read_bytes() == senses.SENSES_PATH.read_bytes()
    first = json.loads(gzip.decompress(output.read_bytes()).decode().splitlines()[0])
    assert set(first) == {"synset", "pos", "gloss", "text", "words"}
    lemma, start, end = first["words"][0]
    assert first["text"][start:end].lower().startswith(lemma[:3])


# ---------------------------------------------------------------- contextual vectors


def test_hidden_states_and_word_vectors_equal_transformers_on_minilm(minilm):
    model, tokenizer = minilm
    reference = transformers.BertModel.from_pretrained(str(minilm_dir()), attn_implementation="eager").eval()
    encodings = tokenizer.encode_batch_pairs([(s, None) for s in SENTENCES])
    length = max(len(e.input_ids) for e in encodings)
    ids = torch.tensor([e.input_ids + [0] * (length - len(e.input_ids)) for e in encodings])
    mask = torch.tensor([[1] * len(e.input_ids) + [0] * (length - len(e.input_ids)) for e in encodings])
    with torch.no_grad():
        theirs = reference(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
    ours = hidden_states(model, ids, mask)
    assert len(ours) == len(theirs) == 7
    for a, b in zip(ours, theirs, strict=True):
        assert (a - b)[mask.bool()].abs().max() < 1e-4
    # "robberies" is split into pieces: its vector is their mean, read from the padded batch.
    text = SENTENCES[2]
    spans = [
        WordSpan(text, text.index("robberies"), text.index("robberies") + 9),
        WordSpan(SENTENCES[0], 14, 18),
    ]
    vectors, pieces = span_vectors(model, tokenizer, spans, batch_size=2)
    assert len(pieces[0]) > 1 and encodings[0].tokens[pieces[1][0]] == "bank"
    for layer in range(7):
        assert np.abs(vectors[layer, 0] - theirs[layer][2, pieces[0]].mean(0).numpy()).max() < 1e-4
        assert np.abs(vectors[layer, 1] - theirs[layer][0, pieces[1]].mean(0).numpy()).max() < 1e-4


def test_batching_and_padding_do_not_change_a_vector(tiny, index):
    model, tokenizer = tiny
    spans = [WordSpan(s, s.index("bank"), s.index("bank") + 4) for s in SENTENCES]
    together, _ = span_vectors(model, tokenizer, spans, batch_size=3)
    alone = np.concatenate([span_vectors(model, tokenizer, [span])[0] for span in spans], axis=1)
    assert np.abs(together - alone).max() < 1e-5


# ---------------------------------------------------------------- separation score


def brute_force_accuracy(vectors: np.ndarray, labels: list[str]) -> float:
    """Leave-one-out nearest centroid written out loop by loop."""
    unit = [v / np.linalg.norm(v) for v in vectors]
    kept = [i for i, label in enumerate(labels) if labels.count(label) >= 2]
    senses_kept = sorted({labels[i] for i in kept})
    if len(senses_kept) < 2:
        return float("nan")
    credit = []
    for i in kept:
        scores = {}
        for sense in senses_kept:
            members = [unit[j] for j in kept if labels[j] == sense and j != i]
            centroid = np.mean(members, axis=0)
            scores[sense] = float(unit[i] @ centroid / np.linalg.norm(centroid))
        best = [s for s, v in scores.items() if v >= max(scores.values()) - 1e-6]
        credit.append((labels[i] in best) / len(best))
    return float(np.mean(credit))


def test_separation_score_equals_a_brute_force_recomputation():
    rng = np.random.default_rng(0)
    for trial in range(20):
        labels = list(rng.choice(["a", "b", "c", "d"], size=int(rng.integers(3, 15))))
        vectors = rng.normal(size=(len(labels), 8)) + 0.8 * np.array([ord(x) % 5 for x in labels])[:, None]
        expected = brute_force_accuracy(vectors, labels)
        got = loo_centroid_accuracy(vectors, labels)
        assert (np.isnan(got) and np.isnan(expected)) or abs(got - expected) < 1e-9, trial


def test_identical_vectors_score_exactly_chance_between_senses():
    vectors = np.ones((6, 4))
    assert loo_centroid_accuracy(vectors, ["a", "a", "b", "b", "c", "c"]) == pytest.approx(1 / 3)
    assert np.isnan(loo_centroid_accuracy(vectors[:3], ["a", "a", "b"]))  # b once: one sense left


def test_sense_separation_of_bank_on_the_tiny_model(tiny, index):
    model, tokenizer = tiny
    data = meaning.word_contexts(model, tokenizer, index, "bank", limit=30)
    assert data.vectors.shape == (3, len(data.occurrences), 32)
    separation = meaning.sense_separation(data)
    keep, labels = meaning.scored_labels(data)
    assert separation.num_senses == 2 and separation.num_scored == 4 and not separation.by_user
    for layer in range(3):
        assert separation.accuracy[layer] == pytest.approx(
            brute_force_accuracy(data.vectors[layer][keep], labels)
        )
    assert separation.static == pytest.approx(brute_force_accuracy(data.static[keep], labels))
    frame = separation.to_frame()
    assert frame["vectors"].tolist() == [
        "static input embedding",
        "chance (commonest sense)",
        "embeddings",
        "layer 1",
        "layer 2",
    ]


def test_named_user_sentences_are_the_senses_scored(tiny, index):
    model, tokenizer = tiny
    data = meaning.word_contexts(model, tokenizer, index, "bank", meaning.BANK_SENTENCES, limit=5)
    assert [o.sense for o in data.occurrences[-8:]] == ["river (your sentence)"] * 4 + [
        "money (your sentence)"
    ] * 4
    separation = meaning.sense_separation(data)
    assert separation.by_user and separation.num_scored == 8 and separation.chance == 0.5
    with pytest.raises(ValueError, match="one word of letters"):
        meaning.word_contexts(model, tokenizer, index, "two words")
    with pytest.raises(ValueError, match="not in the sense index"):
        meaning.word_contexts(model, tokenizer, index, "qwzx")


# ---------------------------------------------------------------- neighbours


def test_neighbours_over_an_index_equal_a_brute_force_recomputation(tiny, index):
    model, tokenizer = tiny
    small = senses.SenseIndex(index.sentences[:60])
    pool = meaning.index_pool(model, tokenizer, small, layer=1, chunk=32)
    assert pool.vectors.shape == (small.num_words, 32)
    query = pool.vectors[7] * 3.0  # length does not matter: cosine
    found = meaning.nearest_neighbours(pool, query, k=5, exclude=pool.occurrences[7])
    scores = []
    for o in pool.occurrences:  # each word on its own: one sentence, no batch, no padding
        vector = span_vectors(model, tokenizer, [WordSpan(o.text, o.start, o.end)], num_layers=1)[0][1, 0]
        scores.append(
            -np.inf
            if o == pool.occurrences[7]
            else vector @ query / np.linalg.norm(vector) / np.linalg.norm(query)
        )
    order = np.argsort(-np.array(scores), kind="stable")[:5]
    assert [pool.occurrences[i] for i in order] == list(found.occurrences)
    assert np.allclose(found.similarity, np.array(scores)[order], atol=1e-5)
    frame = found.to_frame()
    assert frame["rank"].tolist() == [1, 2, 3, 4, 5]
    assert all(
        row.before + row.word + row.after == o.text
        for row, o in zip(frame.itertuples(), found.occurrences, strict=True)
        if "…" not in row.before + row.after
    )


def test_a_word_pool_ranks_the_other_occurrences(tiny, index):
    model, tokenizer = tiny
    data = meaning.word_contexts(model, tokenizer, index, "bank", limit=20)
    pool = meaning.pool_from_contexts(data, 2)
    query = next(i for i, o in enumerate(data.occurrences) if o.labelled and data.senses.count(o.sense) >= 2)
    found = meaning.nearest_neighbours(pool, data.vectors[2, query], k=50, exclude=data.occurrences[query])
    assert (
        len(found.occurrences) == len(data.occurrences) - 1
        and data.occurrences[query] not in found.occurrences
    )
    assert np.all(np.diff(found.similarity) <= 0)
    same = found.to_frame()["same sense"].tolist()
    assert same == ["yes" if o.sense == data.occurrences[query].sense else "no" for o in found.occurrences]
    assert same.count("yes") == 1


# ---------------------------------------------------------------- projection and figures


def test_projection_and_figures_escape_what_the_user_typed(tiny, index):
    model, tokenizer = tiny
    typed = "[<i>river</i>] The <b>bank</b> & the <script>x</script> bank."
    data = meaning.word_contexts(model, tokenizer, index, "bank", (typed,), limit=40)
    projection = meaning.context_projection(data, 1)
    assert projection.points.shape == (len(data.occurrences), 2)
    assert list(projection.to_frame().columns) == ["pc1", "pc2", "layer", "sentence", "sense", "gloss"]
    fig = context_scatter(projection, "<b>bank</b>", chosen=0)
    text = json.dumps(fig.to_plotly_json())
    assert "<script>" not in text and "<i>river" not in text and "&lt;b&gt;bank&lt;/b&gt;" in text
    names = [trace.name for trace in fig.data]
    assert (
        sum(1 for n in names if "(" in n and "other" not in n and "another" not in n) <= MAX_LEGEND_SENSES + 2
    )
    assert any(n.startswith("other WordNet senses") for n in names)
    assert sum(len(t.x) for t in fig.data[:-1]) == len(
        data.occurrences
    )  # the last trace rings the chosen point
    assert fig.layout.legend.orientation is None  # wide: the legend beside the plot
    phone = context_scatter(projection, "<b>bank</b>", chosen=0, height=400, narrow=True)
    assert (
        phone.to_plotly_json()["data"] == fig.to_plotly_json()["data"]
    )  # the same points, laid out for a phone:
    assert (
        phone.layout.legend.orientation == "h" and phone.layout.title.text.count("<br>") == 1
    )  # legend below,
    assert phone.layout.height == 400 + NARROW_LEGEND_ROW * (
        len(phone.data) + 1
    )  # a row each; title on two lines
    with pytest.raises(ValueError, match="out of range"):
        meaning.context_projection(data, 3)
    separation = meaning.sense_separation(data)
    figure = separation_figure(separation, layer=1)
    assert separation.by_user and np.isnan(separation.accuracy).all()  # one named sentence: nothing to score
    assert list(figure.data[0].y) == pytest.approx(list(separation.accuracy * 100), nan_ok=True)
