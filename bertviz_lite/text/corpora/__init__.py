"""Corpora shipped with the package: the English corpus built from WordNet's definitions and examples."""

from __future__ import annotations

import gzip
from pathlib import Path

ENGLISH_PATH = Path(__file__).resolve().parent / "english.txt.gz"
CORPUS_NAMES = ("builtin", "english")  # the named corpora; anything else is a file path


def english_corpus(path: Path = ENGLISH_PATH, max_documents: int | None = None) -> list[list[str]]:
    """WordNet 3.0 as documents: one per synset, its definition as a sentence, then its examples.

    The file holds one sentence per line and a blank line between documents (see `corpora.wordnet`).
    """
    text = gzip.decompress(path.read_bytes()).decode("utf-8")
    blocks = text.strip("\n").split("\n\n")[:max_documents]
    return [block.split("\n") for block in blocks]
