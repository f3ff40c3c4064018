"""A sense-labelled sentence index from Princeton WordNet 3.0: every example sentence, the word it illustrates
and that word's sense (synset id, part of speech, gloss), plus an inverted index from word to sentences.

    python -m bertviz_lite.text.corpora.senses [/usr/share/wordnet] [bertviz_lite/text/corpora/senses.jsonl.gz]

WordNet's examples illustrate a synset: "they pulled the canoe up on the bank" is an example of
bank (sloping land beside a river). A word of the sentence is labelled with that sense when it is one
of the synset's single-word lemmas, directly or as an inflection (WordNet's own "morphy": the .exc
lists, then its suffix rules). The file holds one JSON object per line, synsets in file order (the same
file every time): {"synset": "n09213565", "pos": "n", "gloss": "...", "text": "...",
"words": [["bank", start, end], ...]} with character offsets into "text".
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from bertviz_lite.text.corpora.wordnet import DEFAULT_SOURCE, build_from_wordnet, parse_synset, synset_lines

SENSES_PATH = Path(__file__).resolve().parent / "senses.jsonl.gz"
EXCEPTION_FILES = {"n": "noun.exc", "v": "verb.exc", "a": "adj.exc", "r": "adv.exc"}
# WordNet's morphy detachment rules (suffix, replacement) per part of speech.
SUFFIX_RULES = {
    "n": (
        ("s", ""),
        ("ses", "s"),
        ("xes", "x"),
        ("zes", "z"),
        ("ches", "ch"),
        ("shes", "sh"),
        ("men", "man"),
        ("ies", "y"),
    ),
    "v": (
        ("s", ""),
        ("ies", "y"),
        ("es", "e"),
        ("es", ""),
        ("ed", "e"),
        ("ed", ""),
        ("ing", "e"),
        ("ing", ""),
    ),
    "a": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "r": (),
}
_WORD = re.compile(r"[A-Za-z]+(?:[-'][A-Za-z]+)*")
_ADJ_MARKER = re.compile(r"\([a-z]+\)$")


@dataclass(frozen=True)
class SenseSentence:
    """One WordNet example sentence and the words in it that its synset labels: (lemma, start, end)."""

    synset: str  # part of speech + offset, e.g. "n09213565"; unique in WordNet 3.0
    pos: str  # n, v, a or r (satellite adjectives are a)
    gloss: str
    text: str
    words: tuple[tuple[str, int, int], ...]


@dataclass(frozen=True)
class Mention:
    """One occurrence of a word: sentence number in the index, character span, and its sense (None: unlabelled)."""

    sentence: int
    start: int
    end: int
    synset: str | None


@dataclass
class SenseIndex:
    """The sentences and an inverted index: lemma -> [(sentence number, start, end), ...] in file order."""

    sentences: list[SenseSentence]
    by_word: dict[str, list[tuple[int, int, int]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.by_word:
            by_word = defaultdict(list)
            for number, sentence in enumerate(self.sentences):
                for lemma, start, end in sentence.words:
                    by_word[lemma].append((number, start, end))
            self.by_word = dict(by_word)

    def mentions(self, word: str, limit: int | None = None) -> list[Mention]:
        """Where `word` occurs: its labelled sentences first (file order), then sentences where it occurs
        unlabelled (an example of another synset), in any inflection seen or made by morphy's rules."""
        word = word.lower().strip()
        labelled = [Mention(n, a, b, self.sentences[n].synset) for n, a, b in self.by_word.get(word, ())]
        seen = {mention.sentence for mention in labelled}
        irregular = self.irregular_forms(word)
        prefixes = {word[:-1] if len(word) > 2 else word, *irregular}  # every written form starts with one
        found = []
        for number, sentence in enumerate(self.sentences):
            if limit is not None and len(labelled) + len(found) >= limit:
                break
            if number not in seen and any(prefix in sentence.text.lower() for prefix in prefixes):
                found += [Mention(number, a, b, None) for a, b in find_word(sentence.text, word, irregular)]
        return (labelled + found)[:limit]

    def irregular_forms(self, word: str) -> set[str]:
        """How the index writes `word` where it is labelled, beyond the regular rules ("ran" for run)."""
        return {self.sentences[n].text[a:b].lower() for n, a, b in self.by_word.get(word.lower(), ())}

    @property
    def num_words(self) -> int:
        """Labelled words in all sentences (a sentence may label two)."""
        return sum(len(sentence.words) for sentence in self.sentences)

    def senses_of(self, word: str) -> dict[str, int]:
        """Synset id -> number of labelled sentences of `word` (lower case), most sentences first."""
        counts: dict[str, int] = defaultdict(int)
        for number, _, _ in self.by_word.get(word.lower(), ()):
            counts[self.sentences[number].synset] += 1
        return dict(sorted(counts.items(), key=lambda item: -item[1]))


def synset_lemmas(line: str) -> tuple[str, str, list[str]]:
    """One data.* line -> (synset id, part of speech, its lemmas in lower case with spaces for underscores)."""
    parts = line.split(" | ", 1)[0].split()
    pos = "a" if parts[2] == "s" else parts[2]
    count = int(parts[3], 16)
    lemmas = [_ADJ_MARKER.sub("", parts[4 + 2 * i]).replace("_", " ").lower() for i in range(count)]
    return pos + parts[0], pos, lemmas


