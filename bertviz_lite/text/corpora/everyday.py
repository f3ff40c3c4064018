"""Build corpora/everyday.txt.gz: running English prose and quotations from Debian packages, offline, byte for byte.

    apt-get download wordnet-base dict-gcide dict-devil fortunes gnome-user-docs debian-handbook
    for deb in *.deb; do dpkg -x "$deb" /tmp/everyday-root; done
    python -m bertviz_lite.text.corpora.everyday bertviz_lite/corpora/everyday.txt.gz --root /tmp/everyday-root

(`--root /` reads the packages where `apt-get install` put them.) The output has the format of english.txt.gz:
one sentence per line, a blank line between documents. Sources and their licences: corpora/README.md.
WordNet contributes only its example sentences: its definitions, written as "A dog is a ...", would
teach the model to copy the headword.
"""

from __future__ import annotations

import argparse
import gzip
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from html.parser import HTMLParser
from pathlib import Path
from xml.etree import ElementTree

from bertviz_lite.text.corpora.wordnet import DATA_FILES, parse_synset
from bertviz_lite.text.pretraining_data import split_sentences

DEFAULT_OUTPUT = Path(__file__).resolve().parent / "everyday.txt.gz"
GNOME_HELP = "usr/share/help/C/gnome-help"
HANDBOOK = "usr/share/doc/debian-handbook/html/en-US"
LIBREOFFICE_HELP = "usr/share/libreoffice/help/en-US/text"
PYTHON_DOCS = "usr/share/doc/python3.11/html"
PYTHON_DOC_PARTS = ("tutorial", "howto", "faq")
GCIDE = "usr/share/dictd/gcide.dict.dz"
DEVIL = "usr/share/dictd/devil.dict.dz"
FORTUNES = "usr/share/games/fortunes"
WORDNET = "usr/share/wordnet"
# Fortune files of general quotations; left out: offensive, technical, one-author (pratchett, startrek, zippy),
# song lyrics, ASCII art, and "definitions" (headword-style entries)
FORTUNE_FILES = (
    "art",
    "cookie",
    "education",
    "food",
    "fortunes",
    "goedel",
    "humorists",
    "kids",
    "law",
    "literature",
    "love",
    "magic",
    "medicine",
    "miscellaneous",
    "paradoxum",
    "people",
    "pets",
    "platitudes",
    "politics",
    "science",
    "sports",
    "wisdom",
    "work",
)
MIN_WORDS = 4
MAX_WORDS = 50
GROUP_SIZE = (
    4  # one-sentence documents of one topic are joined into documents of up to this many (see `grouped`)
)
_NOT_PROSE = re.compile(
    r"[/\\_=<>{}\[\]|$#@*~^`]|https?:|www\.|\.\w+\(|\s-{1,2}\w"
)  # paths, code, markup, options
_ATTRIBUTION = re.compile(r"^\s*--\s*\S")  # "-- Mark Twain" / "--Milton."
_ELLIPSIS = re.compile(r"\s*\.\s\.\s\.(\s\.)?")  # Webster's ". . ." -> "..."


def clean_sentence(text: str) -> str | None:
    """The sentence single-spaced if it reads as English prose (4-50 words, capitalised, ends . ! ?), else None."""
    text = " ".join(_ELLIPSIS.sub("...", text).split()).replace("``", '"').replace("''", '"')
    words = text.split()
    if not MIN_WORDS <= len(words) <= MAX_WORDS or _NOT_PROSE.search(text):
        return None
    first = next((c for c in text if c.isalpha()), "")
    if not first.isupper() or text.rstrip("\"')")[-1:] not in (".", "!", "?"):
        return None
    letters = sum(c.isalpha() or c == " " for c in text)
    return text if letters >= 0.85 * len(text) else None


def prose_sentences(paragraphs: Iterable[str], banned_word: str | None = None) -> list[str]:
    """The clean sentences of some paragraphs; those containing `banned_word` (a headword) are dropped."""
    sentences = (clean_sentence(s) for paragraph in paragraphs for s in split_sentences(paragraph))
    banned = re.compile(rf"\b{re.escape(banned_word)}", re.IGNORECASE) if banned_word else None
    return [s for s in sentences if s and not (banned and banned.search(s))]


# ---- sources: each yields documents (lists of sentences) -------------------------------------------------


