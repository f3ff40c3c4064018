"""Built-in corpus, reading user text, NSP pairs and the pre-training collator."""

import re

import pytest
import torch

from bertviz_lite.text.pretraining_data import (
    IS_NEXT,
    NOT_NEXT,
    SETTINGS,
    PretrainingCollator,
    builtin_corpus,
    documents_from_text,
    make_nsp_pairs,
    read_corpus,
    split_sentences,
    split_train_eval,
)
from bertviz_lite.text.tokenization import BertTokenizer

HE = {"he", "him", "his"}
SHE = {"she", "her"}


@pytest.fixture(scope="module")
def corpus() -> list[list[str]]:
    return builtin_corpus()


@pytest.fixture(scope="module")
def tokenizer(corpus) -> BertTokenizer:
    return BertTokenizer.train(
        [sentence for document in corpus[:500] for sentence in document], vocab_size=600
    )


def _words(sentence: str) -> list[str]:
    return re.findall(r"[a-z]+", sentence.lower())


# ---- built-in corpus ---------------------------------------------------------------------------


def test_builtin_corpus_is_deterministic(corpus):
    assert builtin_corpus() == corpus
    assert builtin_corpus(seed=1) != corpus
    assert builtin_corpus(seed=5, num_documents=10) == builtin_corpus(seed=5, num_documents=10)


def test_builtin_corpus_size_and_shape(corpus):
    assert len(corpus) == 3000
    assert len(builtin_corpus(num_documents=7)) == 7
    lengths = [len(document) for document in corpus]
    assert min(lengths) == 4 and max(lengths) == 8
    assert all(
        sentence[0].isupper() and sentence.endswith(".") for document in corpus for sentence in document
    )
    vocabulary = {word for document in corpus for sentence in document for word in _words(sentence)}
    assert 300 <= len(vocabulary) <= 800


def _hero(document: list[str]) -> str:
    """The story's hero: the setting name that occurs in every sentence."""
    names = {name for setting in SETTINGS.values() for pool in setting["names"].values() for name in pool}
    (hero,) = [name for name in names if all(re.search(rf"\b{name}\b", sentence) for sentence in document)]
    return hero


def test_every_sentence_names_the_hero_and_pronouns_agree(corpus):
    """he/him/his or she/her always refer to the hero, named in every sentence."""
    male_names = {name for setting in SETTINGS.values() for name in setting["names"]["he"]}
    with_pronoun = 0
    for document in corpus:
        hero = _hero(document)
        words = {word for sentence in document for word in _words(sentence)}
        own, other = (HE, SHE) if hero in male_names else (SHE, HE)
        assert not words & other, document
        with_pronoun += bool(words & own)
    assert with_pronoun / len(corpus) > 0.9


def test_it_always_comes_with_its_animal(corpus):
    """ "it" refers to the story's animal, which is named in the same sentence."""
    animals = {animal for setting in SETTINGS.values() for animal in setting["animals"]}
    documents_with_it = 0
    for document in corpus:
        with_it = [sentence for sentence in document if "it" in _words(sentence)]
        documents_with_it += bool(with_it)
        assert all(set(_words(sentence)) & animals for sentence in with_it), with_it
    assert documents_with_it / len(corpus) > 0.4


def test_each_story_stays_in_one_setting(corpus):
    """Stories of different settings share no setting words, so documents are clearly different."""
    fields = ("places", "animals", "things", "foods", "adjectives")
    own = {
        name: {w for f in fields for w in setting[f]} | {setting["home"]}
        for name, setting in SETTINGS.items()
    }
    for document in corpus:
        words = {word for sentence in document for word in _words(sentence)}
        settings = [name for name, setting_words in own.items() if words & setting_words]
        assert len(settings) == 1, (settings, document)


# ---- reading user text -------------------------------------------------------------------------


def test_split_sentences():
    text = "Hi there. How are you?! Fine...  Ok\nnext line. Last one"
    assert split_sentences(text) == ["Hi there.", "How are you?!", "Fine...", "Ok next line.", "Last one"]
    assert split_sentences("   ") == []
    assert split_sentences("Version 2.0 is out.") == ["Version 2.0 is out."]


def test_documents_from_text():
    text = "The cat sat. It purred!\r\n\r\nA dog ran.\n   \nBirds sing? Yes.\n"
    assert documents_from_text(text) == [
        ["The cat sat.", "It purred!"],
        ["A dog ran."],
        ["Birds sing?", "Yes."],
    ]


def test_read_corpus_reads_utf8_with_bom(tmp_path):
    path = tmp_path / "stories.txt"
    path.write_bytes("\ufeffCafé opened. Bob came.\n\nRain fell.".encode())
    assert read_corpus(path) == [["Café opened.", "Bob came."], ["Rain fell."]]


