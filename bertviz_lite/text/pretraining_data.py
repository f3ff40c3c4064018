"""Pre-training data: a built-in story corpus, reading user text, NSP pairs and the MLM+NSP collator."""

from __future__ import annotations

import json
import os
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from bertviz_lite.model.loss_rows import IGNORE_INDEX
from bertviz_lite.text.masking import mask_tokens
from bertviz_lite.text.tokenization import BertTokenizer, Encoding

IS_NEXT = 0  # next_sentence_label values, as in Hugging Face BertForPreTraining
NOT_NEXT = 1

# ---- built-in corpus ---------------------------------------------------------------------------
# Each document is a short story in one of ten settings, each with its own places, animals, things,
# food and character names (corpora/stories.json). Consecutive sentences share the hero, the setting and a fixed order of
# events; pronouns agree with their referent. So a tiny BERT (2 layers, hidden 128) learns both MLM
# and NSP within a minute on a CPU: the tiny preset reaches about 95% held-out NSP accuracy.

_STORIES = json.loads((Path(__file__).parent / "corpora" / "stories.json").read_text(encoding="utf-8"))
SETTINGS: dict[str, dict] = _STORIES["settings"]  # per setting: names, adjectives, places, animals, things, …
PRONOUNS: dict[str, dict[str, str]] = _STORIES["pronouns"]
# One day in the hero's life, as a cycle of beats: night is followed by the next morning. A story
# is 4 to 8 consecutive beats starting anywhere in the cycle, so every beat is equally common and
# each sentence's template says which one comes next. Every sentence names the hero (the names
# belong to the setting); pronouns refer back to the hero (he/she), the animal (it), or both (they).
BEATS: tuple[str, ...] = tuple(_STORIES["beats"])


def builtin_corpus(seed: int = 0, num_documents: int = 3000) -> list[list[str]]:
    """Short English stories (4-8 sentences each) generated deterministically from the templates above."""
    if num_documents < 1:
        raise ValueError(f"num_documents ({num_documents}) must be at least 1.")
    rng = random.Random(seed)
    return [_story(rng) for _ in range(num_documents)]


def _story(rng: random.Random) -> list[str]:
    """One document: 4 to 8 consecutive beats of the day, with the same hero, animal, thing and places."""
    setting = SETTINGS[rng.choice(sorted(SETTINGS))]
    slots = _story_slots(rng, setting)
    start = rng.randrange(len(BEATS))
    length = rng.randint(4, 8)
    return [BEATS[(start + k) % len(BEATS)].format(**slots) for k in range(length)]


def _story_slots(rng: random.Random, setting: dict) -> dict[str, str]:
    """The hero, friend, animal, thing and places one story keeps referring back to."""
    gender = rng.choice(("he", "she"))
    name = rng.choice(setting["names"][gender])
    friends = [other for names in setting["names"].values() for other in names if other != name]
    place, place2 = rng.sample(setting["places"], 2)
    thing = rng.choice(sorted(setting["things"]))
    adj = rng.choice(setting["adjectives"])
    return {
        **PRONOUNS[gender],
        "name": name,
        "friend": rng.choice(friends),
        "place": place,
        "place2": place2,
        "thing": thing,
        "use": setting["things"][thing],
        "animal": rng.choice(setting["animals"]),
        "adj": adj,
        "a_adj": ("an " if adj[0] in "aeiou" else "a ") + adj,
        "food": rng.choice(setting["foods"]),
        "about": setting["about"],
        "activity": rng.choice(setting["activities"]),
        "home": setting["home"],
    }


# ---- reading user text -------------------------------------------------------------------------


def split_sentences(text: str) -> list[str]:
    """Split after . ! or ? followed by whitespace; keeps the punctuation and tidies spaces."""
    pieces = re.split(r"(?<=[.!?])\s+", text.strip())
    return [" ".join(piece.split()) for piece in pieces if piece.strip()]


def documents_from_text(text: str) -> list[list[str]]:
    """Documents are separated by blank lines; each document becomes a list of sentences."""
    if not text.strip():
        raise ValueError("The text is empty: write or paste a few sentences.")
    blocks = re.split(r"\n[ \t]*\n", text.replace("\r\n", "\n").replace("\r", "\n").strip())
    documents = [sentences for block in blocks if (sentences := split_sentences(block))]
    if sum(len(document) for document in documents) < 2:
        raise ValueError("The text has fewer than 2 sentences: BERT pre-training needs at least 2.")
    return documents


