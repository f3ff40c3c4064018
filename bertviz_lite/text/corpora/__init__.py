"""Corpora shipped with the package: WordNet's definitions and examples (english), prose and quotations (everyday)."""

from __future__ import annotations

import gzip
from pathlib import Path

ENGLISH_PATH = Path(__file__).resolve().parent / "english.txt.gz"
EVERYDAY_PATH = Path(__file__).resolve().parent / "everyday.txt.gz"
MINIMAL_PAIRS_PATH = Path(__file__).resolve().parent / "minimal_pairs.json"  # templates of the built-in pairs
CORPUS_NAMES = (
    "builtin",
    "english",
    "everyday",
    "english+everyday",
)  # the named corpora; anything else is a file path


def english_corpus(path: Path = ENGLISH_PATH, max_documents: int | None = None) -> list[list[str]]:
    """WordNet 3.0 as documents: one per synset, its definition as a sentence, then its examples.

    The file holds one sentence per line and a blank line between documents (see `corpora.wordnet`).
    """
    text = gzip.decompress(path.read_bytes()).decode("utf-8")
    blocks = text.strip("\n").split("\n\n")[:max_documents]
    return [block.split("\n") for block in blocks]


def everyday_corpus(path: Path = EVERYDAY_PATH, max_documents: int | None = None) -> list[list[str]]:
    """Prose and quotations from Debian packages (see `corpora.everyday` and corpora/README.md), as documents."""
    return english_corpus(path, max_documents)