def gnome_help(root: Path) -> Iterator[list[str]]:
    """GNOME's desktop help (Mallard pages): one document per page, the text of its <p> elements."""
    namespace = "{http://projectmallard.org/1.0/}"
    for page in sorted((root / GNOME_HELP).glob("*.page")):
        tree = ElementTree.parse(page)
        paragraphs = ["".join(p.itertext()) for p in tree.iter(f"{namespace}p")]
        yield prose_sentences(paragraphs)


class _Paragraphs(HTMLParser):
    """The text of every paragraph (<p>, DocBook's <div class="para">) of an HTML page, leaving out <pre> blocks."""

    def __init__(self) -> None:
        super().__init__()
        self.paragraphs: list[str] = []
        self._open: list[bool] = []  # per open <p>/<div>: is it a paragraph
        self._depth = 0
        self._pre = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in ("p", "div"):
            is_paragraph = tag == "p" or ("class", "para") in attrs
            self._open.append(is_paragraph)
            if is_paragraph:
                self._depth += 1
                self.paragraphs.append("")
        self._pre += tag == "pre"

    def handle_endtag(self, tag: str) -> None:
        if tag in ("p", "div") and self._open:
            self._depth -= self._open.pop()
        self._pre -= tag == "pre" and self._pre > 0

    def handle_data(self, data: str) -> None:
        if self._depth and not self._pre:
            self.paragraphs[-1] += data


def html_pages(pages: Iterable[Path]) -> Iterator[list[str]]:
    """One document per HTML page: the clean sentences of its paragraphs."""
    for page in pages:
        parser = _Paragraphs()
        parser.feed(page.read_text(encoding="utf-8", errors="replace"))
        yield prose_sentences(parser.paragraphs)


def debian_handbook(root: Path) -> Iterator[list[str]]:
    """The Debian Administrator's Handbook (English HTML)."""
    return html_pages(sorted((root / HANDBOOK).glob("*.html")))


def libreoffice_help(root: Path) -> Iterator[list[str]]:
    """LibreOffice's help (English HTML)."""
    return html_pages(sorted((root / LIBREOFFICE_HELP).rglob("*.html")))


def python_docs(root: Path) -> Iterator[list[str]]:
    """Python's tutorial, HOWTOs and FAQ (HTML; not the library reference); code-like sentences are dropped."""
    return html_pages(
        sorted(p for part in PYTHON_DOC_PARTS for p in (root / PYTHON_DOCS / part).rglob("*.html"))
    )


def _dict_paragraphs(path: Path) -> list[str]:
    """A dictd database (dictzip is gzip) split at blank lines, each paragraph with its lines' indentation."""
    text = gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace")
    return re.split(r"\n[ \t]*\n", text)


def grouped(documents: Iterable[tuple[str, list[str]]], size: int = GROUP_SIZE) -> Iterator[list[str]]:
    """Runs of one-sentence documents with the same topic key joined into documents of up to `size` sentences.

    A corpus where a third of the sentences stand alone teaches next-sentence prediction a shortcut: such a
    sentence is never followed, so "reads like a quotation" means NotNext. Joined with their neighbours of
    the same topic (a fortune file, a WordNet lexicographer file, nearby dictionary headwords) they get
    topical successors, the kind of continuity BERT's NSP is known to rely on. Longer documents stay whole.
    """
    run: list[str] = []
    last_key = None
    for key, document in documents:
        if run and (key != last_key or len(document) > 1 or len(run) == size):
            yield run
            run = []
        last_key = key
        if len(document) > 1:
            yield document
        elif document:
            run += document
    if run:
        yield run


def gcide_quotations(root: Path) -> Iterator[list[str]]:
    """The literary quotations that illustrate GCIDE's (Webster 1913) entries, neighbouring ones grouped."""
    return grouped(("gcide", quotation) for quotation in _gcide_quotations(root))


def _gcide_quotations(root: Path) -> Iterator[list[str]]:
    for paragraph in _dict_paragraphs(root / GCIDE):
        lines = [line for line in paragraph.split("\n") if line.strip() and not line.strip().startswith("[")]
        if len(lines) < 2 or not re.match(r"^\s{20,}--\s*[A-Z]", lines[-1]):
            continue
        if all(line.startswith(" " * 8) for line in lines[:-1]):  # indented: a quotation, not a sense
            yield prose_sentences([" ".join(lines[:-1])])