def read_corpus(path: str | os.PathLike) -> list[list[str]]:
    """Read a plain UTF-8 text file: documents separated by blank lines, split into sentences."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Corpus file not found: {path}")
    data = path.read_bytes()
    if b"\x00" in data:
        raise ValueError(f"{path.name} looks like a binary file (it contains NUL bytes), not plain text.")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError(f"{path.name} is not UTF-8 text: save it as UTF-8 and try again.") from None
    try:
        return documents_from_text(text)
    except ValueError as error:
        raise ValueError(f"{path.name}: {error}") from None


# ---- next-sentence pairs -----------------------------------------------------------------------


def make_nsp_pairs(
    documents: Sequence[Sequence[str]], *, seed: int = 0, num_pairs: int | None = None
) -> list[tuple[str, str, int]]:
    """(A, B, label) pairs: half IsNext (B follows A in its document, label 0), half NotNext (label 1).

    NotNext B is a random sentence of another document. By default there is one pair per sentence.
    """
    documents = [list(document) for document in documents if document]
    next_positions = [(d, i) for d, document in enumerate(documents) for i in range(len(document) - 1)]
    all_positions = [(d, i) for d, document in enumerate(documents) for i in range(len(document))]
    _check_nsp_input(documents, next_positions, num_pairs)
    num_pairs = len(all_positions) if num_pairs is None else num_pairs
    rng = random.Random(seed)
    labels = [IS_NEXT] * (num_pairs - num_pairs // 2) + [NOT_NEXT] * (num_pairs // 2)
    rng.shuffle(labels)
    next_a = _cycle_shuffled(next_positions, rng)
    any_a = _cycle_shuffled(all_positions, rng)
    pairs = []
    for label in labels:
        d, i = next(next_a) if label == IS_NEXT else next(any_a)
        sentence_b = documents[d][i + 1] if label == IS_NEXT else _random_other_sentence(documents, d, i, rng)
        pairs.append((documents[d][i], sentence_b, label))
    return pairs


def _check_nsp_input(documents: list[list[str]], next_positions: list, num_pairs: int | None) -> None:
    if len(documents) < 2:
        raise ValueError(
            f"Next-sentence pairs need at least 2 documents (separate them with a blank line); got {len(documents)}."
        )
    if not next_positions:
        raise ValueError("Next-sentence pairs need at least one document with 2 or more sentences.")
    if num_pairs is not None and num_pairs < 1:
        raise ValueError(f"num_pairs ({num_pairs}) must be at least 1.")


def _cycle_shuffled(items: list, rng: random.Random):
    """Yield items forever, reshuffled on every pass, so each is used about equally often."""
    while True:
        order = list(items)
        rng.shuffle(order)
        yield from order


def _random_other_sentence(documents: list[list[str]], d: int, i: int, rng: random.Random) -> str:
    """A sentence from a document other than d that is not, by chance, A's real next sentence."""
    true_next = documents[d][i + 1] if i + 1 < len(documents[d]) else None
    for _ in range(10):
        other = rng.randrange(len(documents) - 1)
        other += other >= d
        sentence = rng.choice(documents[other])
        if sentence != true_next:
            break
    return sentence


def split_train_eval(
    pairs: Sequence[tuple[str, str, int]], eval_fraction: float = 0.05, seed: int = 0
) -> tuple[list[tuple[str, str, int]], list[tuple[str, str, int]]]:
    """Shuffle and split pairs into (train, eval); eval gets at least one pair."""
    if not 0.0 < eval_fraction < 1.0:
        raise ValueError(f"eval_fraction ({eval_fraction}) must be between 0 and 1 (exclusive), e.g. 0.05.")
    if len(pairs) < 2:
        raise ValueError(f"Need at least 2 pairs to split into train and eval; got {len(pairs)}.")
    shuffled = list(pairs)
    random.Random(seed).shuffle(shuffled)
    num_eval = min(len(shuffled) - 1, max(1, round(len(shuffled) * eval_fraction)))
    return shuffled[num_eval:], shuffled[:num_eval]


# ---- collation ---------------------------------------------------------------------------------

# Words that --mask-repeats leaves alone: a repeated "the" or "of" is grammar, not an answer to copy.
FUNCTION_WORDS = frozenset(
    """
a an the this that these those my your his her its our their me him us them i you he she it we they who whom
whose which what where when why how and or but nor so yet if then than as of at by for from in into on onto to
up down out off over under with without about after before between through during not no is am are was were be
been being has have had do does did will would shall should can could may might must there here very too also
just only all any some each every both either neither more most less such own same other one""".split()
)


def is_content_word(token: str) -> bool:
    """A whole word that carries meaning (letters only, not in FUNCTION_WORDS): one a model could copy."""
    return token.isalpha() and token not in FUNCTION_WORDS


