"""Meaning in context: one word in many sentences, its senses in 2-D layer by layer, how well they separate, and
its nearest neighbours in context (a concordance). The arithmetic is in inspection/word_vectors.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from bertviz_lite.inspection.analysis import pca_2d
from bertviz_lite.inspection.walkthrough import Question, Verdict, check_answer
from bertviz_lite.inspection.word_vectors import (
    WordSpan,
    loo_centroid_accuracy,
    span_vectors,
    static_vectors,
    unit_rows,
)
from bertviz_lite.limits import MAX_USER_OCCURRENCES, MAX_USER_SENTENCE_CHARS, MAX_USER_SENTENCES, check_text
from bertviz_lite.model.modeling import BertForPreTraining
from bertviz_lite.text.corpora.senses import SenseIndex, find_word
from bertviz_lite.text.tokenization import BertTokenizer

# Words with at least two WordNet senses illustrated by two or more example sentences each.
SUGGESTED_WORDS = (
    "bank",
    "light",
    "play",
    "run",
    "break",
    "time",
    "line",
    "head",
    "strike",
    "point",
    "set",
    "cold",
    "hot",
    "spring",
    "bat",
    "cell",
)
# Sentences the walkthrough's link adds for "bank", each with the sense it means in brackets.
BANK_SENTENCES = (
    "[river] We had a picnic on the bank of the river.",
    "[river] The boat drifted towards the muddy bank.",
    "[river] Reeds grew thick along the bank of the stream.",
    "[river] Fishermen lined the bank at dawn.",
    "[money] She paid her salary into the bank.",
    "[money] The bank approved the loan on Monday.",
    "[money] He works as a teller in a bank downtown.",
    "[money] The bank raised its interest rates again.",
)
PRESETS = {"bank": BANK_SENTENCES}  # a link's ?preset=bank adds these sentences
MAX_SENTENCES = 200  # sentences gathered per word (labelled ones first)
MAX_WORD_CHARS = 40
YOURS = "your sentence"  # the sense label of a sentence the user typed
UNLABELLED = "another synset's example"  # the word occurs, but WordNet labels another word of the sentence
_LABEL = re.compile(r"^\s*\[([^\]]{1,30})\]\s*(.+)$")  # "[river] We sat on the bank."
_ONE_WORD = re.compile(r"^[^\W\d_]+(?:['-][^\W\d_]+)*$")  # letters, inner hyphens and apostrophes: no markup
CONTEXT_CHARS = 45  # characters of context on each side in the concordance


@dataclass(frozen=True)
class Occurrence:
    """One occurrence of the word: the sentence, the word's span, its sense (synset id) and the sense's gloss."""

    text: str
    start: int
    end: int
    sense: str  # a synset id, UNLABELLED or YOURS
    gloss: str

    @property
    def labelled(self) -> bool:
        """A WordNet sense, or a sense the user named ('[river] ...'): scored by the separation."""
        return self.sense not in (YOURS, UNLABELLED)

    @property
    def user_named(self) -> bool:
        """A sentence the user typed with its sense in brackets."""
        return self.sense.endswith(f"({YOURS})")


def check_word(word: str) -> str:
    """The word in lower case, or a ValueError a person can act on."""
    word = word.strip().lower()
    if len(word) > MAX_WORD_CHARS or not _ONE_WORD.match(word):
        raise ValueError(
            f"Type one word of letters (up to {MAX_WORD_CHARS}), such as {', '.join(SUGGESTED_WORDS[:4])}."
        )
    return word


def gather_occurrences(
    index: SenseIndex,
    word: str,
    extra_sentences: Sequence[str] = (),
    limit: int = MAX_SENTENCES,
    unlabelled: bool = True,
) -> list[Occurrence]:
    """The word's labelled WordNet sentences, then (if `unlabelled`) sentences where WordNet labels another word,
    up to `limit` in all; then the user's sentences."""
    word = check_word(word)
    found = []
    limit = limit if unlabelled else min(limit, len(index.by_word.get(word, ())))
    for mention in index.mentions(word, limit):
        sentence = index.sentences[mention.sentence]
        sense, gloss = (sentence.synset, sentence.gloss) if mention.synset else (UNLABELLED, "")
        found.append(Occurrence(sentence.text, mention.start, mention.end, sense, gloss))
    return found + user_occurrences(index, word, extra_sentences)