def read_exceptions(source: Path) -> dict[str, dict[str, set[str]]]:
    """Part of speech -> irregular form -> its base forms ("ran" -> {"run"}), from WordNet's .exc files."""
    exceptions: dict[str, dict[str, set[str]]] = {}
    for pos, name in EXCEPTION_FILES.items():
        table: dict[str, set[str]] = defaultdict(set)
        path = source / name
        if path.is_file():
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                form, *bases = line.split()
                table[form].update(bases)
        exceptions[pos] = dict(table)
    return exceptions


def base_forms(word: str, pos: str, exceptions: dict[str, dict[str, set[str]]]) -> set[str]:
    """The word and every base form morphy's rules allow (candidates, not checked against a dictionary)."""
    word = word.lower()
    forms = {word, *exceptions.get(pos, {}).get(word, ())}
    for suffix, replacement in SUFFIX_RULES[pos]:
        if word.endswith(suffix) and len(word) > len(suffix) + 1:
            stem = word[: -len(suffix)]
            forms.add(stem + replacement)
            if not replacement and len(stem) > 2 and stem[-1] == stem[-2] and stem[-1] not in "aeiouls":
                forms.add(stem[:-1])  # a doubled consonant: running -> run, hotter -> hot
    return forms


def label_words(text: str, pos: str, lemmas: list[str], exceptions) -> tuple[tuple[str, int, int], ...]:
    """(lemma, start, end) for each word of text that is one of the single-word lemmas or an inflection of one."""
    wanted = {lemma for lemma in lemmas if " " not in lemma}
    # Every base form but an irregular one keeps the word's first two letters (a stem keeps at least two): a word
    # whose first two letters begin no lemma, and that is no irregular form, cannot be one (most words).
    beginnings = {lemma[:2] for lemma in wanted}
    irregular = exceptions.get(pos, {})
    found = []
    for match in _WORD.finditer(text):
        word = match.group().lower()
        if word[:2] not in beginnings and word not in irregular:
            continue
        hits = sorted(base_forms(word, pos, exceptions) & wanted)
        if hits:
            found.append((hits[0], match.start(), match.end()))
    return tuple(found)


def find_word(text: str, word: str, irregular: set[str] = frozenset()) -> list[tuple[int, int]]:
    """Character spans of `word` in text: as written, in a form of `irregular`, or inflected by the noun and verb
    rules (the adjective rules would read "banker" as a form of bank)."""
    word = word.lower()
    spans = []
    for match in _WORD.finditer(text):
        written = match.group().lower()
        if (
            written == word
            or written in irregular
            or any(word in base_forms(written, pos, {}) for pos in "nv")
        ):
            spans.append((match.start(), match.end()))
    return spans


def sense_sentences(source: Path = DEFAULT_SOURCE) -> Iterator[SenseSentence]:
    """Every example sentence of every synset, with its labelled words (possibly none), in file order."""
    exceptions = read_exceptions(source)
    for line in synset_lines(source):
        if '"' not in line:  # no quoted example (most synsets): not parsed at all
            continue
        parsed = parse_synset(line)
        if parsed is not None and parsed[3]:
            synset, pos, lemmas = synset_lemmas(line)
            for text in parsed[3]:
                yield SenseSentence(synset, pos, parsed[2], text, label_words(text, pos, lemmas, exceptions))


def write_index(source: Path = DEFAULT_SOURCE, output: Path = SENSES_PATH) -> tuple[int, int]:
    """Write the labelled sentences as gzipped JSON lines (deterministic bytes); (sentences, labelled words)."""
    kept = [s for s in sense_sentences(source) if s.words]
    lines = [
        json.dumps(
            {
                "synset": s.synset,
                "pos": s.pos,
                "gloss": s.gloss,
                "text": s.text,
                "words": [list(w) for w in s.words],
            },
            ensure_ascii=False,
        )
        for s in kept
    ]
    output.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode("utf-8"), compresslevel=9, mtime=0))
    return len(kept), sum(len(s.words) for s in kept)


def read_index(path: Path = SENSES_PATH) -> SenseIndex:
    """The shipped index (or one written by write_index)."""
    sentences = []
    for line in gzip.decompress(Path(path).read_bytes()).decode("utf-8").splitlines():
        record = json.loads(line)
        words = tuple((lemma, int(start), int(end)) for lemma, start, end in record["words"])
        sentences.append(
            SenseSentence(record["synset"], record["pos"], record["gloss"], record["text"], words)
        )
    return SenseIndex(sentences)


@lru_cache(maxsize=1)
def sense_index() -> SenseIndex:
    """The shipped index, read once per process (about 1 s; shared and read-only)."""
    return read_index(SENSES_PATH)


def main(argv: list[str]) -> int:
    return build_from_wordnet(
        argv,
        SENSES_PATH,
        lambda source, output: "{} sentences, {} labelled words".format(*write_index(source, output)),
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
