"""WordPiece tokenizer for BERT, built on the `tokenizers` library.

Produces the same tokens, ids, type ids and offsets as `transformers.BertTokenizerFast` with
`do_lower_case=True` on the same vocab.txt, including "longest_first" truncation of pairs.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from tokenizers import AddedToken, Tokenizer, decoders, pre_tokenizers, processors
from tokenizers import Encoding as _RawEncoding
from tokenizers.models import WordPiece

from bertviz_lite.atomic import atomic_write_bytes
from bertviz_lite.text.normalization import (
    CLS_TOKEN,
    MASK_TOKEN,
    PAD_TOKEN,
    SEP_TOKEN,
    SPECIAL_TOKENS,
    UNK_TOKEN,
    bert_normalizer,
    replace_surrogates,
)
from bertviz_lite.text.wordpiece_training import learn_vocab

MAX_POSITIONS = 512
MIN_TRAIN_VOCAB_SIZE = len(SPECIAL_TOKENS) + 10
SERIAL_TEXTS = 4  # up to this many texts are encoded one by one, not through the Rust thread pool


@dataclass
class Encoding:
    """One tokenized sentence or sentence pair: [CLS] A [SEP] or [CLS] A [SEP] B [SEP], unpadded."""

    tokens: list[str]
    input_ids: list[int]
    token_type_ids: list[int]
    position_ids: list[int]
    attention_mask: list[int]
    special_tokens_mask: list[int]
    word_ids: list[int | None]
    sequence_ids: list[int | None]
    offsets: list[tuple[int, int]]
    words: list[str | None]
    truncated: bool

    def __len__(self) -> int:
        return len(self.input_ids)

    def to_tensors(self) -> dict[str, torch.Tensor]:
        """Model inputs `input_ids`, `token_type_ids`, `attention_mask`, each a LongTensor [1, T]."""
        names = ("input_ids", "token_type_ids", "attention_mask")
        return {name: torch.tensor([getattr(self, name)], dtype=torch.long) for name in names}


@dataclass
class _Piece:
    """The tokens of one sentence (no special tokens), cut to the length kept after truncation."""

    raw: _RawEncoding
    text: str
    length: int


class BertTokenizer:
    """Lower-casing BERT WordPiece tokenizer with [CLS]/[SEP] templates and type ids 0/1."""

    def __init__(self, vocab: dict[str, int], do_lower_case: bool = True):
        _check_vocab(vocab)
        self.do_lower_case = do_lower_case
        self._vocab = dict(vocab)
        self._tokenizer = _build_tokenizer(self._vocab, do_lower_case)

    # ---- construction -------------------------------------------------------------------------

    @classmethod
    def from_vocab(cls, path: str | os.PathLike, do_lower_case: bool = True) -> BertTokenizer:
        """Load a vocab.txt (one token per line; the line number is the id)."""
        vocab = read_vocab_file(path)
        _check_vocab(vocab, source=f"Vocabulary file {path}")
        return cls(vocab, do_lower_case=do_lower_case)

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int, min_frequency: int = 2) -> BertTokenizer:
        """Learn a WordPiece vocabulary from texts; ids 0-4 are [PAD] [UNK] [CLS] [SEP] [MASK].

        Like tokenizers' WordPieceTrainer, it merges the most frequent pair of adjacent pieces until
        the vocabulary is full or no pair occurs `min_frequency` times; unlike it, it breaks ties
        between equally frequent pairs the same way on every run, so the same texts always give
        the same vocabulary.
        The vocabulary can end up a little larger than `vocab_size`: every character seen in the
        texts is kept (and, if it can occur inside a word, its '##' piece) so that no word has to
        become [UNK].
        """
        if vocab_size < MIN_TRAIN_VOCAB_SIZE:
            raise ValueError(f"vocab_size ({vocab_size}) is too small: use at least {MIN_TRAIN_VOCAB_SIZE}.")
        texts = [text for text in texts if text and text.strip()]
        if not texts:
            raise ValueError("No text to train the tokenizer on: give at least one non-empty sentence.")
        return cls(learn_vocab(texts, vocab_size, min_frequency), do_lower_case=True)

    def save_vocab(self, path: str | os.PathLike) -> Path:
        """Write vocab.txt (one token per line, in id order) atomically; returns the path."""
        path = Path(path)
        text = "".join(token + "\n" for token in self.convert_ids_to_tokens(list(range(self.vocab_size))))
        return atomic_write_bytes(path, text.encode("utf-8"))

    # ---- vocabulary ---------------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        """Number of tokens in the vocabulary."""
        return len(self._vocab)

    @property
    def vocab(self) -> dict[str, int]:
        """A copy of the token -> id mapping."""
        return dict(self._vocab)

    # Hugging Face's names for the ids of the special tokens.
    pad_token_id = property(lambda self: self._vocab[PAD_TOKEN])
    unk_token_id = property(lambda self: self._vocab[UNK_TOKEN])
    cls_token_id = property(lambda self: self._vocab[CLS_TOKEN])
    sep_token_id = property(lambda self: self._vocab[SEP_TOKEN])
    mask_token_id = property(lambda self: self._vocab[MASK_TOKEN])

    @property
    def all_special_ids(self) -> list[int]:
        """Ids of [PAD] [UNK] [CLS] [SEP] [MASK], in that order."""
        return [self._vocab[token] for token in SPECIAL_TOKENS]

    def convert_ids_to_tokens(self, ids: int | Sequence[int]) -> str | list[str]:
        """Token string(s) for id(s); a single int gives a single string."""
        if isinstance(ids, int):
            return self._id_to_token(ids)
        return [self._id_to_token(int(i)) for i in ids]

    def convert_tokens_to_ids(self, tokens: str | Sequence[str]) -> int | list[int]:
        """Id(s) for token string(s); tokens not in the vocabulary map to [UNK]."""
        if isinstance(tokens, str):
            return self._vocab.get(tokens, self.unk_token_id)
        return [self._vocab.get(token, self.unk_token_id) for token in tokens]

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        """Text for ids: joins '##' pieces and tidies spaces before punctuation."""
        return self._tokenizer.decode([int(i) for i in ids], skip_special_tokens=skip_special_tokens)

    def _id_to_token(self, token_id: int) -> str:
        token = self._tokenizer.id_to_token(token_id) if token_id >= 0 else None
        if token is None:
            raise ValueError(
                f"token id {token_id} is outside the vocabulary (ids 0 to {self.vocab_size - 1})."
            )
        return token

    # ---- encoding -----------------------------------------------------------------------------

    def encode_pair(self, text_a: str, text_b: str | None = None, max_length: int = 128) -> Encoding:
        """Tokenize sentence A (and optional B) into [CLS] A [SEP] (B [SEP]), truncated to max_length."""
        return self.encode_batch_pairs([(text_a, text_b)], max_length=max_length)[0]

    def encode_batch_pairs(
        self, pairs: Sequence[tuple[str, str | None]], max_length: int = 128
    ) -> list[Encoding]:
        """Tokenize many (A, B or None) pairs at once; same result as encode_pair on each.

        Text that is not valid Unicode (a lone surrogate such as "\\ud800", half of an emoji cut in two)
        is cleaned, not refused: each surrogate becomes U+FFFD, which BERT's normalizer drops like a
        control character. Offsets and words still index the text as given (same length).
        """
        if not pairs:
            raise ValueError("No sentence pairs to tokenize.")
        cleaned = [
            _clean_pair(text_a, text_b, index, len(pairs)) for index, (text_a, text_b) in enumerate(pairs)
        ]
        flat = [text for pair in cleaned for text in pair if text is not None]
        raws = iter(self._encode_texts(flat))
        encodings = []
        for text_a, text_b in cleaned:
            raw_a = _check_not_blank(next(raws), "A")
            raw_b = next(raws) if text_b is not None else None
            if raw_b is not None and not raw_b.ids:
                raw_b = None  # B was only control characters: treat it as absent
                text_b = None
            _check_max_length(max_length, pair=raw_b is not None)
            encodings.append(self._assemble(raw_a, text_a, raw_b, text_b, max_length))
        return encodings

    def _encode_texts(self, texts: list[str]) -> list[_RawEncoding]:
        """tokenizers' encodings; a page's one pair in this thread, since handing two short texts to the Rust thread
        pool cost a busy server (30 visitors at once) more than the work itself."""
        if len(texts) <= SERIAL_TEXTS:
            return [self._tokenizer.encode(text, add_special_tokens=False) for text in texts]
        return self._tokenizer.encode_batch(texts, add_special_tokens=False)

    def _assemble(
        self,
        raw_a: _RawEncoding,
        text_a: str,
        raw_b: _RawEncoding | None,
        text_b: str | None,
        max_length: int,
    ) -> Encoding:
        """Truncate like tokenizers' "longest_first" and add [CLS]/[SEP] as TemplateProcessing does."""
        len_b = len(raw_b.ids) if raw_b is not None else None
        keep_a, keep_b = longest_first_lengths(len(raw_a.ids), len_b, max_length - (3 if raw_b else 2))
        pieces = [_Piece(raw_a, text_a, keep_a)]
        if raw_b is not None:
            pieces.append(_Piece(raw_b, text_b, keep_b))
        parts: dict[str, list] = {name: [] for name in _LIST_FIELDS}
        _append_special(parts, CLS_TOKEN, self.cls_token_id, type_id=0)
        for sequence_id, piece in enumerate(pieces):
            _append_piece(parts, piece, sequence_id)
            _append_special(parts, SEP_TOKEN, self.sep_token_id, type_id=sequence_id)
        truncated = any(piece.length < len(piece.raw.ids) for piece in pieces)
        size = len(parts["input_ids"])
        return Encoding(
            **parts, position_ids=list(range(size)), attention_mask=[1] * size, truncated=truncated
        )