def user_occurrences(index: SenseIndex, word: str, lines: Sequence[str]) -> list[Occurrence]:
    """The word's occurrences in the user's sentences; ValueError past the limits on lines, characters (both checked
    before anything is read) and occurrences (each one is a vector at every layer)."""
    check_user_lines(lines)
    forms = index.irregular_forms(word)
    found = []
    for line in lines:
        label, text = user_sentence(line)
        sense = f"{label} ({YOURS})" if label else YOURS
        found += [Occurrence(text, start, end, sense, "") for start, end in find_word(text, word, forms)]
        if len(found) > MAX_USER_OCCURRENCES:
            raise ValueError(
                f"“{word}” occurs more than {MAX_USER_OCCURRENCES} times in your sentences; this server "
                f"takes at most {MAX_USER_OCCURRENCES}: use fewer sentences."
            )
    return found


def user_lines(text: str) -> tuple[str, ...]:
    """The non-blank lines of "Your sentences", within the limits (ValueError in words past them)."""
    lines = tuple(
        line
        for line in check_text(text, MAX_USER_SENTENCE_CHARS, "The text of your sentences").splitlines()
        if line.strip()
    )
    check_user_lines(lines)
    return lines


def check_user_lines(lines: Sequence[str]) -> None:
    """At most MAX_USER_SENTENCES lines of MAX_USER_SENTENCE_CHARS characters in all, counted before any is read."""
    if len(lines) > MAX_USER_SENTENCES:
        raise ValueError(
            f"Your sentences are {len(lines):,} lines; this server takes at most {MAX_USER_SENTENCES}."
        )
    total = sum(map(len, lines))
    if total > MAX_USER_SENTENCE_CHARS:
        raise ValueError(
            f"The text of your sentences is {total:,} characters long; this server takes at most "
            f"{MAX_USER_SENTENCE_CHARS:,}."
        )


def user_sentence(line: str) -> tuple[str, str]:
    """'[river] We sat on the bank.' -> ('river', 'We sat on the bank.'); no brackets: ('', line)."""
    match = _LABEL.match(line)
    return (match.group(1).strip(), match.group(2).strip()) if match else ("", line.strip())


@dataclass(frozen=True)
class WordContexts:
    """Every occurrence of a word and its vector at the embedding output and each layer."""

    word: str
    occurrences: tuple[Occurrence, ...]
    vectors: np.ndarray  # [L + 1, N, H] float32; layer 0 = the embedding output
    static: np.ndarray  # [N, H] the input token embedding alone (same in every sentence for the same form)

    @property
    def num_layers(self) -> int:
        return self.vectors.shape[0] - 1

    @property
    def senses(self) -> list[str]:
        return [o.sense for o in self.occurrences]

    def glosses(self) -> dict[str, str]:
        """Sense -> its gloss, senses with most occurrences first."""
        counts = pd.Series(self.senses).value_counts(sort=True)
        gloss = {o.sense: o.gloss for o in self.occurrences}
        return {sense: gloss[sense] for sense in counts.index}

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "sentence": [o.text for o in self.occurrences],
                "word": [o.text[o.start : o.end] for o in self.occurrences],
                "start": [o.start for o in self.occurrences],
                "sense": self.senses,
                "gloss": [o.gloss for o in self.occurrences],
            }
        )


def word_contexts(
    model: BertForPreTraining,
    tokenizer: BertTokenizer,
    index: SenseIndex,
    word: str,
    extra_sentences: Sequence[str] = (),
    limit: int = MAX_SENTENCES,
    unlabelled: bool = True,
) -> WordContexts:
    """Gather the word's sentences and run the model on them in batches (occurrences cut by truncation dropped)."""
    occurrences = gather_occurrences(index, word, extra_sentences, limit, unlabelled)
    if not occurrences:
        raise ValueError(
            f"“{check_word(word)}” is not in the sense index's sentences; type a sentence with it below, "
            f"or pick one of {', '.join(SUGGESTED_WORDS[:6])}."
        )
    spans = [WordSpan(o.text, o.start, o.end) for o in occurrences]
    vectors, pieces = span_vectors(model, tokenizer, spans)
    kept = [i for i, positions in enumerate(pieces) if positions]
    static = static_vectors(model, tokenizer, [spans[i] for i in kept])
    return WordContexts(check_word(word), tuple(occurrences[i] for i in kept), vectors[:, kept], static)


