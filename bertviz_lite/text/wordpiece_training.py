"""Learning a WordPiece vocabulary from text, deterministically (BertTokenizer.train calls it)."""

from __future__ import annotations

import heapq
from collections import Counter

from tokenizers import pre_tokenizers

from bertviz_lite.text.normalization import SPECIAL_TOKENS, bert_normalizer, replace_surrogates


def learn_vocab(texts: list[str], vocab_size: int, min_frequency: int = 2) -> dict[str, int]:
    """A vocabulary of about vocab_size tokens: the special tokens, every character, then the merges."""
    return _MergeLearner(_count_words(texts)).learn(vocab_size, min_frequency)


_Pair = tuple[int, int]


def _count_words(texts: list[str]) -> Counter[str]:
    """How often each word occurs, split by the same normalizer and pre-tokenizer as encoding."""
    normalizer = bert_normalizer(lowercase=True)
    pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    words: Counter[str] = Counter()
    for text, count in Counter(texts).items():  # corpora repeat sentences: split each one once
        for word, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(replace_surrogates(text))):
            words[word] += count
    return words


class _MergeLearner:
    """Byte-pair-style merges of adjacent pieces, as tokenizers' WordPieceTrainer makes them.

    The most frequent pair is merged first; equal counts go to the pair whose tokens have the
    smaller ids, as in tokenizers. There the '##' pieces get ids in hash order, which changes from
    run to run and with it the vocabulary; here every id follows from sorted characters.
    """

    def __init__(self, word_counts: Counter[str]):
        chars = sorted({char for word in word_counts for char in word})
        inside = {char for word in word_counts for char in word[1:]}
        inner = ["##" + char for char in chars if char in inside or _can_continue_a_word(char)]
        self.tokens = [*SPECIAL_TOKENS, *chars, *inner]
        self.ids = {token: index for index, token in enumerate(self.tokens)}
        self.words = [[self.ids[word[0]]] + [self.ids["##" + c] for c in word[1:]] for word in word_counts]
        self.counts = list(word_counts.values())
        self.pair_counts: dict[_Pair, int] = {}
        self.pair_words: dict[_Pair, set[int]] = {}  # may also list words that no longer hold the pair
        self.heap: list[tuple[int, int, int]] = []
        changes: dict[_Pair, int] = {}
        for index in range(len(self.words)):
            self._tally(changes, index, +1)
        self._apply(changes)

    def learn(self, vocab_size: int, min_frequency: int) -> dict[str, int]:
        """Merge until the vocabulary has vocab_size tokens or no pair occurs min_frequency times."""
        while len(self.tokens) < vocab_size and (pair := self._best_pair(min_frequency)) is not None:
            self._merge(pair)
        return dict(self.ids)

    def _best_pair(self, min_frequency: int) -> _Pair | None:
        """The most frequent pair (smallest ids among equals), or None if it is not frequent enough."""
        while self.heap:
            negative_count, first, second = heapq.heappop(self.heap)
            count = self.pair_counts.get((first, second), 0)
            if count == -negative_count:  # otherwise a stale entry: the count changed since the push
                return (first, second) if count >= max(min_frequency, 1) else None
        return None

    def _merge(self, pair: _Pair) -> None:
        """Join every non-overlapping occurrence of pair, left to right in each word, into one token."""
        token = self.tokens[pair[0]] + self.tokens[pair[1]].removeprefix("##")
        if token not in self.ids:  # two different pairs can spell the same token
            self.ids[token] = len(self.tokens)
            self.tokens.append(token)
        changes: dict[_Pair, int] = {}
        for index in sorted(self.pair_words.pop(pair)):
            joined = _join_pair(self.words[index], pair, self.ids[token])
            if len(joined) < len(self.words[index]):
                self._tally(changes, index, -1)
                self.words[index] = joined
                self._tally(changes, index, +1)
        self._apply(changes)

    def _tally(self, changes: dict[_Pair, int], index: int, sign: int) -> None:
        """Add one word's adjacent pairs to changes (sign +1, noting where they are) or take them off (-1)."""
        pieces = self.words[index]
        count = self.counts[index] * sign
        for pair in zip(pieces, pieces[1:], strict=False):
            changes[pair] = changes.get(pair, 0) + count
            if sign > 0:
                self.pair_words.setdefault(pair, set()).add(index)

    def _apply(self, changes: dict[_Pair, int]) -> None:
        """Update the pair counts and queue each new count (the queue's older entries go stale)."""
        for pair, change in changes.items():
            if not change:
                continue
            count = self.pair_counts.get(pair, 0) + change
            if count:
                self.pair_counts[pair] = count
                heapq.heappush(self.heap, (-count, *pair))
            else:
                del self.pair_counts[pair]
                self.pair_words.pop(pair, None)


def _join_pair(pieces: list[int], pair: _Pair, token: int) -> list[int]:
    """pieces with each occurrence of pair replaced by token, scanning left to right."""
    joined = []
    index = 0
    while index < len(pieces):
        if index + 1 < len(pieces) and (pieces[index], pieces[index + 1]) == pair:
            joined.append(token)
            index += 2
        else:
            joined.append(pieces[index])
            index += 1
    return joined


def _can_continue_a_word(char: str) -> bool:
    """Whether the normalizer and pre-tokenizer keep char in the same word as a letter before it."""
    text = bert_normalizer(lowercase=True).normalize_str("a" + char)
    return len(pre_tokenizers.BertPreTokenizer().pre_tokenize_str(text)) == 1