_LIST_FIELDS = (
    "tokens",
    "input_ids",
    "token_type_ids",
    "special_tokens_mask",
    "word_ids",
    "sequence_ids",
    "offsets",
    "words",
)


def longest_first_lengths(len_a: int, len_b: int | None, budget: int) -> tuple[int, int | None]:
    """Tokens kept from A and B so that both fit in `budget`, as tokenizers' "longest_first" decides.

    The shorter sentence is kept whole if the longer one can still have at least as many tokens;
    otherwise both get half the budget, the extra token going to the originally longer one
    (or to B when they are equally long).
    """
    if len_b is None:
        return min(len_a, budget), None
    if len_a + len_b <= budget:
        return len_a, len_b
    short, long_ = sorted((len_a, len_b))
    swapped = len_a > len_b
    long_ = short if short > budget else max(short, budget - short)
    if short + long_ > budget:
        short = budget // 2
        long_ = short + budget % 2
    return (long_, short) if swapped else (short, long_)


def _append_special(parts: dict[str, list], token: str, token_id: int, type_id: int) -> None:
    """Add one template special token ([CLS] or [SEP])."""
    for name, value in (
        ("tokens", token),
        ("input_ids", token_id),
        ("token_type_ids", type_id),
        ("special_tokens_mask", 1),
        ("word_ids", None),
        ("sequence_ids", None),
        ("offsets", (0, 0)),
        ("words", None),
    ):
        parts[name].append(value)