def layer_names(num_layers: int) -> list[str]:
    """Slider labels: 0 is the embedding output, then each layer."""
    return ["embeddings", *(f"layer {i}" for i in range(1, num_layers + 1))]


@dataclass(frozen=True)
class ContextProjection:
    """The word's vectors at one layer, projected on their first two principal components (unit length first)."""

    points: np.ndarray  # [N, 2]
    layer: int
    occurrences: tuple[Occurrence, ...]
    glosses: dict[str, str]  # sense -> gloss, commonest sense first
    num_layers: int

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "pc1": self.points[:, 0],
                "pc2": self.points[:, 1],
                "layer": self.layer,
                "sentence": [o.text for o in self.occurrences],
                "sense": [o.sense for o in self.occurrences],
                "gloss": [o.gloss for o in self.occurrences],
            }
        )


def context_projection(contexts: WordContexts, layer: int) -> ContextProjection:
    """PCA of the word's unit-length vectors at `layer` (0 = embeddings): direction, not length, is compared."""
    if not 0 <= layer <= contexts.num_layers:
        raise ValueError(f"layer {layer} is out of range: this model has layers 0-{contexts.num_layers}")
    return ContextProjection(
        pca_2d(unit_rows(contexts.vectors[layer])),
        layer,
        contexts.occurrences,
        contexts.glosses(),
        contexts.num_layers,
    )


@dataclass(frozen=True)
class SenseSeparation:
    """Leave-one-out nearest-centroid accuracy of the word's senses per layer, against baselines."""

    word: str
    accuracy: np.ndarray  # [L + 1]; index 0 = embedding output
    static: float  # the input token embedding alone
    chance: float  # always guessing the commonest sense
    num_scored: int  # occurrences of senses with at least two labelled sentences
    num_senses: int
    by_user: bool  # the senses scored are the ones the user named, not WordNet's

    @property
    def best_layer(self) -> int:
        return int(np.nanargmax(self.accuracy)) if np.isfinite(self.accuracy).any() else 0

    def to_frame(self) -> pd.DataFrame:
        rows = [("static input embedding", self.static), ("chance (commonest sense)", self.chance)]
        rows += list(zip(layer_names(len(self.accuracy) - 1), self.accuracy.tolist(), strict=True))
        return pd.DataFrame(rows, columns=["vectors", "accuracy"])


def scored_labels(contexts: WordContexts) -> tuple[np.ndarray, list[str]]:
    """Which occurrences are scored and their senses: the senses the user named, if any (WordNet's own senses
    of the same meaning would count as other senses), else WordNet's; only senses with two sentences or more."""
    named = any(o.user_named for o in contexts.occurrences)
    senses = pd.Series(
        [o.sense if (o.user_named if named else o.labelled) else None for o in contexts.occurrences]
    )
    counts = senses.value_counts()
    keep = senses.map(counts).fillna(0).to_numpy() >= 2
    return np.flatnonzero(keep), senses[keep].tolist()


def sense_separation(contexts: WordContexts) -> SenseSeparation:
    """How well WordNet's senses separate at each layer; NaN when fewer than two senses have two sentences."""
    keep, labels = scored_labels(contexts)
    accuracy = np.array([loo_centroid_accuracy(layer[keep], labels) for layer in contexts.vectors])
    static = loo_centroid_accuracy(contexts.static[keep], labels)
    chance = pd.Series(labels).value_counts(normalize=True).max() if labels else float("nan")
    by_user = any(o.user_named for o in contexts.occurrences)
    return SenseSeparation(
        contexts.word, accuracy, static, float(chance), len(keep), len(set(labels)), by_user
    )


@dataclass(frozen=True)
class NeighbourPool:
    """Unit vectors of many words in context at one layer, and where each word is."""

    layer: int
    vectors: np.ndarray  # [M, H] float32, unit length
    occurrences: tuple[Occurrence, ...]

    @property
    def nbytes(self) -> int:
        return self.vectors.nbytes


def pool_from_contexts(contexts: WordContexts, layer: int) -> NeighbourPool:
    """The word's own occurrences as the pool: which other uses of the word are closest to this one."""
    return NeighbourPool(layer, unit_rows(contexts.vectors[layer]).astype(np.float32), contexts.occurrences)