def test_read_corpus_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        read_corpus(tmp_path / "missing.txt")
    cases = {
        "empty.txt": (b"", "empty"),
        "blank.txt": (b"  \n\n\t \n", "empty"),
        "latin1.txt": ("Caf\xe9 au lait. Tr\xe8s bon.".encode("latin-1"), "is not UTF-8 text"),
        "binary.bin": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary"),
        "one.txt": (b"Only one sentence here.", "fewer than 2 sentences"),
    }
    for name, (content, message) in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(ValueError, match=message):
            read_corpus(path)


# ---- next-sentence pairs -----------------------------------------------------------------------


def _unique_documents() -> list[list[str]]:
    """Documents whose sentences are all different, so each sentence has exactly one origin."""
    return [[f"Doc {d} sentence {i}." for i in range(d % 6 + 1)] for d in range(300)]


def test_nsp_labels_are_balanced(corpus):
    pairs = make_nsp_pairs(corpus[:1000], seed=3, num_pairs=5001)
    assert len(pairs) == 5001
    share_not_next = sum(label == NOT_NEXT for _, _, label in pairs) / len(pairs)
    assert abs(share_not_next - 0.5) < 0.03


def test_nsp_pairs_are_what_their_labels_say():
    documents = _unique_documents()
    origin = {sentence: (d, i) for d, document in enumerate(documents) for i, sentence in enumerate(document)}
    pairs = make_nsp_pairs(documents, seed=0, num_pairs=4000)
    for sentence_a, sentence_b, label in pairs:
        (doc_a, index_a) = origin[sentence_a]
        (doc_b, index_b) = origin[sentence_b]
        if label == IS_NEXT:
            assert (doc_b, index_b) == (doc_a, index_a + 1)
        else:
            assert doc_b != doc_a
    used_as_b = {sentence_b for _, sentence_b, label in pairs if label == NOT_NEXT}
    assert any(len(documents[origin[s][0]]) == 1 for s in used_as_b)  # one-sentence documents serve as B
    assert any(len(documents[origin[a][0]]) == 1 for a, _, label in pairs if label == NOT_NEXT)  # and as A


def test_nsp_default_count_and_determinism():
    documents = _unique_documents()
    pairs = make_nsp_pairs(documents, seed=1)
    assert len(pairs) == sum(len(document) for document in documents)
    assert make_nsp_pairs(documents, seed=1) == pairs
    assert make_nsp_pairs(documents, seed=2) != pairs


def test_nsp_errors():
    with pytest.raises(ValueError, match="at least 2 documents"):
        make_nsp_pairs([["One.", "Two."]])
    with pytest.raises(ValueError, match="2 or more sentences"):
        make_nsp_pairs([["One."], ["Two."], ["Three."]])
    with pytest.raises(ValueError, match=r"num_pairs \(0\)"):
        make_nsp_pairs(_unique_documents(), num_pairs=0)


def test_split_train_eval():
    pairs = make_nsp_pairs(_unique_documents(), num_pairs=1000)
    train, evaluation = split_train_eval(pairs, eval_fraction=0.05, seed=0)
    assert (len(train), len(evaluation)) == (950, 50)
    assert sorted(train + evaluation) == sorted(pairs)
    assert split_train_eval(pairs, eval_fraction=0.05, seed=0) == (train, evaluation)
    assert len(split_train_eval(pairs[:3], eval_fraction=0.05)[1]) == 1
    with pytest.raises(ValueError, match=r"eval_fraction \(1.0\)"):
        split_train_eval(pairs, eval_fraction=1.0)


# ---- collation ---------------------------------------------------------------------------------


def _collate(tokenizer, pairs, seed=0, **kwargs):
    collator = PretrainingCollator(tokenizer, **kwargs)
    return collator(pairs, generator=torch.Generator().manual_seed(seed))


def test_collate_shapes_and_padding(tokenizer):
    pairs = [
        ("The cat.", "A dog ran to the barn.", IS_NEXT),
        ("Tom went to the barn with his bucket.", "Hi.", NOT_NEXT),
    ]
    batch = _collate(tokenizer, pairs, max_length=32)
    keys = [
        "attention_mask",
        "input_ids",
        "labels",
        "next_sentence_label",
        "special_tokens_mask",
        "token_type_ids",
    ]
    assert sorted(batch) == keys
    lengths = [len(tokenizer.encode_pair(a, b)) for a, b, _ in pairs]
    assert batch["input_ids"].shape == (2, max(lengths))
    assert all(tensor.dtype == torch.long for tensor in batch.values())
    assert batch["next_sentence_label"].tolist() == [IS_NEXT, NOT_NEXT]
    short = lengths.index(min(lengths))
    padding = slice(min(lengths), max(lengths))
    assert (batch["attention_mask"][short, padding] == 0).all()
    assert (batch["input_ids"][short, padding] == tokenizer.pad_token_id).all()
    assert (batch["labels"][short, padding] == -100).all()
    assert (batch["special_tokens_mask"][short, padding] == 1).all()
    assert (batch["token_type_ids"][short, padding] == 0).all()


