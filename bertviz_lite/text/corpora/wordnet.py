"""Build the English corpus from Princeton WordNet 3.0: every synset's definition and examples as prose.

    python -m bertviz_lite.text.corpora.wordnet [/usr/share/wordnet] [bertviz_lite/text/corpora/english.txt.gz]

The WordNet files come from Debian's `wordnet-base` package (`apt-get install wordnet-base`, or
`apt-get download wordnet-base && dpkg -x wordnet-base_*.deb DIR`, then DIR/usr/share/wordnet).
Each synset becomes one document: its definition written as a sentence ("To retrain is to teach new
skills."), then its example sentences. The output is deterministic: synsets in file order.
"""

from __future__ import annotations

import gzip
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

DATA_FILES = {"n": "data.noun", "v": "data.verb", "a": "data.adj", "r": "data.adv"}
DEFAULT_SOURCE = Path("/usr/share/wordnet")
DEFAULT_OUTPUT = Path(__file__).resolve().parent / "english.txt.gz"
_QUOTED = re.compile(r'"([^"]+)"')
_DOMAIN = re.compile(r"^\([^)]*\)\s*")  # "(genetics) normal complement ..." -> "normal complement ..."
_ADJ_MARKER = re.compile(r"\([a-z]+\)$")  # "galore(ip)" -> "galore"


def parse_synset(line: str) -> tuple[str, str, str, list[str]] | None:
    """One data.* line -> (part of speech, first lemma, definition, examples); None for licence lines."""
    if line.startswith("  ") or " | " not in line:
        return None
    fields, gloss = line.split(" | ", 1)
    parts = fields.split()
    pos = parts[2]
    lemma = _ADJ_MARKER.sub("", parts[4]).replace("_", " ")
    examples = [_sentence(text) for text in _QUOTED.findall(gloss)]
    definition = _QUOTED.sub("", gloss).strip().strip(";").strip()
    definition = " ".join(_DOMAIN.sub("", definition).replace(" ;", ";").split()).rstrip(";:,")
    return pos, lemma, definition, [e for e in examples if len(e.split()) >= 3]


def _sentence(text: str) -> str:
    """Capitalised, single-spaced, ending in . ! or ?"""
    text = " ".join(text.split()).strip(" ;,")
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def definition_sentence(pos: str, lemma: str, definition: str) -> str:
    """The definition as plain prose: 'A dog is ...', 'To run is to ...', 'Quick means ...'."""
    if pos == "n":
        subject = lemma if lemma[:1].isupper() else _with_article(lemma, definition)
        return _sentence(f"{subject} is {definition}")
    if pos == "v":
        return _sentence(f"to {lemma} is to {definition}")
    return _sentence(f"{lemma} means {definition}")


def _with_article(lemma: str, definition: str) -> str:
    """'a dog' when the definition starts with a/an (a countable thing), else the bare lemma."""
    if not re.match(r"(a|an) ", definition):
        return lemma
    return ("an " if lemma[0].lower() in "aeiou" else "a ") + lemma


def synset_lines(source: Path = DEFAULT_SOURCE) -> Iterator[str]:
    """Every line of the four data files (nouns, verbs, adjectives, adverbs), in file order."""
    for name in DATA_FILES.values():
        with open(source / name, encoding="utf-8", errors="replace") as handle:
            yield from handle


def documents(source: Path = DEFAULT_SOURCE) -> Iterator[list[str]]:
    """One document per synset with a definition: [definition sentence, example, ...]."""
    for line in synset_lines(source):
        synset = parse_synset(line)
        if synset is not None and synset[2]:
            pos, lemma, definition, examples = synset
            yield [definition_sentence(pos, lemma, definition), *examples]


def write_corpus(source: Path = DEFAULT_SOURCE, output: Path = DEFAULT_OUTPUT) -> tuple[int, int]:
    """Write documents as lines (one sentence each), blank line between documents; (documents, sentences)."""
    docs = list(documents(source))
    text = "\n\n".join("\n".join(doc) for doc in docs) + "\n"
    output.write_bytes(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))
    return len(docs), sum(len(doc) for doc in docs)


def build_from_wordnet(argv: list[str], default_output: Path, write: Callable[[Path, Path], str]) -> int:
    """A builder's command line: [WORDNET_DIR] [OUTPUT]; `write(source, output)` says what it wrote."""
    source = Path(argv[0]) if argv else DEFAULT_SOURCE
    output = Path(argv[1]) if len(argv) > 1 else default_output
    if not (source / "data.noun").is_file():
        print(f"error: no WordNet data.noun in {source}: install Debian's wordnet-base", file=sys.stderr)
        return 2
    print(f"{output}: {write(source, output)}")
    return 0


def main(argv: list[str]) -> int:
    return build_from_wordnet(
        argv,
        DEFAULT_OUTPUT,
        lambda source, output: "{} documents, {} sentences".format(*write_corpus(source, output)),
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