def _append_piece(parts: dict[str, list], piece: _Piece, sequence_id: int) -> None:
    """Add the kept tokens of one sentence, with word ids, offsets and source-word text."""
    raw = piece.raw
    keep = piece.length
    word_ids = raw.word_ids[:keep]
    parts["tokens"] += raw.tokens[:keep]
    parts["input_ids"] += raw.ids[:keep]
    parts["token_type_ids"] += [sequence_id] * keep
    parts["special_tokens_mask"] += [0] * keep
    parts["word_ids"] += word_ids
    parts["sequence_ids"] += [sequence_id] * keep
    parts["offsets"] += [tuple(offset) for offset in raw.offsets[:keep]]
    parts["words"] += [_word_text(raw, piece.text, word_id) for word_id in word_ids]


def _word_text(raw: _RawEncoding, text: str, word_id: int | None) -> str | None:
    """The text of the whole source word a token comes from."""
    if word_id is None:
        return None
    span = raw.word_to_chars(word_id)
    return text[span[0] : span[1]] if span is not None else None


def _clean_pair(text_a: str, text_b: str | None, index: int, count: int) -> tuple[str, str | None]:
    """Reject an empty sentence A; an empty or whitespace-only B means "no sentence B"."""
    where = f" (pair {index})" if count > 1 else ""
    if not isinstance(text_a, str) or not text_a.strip():
        raise ValueError(f"Sentence A is empty: type at least one word.{where}")
    if text_b is not None and not isinstance(text_b, str):
        raise ValueError(f"Sentence B must be text, got {type(text_b).__name__}.{where}")
    text_b = replace_surrogates(text_b) if text_b and text_b.strip() else None
    return replace_surrogates(text_a), text_b