def test_collate_masks_only_real_tokens(tokenizer, corpus):
    pairs = make_nsp_pairs(corpus[:300], seed=0, num_pairs=512)
    batch = _collate(tokenizer, pairs, max_length=64)
    original = _collate(tokenizer, pairs, max_length=64, mask_prob=1e-9)  # same encodings, nothing chosen
    assert (original["labels"] == -100).all()
    chosen = batch["labels"] != -100
    assert not (chosen & (batch["special_tokens_mask"] == 1)).any()
    assert not (chosen & (batch["attention_mask"] == 0)).any()
    assert torch.equal(batch["labels"][chosen], original["input_ids"][chosen])
    assert torch.equal(batch["input_ids"][~chosen], original["input_ids"][~chosen])
    eligible = (batch["special_tokens_mask"] == 0).sum().item()
    assert abs(chosen.sum().item() / eligible - 0.15) < 0.02
    assert (batch["input_ids"][chosen] == tokenizer.mask_token_id).float().mean().item() == pytest.approx(
        0.8, abs=0.03
    )
    replaced = (
        chosen
        & (batch["input_ids"] != original["input_ids"])
        & (batch["input_ids"] != tokenizer.mask_token_id)
    )
    assert replaced.any()
    assert not torch.isin(batch["input_ids"][replaced], torch.tensor(tokenizer.all_special_ids)).any()


def test_collate_is_deterministic_with_a_generator(tokenizer):
    pairs = [("The cat sat on the mat today.", "It purred loudly at the dog.", IS_NEXT)] * 8
    first = _collate(tokenizer, pairs, 1)
    again = _collate(tokenizer, pairs, 1)
    other = _collate(tokenizer, pairs, 2)
    assert all(torch.equal(first[key], again[key]) for key in first)
    assert not torch.equal(first["input_ids"], other["input_ids"])


def test_collate_with_whole_word_mask_masks_a_word_with_all_its_pieces(tokenizer):
    pairs = [("The cat sat on the mat today.", "It purred loudly at the dog.", IS_NEXT)] * 400
    batch = _collate(tokenizer, pairs, max_length=64, whole_word_mask=True)
    tokens = tokenizer.encode_pair(*pairs[0][:2]).tokens
    pieces = [i for i, token in enumerate(tokens) if token.startswith("##")]
    assert pieces, tokens  # the demo vocabulary splits some word of the pair
    chosen = batch["labels"] != -100
    for i in pieces:
        assert torch.equal(chosen[:, i], chosen[:, i - 1]) or tokens[i - 1] == "[SEP]"
    eligible = (batch["special_tokens_mask"] == 0).sum().item()
    assert 0.08 < chosen.sum().item() / eligible < 0.25


def test_collate_with_mask_repeats_leaves_no_masked_content_word_visible(tokenizer):
    pairs = [("The cat sat on the mat.", "The cat saw the dog on the mat.", IS_NEXT)] * 300
    batch = _collate(tokenizer, pairs, max_length=64, whole_word_mask=True, mask_repeats=True)
    cat, the = tokenizer.convert_tokens_to_ids(["cat", "the"])
    the_split = 0
    for ids, labels, content in zip(batch["input_ids"], batch["labels"], batch["content_mask"], strict=True):
        answers = set(labels[labels != -100].tolist())
        visible = set(ids[(labels == -100) & content].tolist())
        assert not answers & visible, tokenizer.convert_ids_to_tokens(sorted(answers & visible))
        the_split += the in answers and the in ids[labels == -100].tolist()
    assert batch["content_mask"][0, 2].item() and not batch["content_mask"][0, 1].item()  # "cat", not "the"
    assert cat in batch["labels"]
    assert the_split > 0  # a function word is still drawn occurrence by occurrence


def test_collate_gives_a_share_of_pairs_as_lone_sentences_without_an_nsp_question(tokenizer):
    pairs = [("The cat sat on the mat.", "It purred loudly at the dog.", IS_NEXT)] * 400
    batch = _collate(tokenizer, pairs, max_length=64, single_fraction=0.3)
    alone = batch["next_sentence_label"] == -100
    assert 0.22 < alone.float().mean().item() < 0.38
    sep = tokenizer.convert_tokens_to_ids("[SEP]")
    assert ((batch["input_ids"] == sep).sum(dim=1) == torch.where(alone, 1, 2)).all()  # A alone: one [SEP]
    assert (batch["token_type_ids"][alone] == 0).all() and (batch["token_type_ids"][~alone] == 1).any(
        dim=1
    ).all()
    assert (batch["next_sentence_label"][~alone] == IS_NEXT).all()
    assert (batch["labels"][alone] != -100).any()  # lone sentences are still masked