@dataclass
class PretrainingCollator:
    """Turns (A, B, label) pairs into a padded, masked MLM + NSP batch with Hugging Face key names."""

    tokenizer: BertTokenizer
    max_length: int = 128
    mask_prob: float = 0.15
    whole_word_mask: bool = False  # choose whole words: a "##" piece is masked with the rest of its word
    mask_repeats: bool = (
        False  # a chosen content word is masked wherever it occurs in the pair: nothing to copy
    )
    single_fraction: float = (
        0.0  # this share of pairs is given as sentence A alone, NSP label -100 (no question)
    )
    # Every batch max_length tokens long (one shape for a compiled step), padded after masking: the same batches.
    pad_to_max_length: bool = False
    _random_token_ids: torch.Tensor = field(init=False, repr=False)
    _is_continuation: torch.Tensor = field(init=False, repr=False)  # (vocab_size,) True for "##" pieces
    _is_content: torch.Tensor = field(
        init=False, repr=False
    )  # (vocab_size,) True for a word not in FUNCTION_WORDS

    def __post_init__(self) -> None:
        if not 0.0 < self.mask_prob < 1.0:
            raise ValueError(f"mask_prob ({self.mask_prob}) must be between 0 and 1 (exclusive), e.g. 0.15.")
        special = set(self.tokenizer.all_special_ids)
        ids = [i for i in range(self.tokenizer.vocab_size) if i not in special]
        self._random_token_ids = torch.tensor(ids, dtype=torch.long)
        tokens = self.tokenizer.convert_ids_to_tokens(list(range(self.tokenizer.vocab_size)))
        self._is_continuation = torch.tensor([token.startswith("##") for token in tokens], dtype=torch.bool)
        self._is_content = torch.tensor([is_content_word(token) for token in tokens])

    def __call__(
        self, pairs: Sequence[tuple[str, str, int]], generator: torch.Generator | None = None
    ) -> dict[str, torch.Tensor]:
        """Returns input_ids, token_type_ids, attention_mask, labels, next_sentence_label, special_tokens_mask
        (and content_mask with mask_repeats: True where a token starts a content word)."""
        single = (
            (torch.rand(len(pairs), generator=generator) < self.single_fraction).tolist()
            if self.single_fraction
            else [False] * len(pairs)
        )
        encodings = self.tokenizer.encode_batch_pairs(
            [(a, None if alone else b) for (a, b, _), alone in zip(pairs, single, strict=True)],
            max_length=self.max_length,
        )
        batch = pad_encodings(encodings, self.tokenizer.pad_token_id)
        continuation = self._is_continuation[batch["input_ids"]] if self.whole_word_mask else None
        content = self._is_content[batch["input_ids"]] if self.mask_repeats else None
        masked = mask_tokens(
            batch["input_ids"],
            batch["special_tokens_mask"].bool(),
            mask_token_id=self.tokenizer.mask_token_id,
            vocab_size=self.tokenizer.vocab_size,
            mask_prob=self.mask_prob,
            generator=generator,
            random_token_ids=self._random_token_ids,
            continuation_mask=continuation,
            repeatable_mask=content,
        )
        batch["input_ids"] = masked.input_ids
        batch["labels"] = masked.labels
        batch["next_sentence_label"] = torch.tensor(
            [IGNORE_INDEX if alone else label for (_, _, label), alone in zip(pairs, single, strict=True)],
            dtype=torch.long,
        )
        if content is not None:
            batch["content_mask"] = content
        if self.pad_to_max_length:
            batch = padded_to(batch, self.max_length, self.tokenizer.pad_token_id)
        return batch


# What a padding position holds in each tensor of a batch (0 where not named).
PAD_VALUES = {"labels": IGNORE_INDEX, "special_tokens_mask": 1}


def padded_to(batch: dict[str, torch.Tensor], length: int, pad_token_id: int) -> dict[str, torch.Tensor]:
    """The batch's (B, T) tensors padded on the right to `length` tokens ([PAD], label -100, not attended)."""
    values = {**PAD_VALUES, "input_ids": pad_token_id}
    return {
        name: torch.nn.functional.pad(tensor, (0, length - tensor.shape[1]), value=values.get(name, 0))
        if tensor.dim() == 2
        else tensor
        for name, tensor in batch.items()
    }


def pad_encodings(encodings: Sequence[Encoding], pad_token_id: int) -> dict[str, torch.Tensor]:
    """Stack encodings into [B, T] LongTensors, padding to the longest; padding counts as special."""
    length = max(len(encoding.input_ids) for encoding in encodings)
    pad_values = {
        "input_ids": pad_token_id,
        "token_type_ids": 0,
        "attention_mask": 0,
        "special_tokens_mask": 1,
    }
    return {
        name: torch.tensor(
            [
                getattr(encoding, name) + [value] * (length - len(encoding.input_ids))
                for encoding in encodings
            ],
            dtype=torch.long,
        )
        for name, value in pad_values.items()
    }