def _check_not_blank(raw: _RawEncoding, name: str) -> _RawEncoding:
    """Sentence A must keep at least one token after control characters are removed."""
    if not raw.ids:
        raise ValueError(f"Sentence {name} has no readable characters (control characters are removed).")
    return raw


def _check_max_length(max_length: int, pair: bool) -> None:
    """max_length must leave room for the special tokens and one token of each sentence."""
    smallest = 5 if pair else 3
    if not isinstance(max_length, int) or not smallest <= max_length <= MAX_POSITIONS:
        kind = "a sentence pair" if pair else "one sentence"
        raise ValueError(
            f"max_length ({max_length}) must be between {smallest} and {MAX_POSITIONS} for {kind}."
        )


def read_vocab_file(path: str | os.PathLike) -> dict[str, int]:
    """Read vocab.txt into token -> id (the line number), as transformers' load_vocab does."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Vocabulary file not found: {path}")
    try:
        text = path.read_text(encoding="utf-8")  # universal newlines, like open() in transformers
    except UnicodeDecodeError:
        raise ValueError(f"Vocabulary file {path} is not UTF-8 text.") from None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    vocab: dict[str, int] = {}
    for index, token in enumerate(lines):
        if token in vocab:
            raise ValueError(
                f"Vocabulary file {path} lists {token!r} twice (lines {vocab[token] + 1} and {index + 1})."
            )
        vocab[token] = index
    return vocab


def _check_vocab(vocab: dict[str, int], source: str = "The vocabulary") -> None:
    """A vocabulary needs ids 0..N-1 and all five BERT special tokens."""
    if not vocab:
        raise ValueError(f"{source} is empty.")
    missing = [token for token in SPECIAL_TOKENS if token not in vocab]
    if missing:
        raise ValueError(f"{source} lacks the special token(s) {' '.join(missing)}.")
    if sorted(vocab.values()) != list(range(len(vocab))):
        raise ValueError(f"{source} must number its tokens 0 to N-1, one id per token.")


def _build_tokenizer(vocab: dict[str, int], do_lower_case: bool) -> Tokenizer:
    """The tokenizers pipeline transformers' BertTokenizerFast builds for a vocab.txt."""
    tokenizer = Tokenizer(WordPiece(vocab, unk_token=UNK_TOKEN, max_input_chars_per_word=100))
    tokenizer.normalizer = bert_normalizer(lowercase=do_lower_case)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece(prefix="##", cleanup=True)
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{CLS_TOKEN}:0 $A:0 {SEP_TOKEN}:0",
        pair=f"{CLS_TOKEN}:0 $A:0 {SEP_TOKEN}:0 $B:1 {SEP_TOKEN}:1",
        special_tokens=[(CLS_TOKEN, vocab[CLS_TOKEN]), (SEP_TOKEN, vocab[SEP_TOKEN])],
    )
    # Special tokens match the raw text only ("[MASK]", not "[mask]"), as in transformers.
    tokenizer.add_special_tokens(
        [AddedToken(token, normalized=False, special=True) for token in SPECIAL_TOKENS]
    )
    return tokenizer