def index_pool(
    model: BertForPreTraining,
    tokenizer: BertTokenizer,
    index: SenseIndex,
    layer: int,
    progress: Callable[[float], None] | None = None,
    chunk: int = 2048,
) -> NeighbourPool:
    """Every labelled word of the sense index at `layer`: the model runs only up to that layer, in chunks."""
    spans = []
    occurrences = []
    for sentence in index.sentences:
        for _, start, end in sentence.words:
            spans.append(WordSpan(sentence.text, start, end))
            occurrences.append(Occurrence(sentence.text, start, end, sentence.synset, sentence.gloss))
    vectors = np.zeros((len(spans), model.config.hidden_size), dtype=np.float32)
    for first in range(0, len(spans), chunk):
        part, _ = span_vectors(model, tokenizer, spans[first : first + chunk], num_layers=layer)
        vectors[first : first + chunk] = unit_rows(part[layer])
        if progress is not None:
            progress(min(1.0, (first + chunk) / len(spans)))
    return NeighbourPool(layer, vectors, tuple(occurrences))


@dataclass(frozen=True)
class Neighbours:
    """The k words of a pool most similar (cosine) to a query vector, in context."""

    similarity: np.ndarray  # [k], highest first
    occurrences: tuple[Occurrence, ...]
    layer: int
    query_sense: str | None = None  # the query's sense, when it has one: each neighbour is marked same or not

    def to_frame(self) -> pd.DataFrame:
        """A concordance: left context, the word, right context, whether the sense is the query's, gloss, synset."""
        same = [
            "" if self.query_sense is None else "yes" if o.sense == self.query_sense else "no"
            for o in self.occurrences
        ]
        rows = [
            (
                rank + 1,
                round(float(score), 4),
                _left(o),
                o.text[o.start : o.end],
                _right(o),
                flag,
                o.gloss,
                o.sense,
            )
            for rank, (score, o, flag) in enumerate(zip(self.similarity, self.occurrences, same, strict=True))
        ]
        return pd.DataFrame(
            rows, columns=["rank", "similarity", "before", "word", "after", "same sense", "gloss", "sense"]
        )


def _left(o: Occurrence) -> str:
    text = o.text[: o.start]
    return text if len(text) <= CONTEXT_CHARS else "…" + text[-CONTEXT_CHARS:]


def _right(o: Occurrence) -> str:
    text = o.text[o.end :]
    return text if len(text) <= CONTEXT_CHARS else text[:CONTEXT_CHARS] + "…"


def nearest_neighbours(
    pool: NeighbourPool, query: np.ndarray, k: int = 10, exclude: Occurrence | None = None
) -> Neighbours:
    """The k most similar pool entries to `query` [H] (the query's own occurrence left out)."""
    similarity = pool.vectors @ unit_rows(query[None])[0].astype(np.float32)
    if exclude is not None:
        similarity = np.where([o == exclude for o in pool.occurrences], -np.inf, similarity)
    k = min(k, int(np.isfinite(similarity).sum()))
    top = np.argpartition(-similarity, k - 1)[:k] if k else np.zeros(0, int)
    top = top[np.lexsort((top, -similarity[top]))]  # highest first; ties in pool order
    query_sense = exclude.sense if exclude is not None and exclude.labelled else None
    return Neighbours(similarity[top], tuple(pool.occurrences[i] for i in top), pool.layer, query_sense)


def separation_question(separation: SenseSeparation) -> Question | None:
    """Predict, then reveal: at which layer do the senses separate best? None when nothing could be scored."""
    if not np.isfinite(separation.accuracy).any():
        return None
    names = layer_names(len(separation.accuracy) - 1)
    best = separation.best_layer
    return Question(
        prompt=f"At which layer will the senses of “{separation.word}” separate best?",
        options=tuple(names),
        answer=names[best],
        explanation=f"At {names[best]}, {separation.accuracy[best]:.0%} of held-out sentences get their sense right, "
        f"against {separation.static:.0%} from the static input embedding and {separation.chance:.0%} "
        "by always guessing the commonest sense.",
    )


def separation_verdict(separation: SenseSeparation, guess: str | None) -> Verdict:
    """The learner's guess judged; a layer that ties with the best one counts as right."""
    question = separation_question(separation)
    if question is None:
        raise ValueError("There is no separation score to guess: no two senses have two sentences each.")
    names = layer_names(len(separation.accuracy) - 1)
    tied = guess in names and separation.accuracy[names.index(guess)] >= np.nanmax(separation.accuracy) - 1e-9
    return check_answer(replace(question, answer=guess) if tied else question, guess)