def devils_dictionary(root: Path) -> Iterator[list[str]]:
    """Ambrose Bierce's entries as prose, "WORD, n." removed and sentences that repeat the headword dropped."""
    for paragraph in _dict_paragraphs(root / DEVIL):
        entry = re.match(r"([A-Z][A-Z' -]+), (?:n|v|adj|adv|pp|x|v\.t|v\.i)\.\s+(.*)", paragraph, re.DOTALL)
        if entry:
            yield prose_sentences([entry[2]], banned_word=entry[1].split()[0].lower())


def fortunes(root: Path) -> Iterator[list[str]]:
    """Quotations from the fortune files in FORTUNE_FILES, attributions removed; one-liners of a file grouped."""
    return grouped(_fortunes(root))


def _fortunes(root: Path) -> Iterator[tuple[str, list[str]]]:
    for name in FORTUNE_FILES:
        text = (root / FORTUNES / name).read_bytes().decode("utf-8", errors="replace")
        for fortune in text.split("\n%\n"):
            lines = [line for line in fortune.split("\n") if not _ATTRIBUTION.match(line)]
            yield name, prose_sentences([" ".join(lines)])


def wordnet_examples(root: Path) -> Iterator[list[str]]:
    """WordNet's example sentences (not its definitions): a synset's examples together; lone ones grouped with
    their neighbours in the same lexicographer file (noun.food, verb.motion, ...)."""
    return grouped(_wordnet_examples(root))


def _wordnet_examples(root: Path) -> Iterator[tuple[str, list[str]]]:
    for name in DATA_FILES.values():
        with open(root / WORDNET / name, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                synset = parse_synset(line)
                if synset is not None:
                    yield (
                        f"{name} {line.split()[1]}",
                        prose_sentences(synset[3]),
                    )  # data file, lexicographer file


SOURCES: dict[str, tuple[str, Callable[[Path], Iterator[list[str]]]]] = {
    "gnome-help": ("gnome-user-docs", gnome_help),
    "debian-handbook": ("debian-handbook", debian_handbook),
    "libreoffice-help": ("libreoffice-help-en-us", libreoffice_help),
    "python-docs": ("python3.11-doc", python_docs),
    "gcide-quotations": ("dict-gcide", gcide_quotations),
    "devils-dictionary": ("dict-devil", devils_dictionary),
    "fortunes": ("fortunes", fortunes),
    "wordnet-examples": ("wordnet-base", wordnet_examples),
}  # name: (Debian package, reader)


def build_documents(root: Path, sources: Iterable[str] = SOURCES) -> dict[str, list[list[str]]]:
    """Every source's documents; a sentence seen before (in any source) is dropped, so none repeats."""
    seen: set[str] = set()
    built = {}
    for name in sources:
        documents = []
        for document in SOURCES[name][1](root):
            kept = []
            for sentence in document:
                if sentence not in seen:
                    seen.add(sentence)
                    kept.append(sentence)
            if kept:
                documents.append(kept)
        built[name] = documents
    return built


def corpus_bytes(built: dict[str, list[list[str]]]) -> bytes:
    """The gzipped corpus: one sentence per line, a blank line between documents, no timestamp (same bytes)."""
    text = "\n\n".join("\n".join(doc) for documents in built.values() for doc in documents) + "\n"
    return gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)


def _missing(root: Path, sources: Iterable[str]) -> list[str]:
    paths = {
        "gnome-help": GNOME_HELP,
        "debian-handbook": HANDBOOK,
        "libreoffice-help": LIBREOFFICE_HELP,
        "python-docs": PYTHON_DOCS,
        "gcide-quotations": GCIDE,
        "devils-dictionary": DEVIL,
        "fortunes": FORTUNES,
        "wordnet-examples": WORDNET,
    }
    return [SOURCES[name][0] for name in sources if not (root / paths[name]).exists()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bertviz_lite.text.corpora.everyday", description=__doc__.split("\n")[0]
    )
    parser.add_argument("output", nargs="?", type=Path, default=DEFAULT_OUTPUT, help="the .txt.gz to write")
    parser.add_argument(
        "--root", type=Path, default=Path("/"), help="where the Debian packages are (default: /)"
    )
    args = parser.parse_args(argv)
    missing = _missing(args.root, SOURCES)
    if missing:
        print(
            f"error: not found under {args.root}: {', '.join(missing)} (see this module's docstring)",
            file=sys.stderr,
        )
        return 2
    built = build_documents(args.root)
    args.output.write_bytes(corpus_bytes(built))
    for name, documents in built.items():
        print(f"{name}: {len(documents)} documents, {sum(map(len, documents))} sentences")
    return 0


if __name__ == "__main__":
    sys.exit(main())
