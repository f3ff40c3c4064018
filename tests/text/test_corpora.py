import gzip
from pathlib import Path

import pytest

from bertviz_lite.text.corpora import english_corpus, everyday
from bertviz_lite.text.corpora.everyday import build_documents, clean_sentence, corpus_bytes, main

GNOME_PAGE = """<page xmlns="http://projectmallard.org/1.0/" id="x">
  <info><desc>Not a paragraph.</desc></info>
  <p>Open the <gui>Activities</gui> overview and start typing a name. Press /usr/bin/true to run it.</p>
  <p>Your files are kept safe when you log out.</p>
</page>"""
HANDBOOK_PAGE = """<html><body><div class="para">The package manager keeps your system up to date.</div>
<pre>apt-get install foo</pre><p>Most people never need to edit this file by hand.</p></body></html>"""
GCIDE = """abandon \\abandon\\ v. t.
   1. To give up wholly.
      [1913 Webster]

            He abandoned himself to his favorite vice.
                                                  --Macaulay.
      [1913 Webster]
"""
DEVIL = """ABDOMEN, n.  The temple of the god Stomach.  Every abdomen is worshipped.  Men bow to it daily.
"""
FORTUNE = """A dream will always triumph over reality, once it is given the chance.
\t\t-- Stanislaw Lem
%
Your files are kept safe when you log out.
%
"""
WORDNET_NOUN = '02084071 05 n 01 dog 0 000 | a member of the genus Canis; "the dog barked all night"\n'


def _write(root: Path, relative: str, text: str, compress: bool = False) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text.encode(), mtime=0) if compress else text.encode())


@pytest.fixture
def packages(tmp_path: Path) -> Path:
    """A tiny stand-in for the extracted Debian packages, one short file per source."""
    _write(tmp_path, f"{everyday.GNOME_HELP}/a.page", GNOME_PAGE)
    _write(tmp_path, f"{everyday.HANDBOOK}/apt.html", HANDBOOK_PAGE)
    _write(
        tmp_path, f"{everyday.LIBREOFFICE_HELP}/swriter/a.html", "<p>Inserts a new table into the text.</p>"
    )
    _write(tmp_path, f"{everyday.PYTHON_DOCS}/tutorial/a.html", "<p>Python is an easy language to learn.</p>")
    _write(tmp_path, everyday.GCIDE, GCIDE, compress=True)
    _write(tmp_path, everyday.DEVIL, DEVIL, compress=True)
    for name in everyday.FORTUNE_FILES:
        _write(tmp_path, f"{everyday.FORTUNES}/{name}", FORTUNE if name == "wisdom" else "")
    for name in ("data.noun", "data.verb", "data.adj", "data.adv"):
        _write(tmp_path, f"{everyday.WORDNET}/{name}", WORDNET_NOUN if name == "data.noun" else "")
    return tmp_path


def test_the_builder_writes_the_same_bytes_every_run(packages: Path, tmp_path: Path):
    first = tmp_path / "a.txt.gz"
    second = tmp_path / "b.txt.gz"
    assert main([str(first), "--root", str(packages)]) == 0
    assert main([str(second), "--root", str(packages)]) == 0
    assert first.read_bytes() == second.read_bytes() == corpus_bytes(build_documents(packages))


def test_the_corpus_keeps_prose_and_drops_definitions_code_attributions_and_repeats(
    packages: Path, tmp_path: Path
):
    main([str(tmp_path / "out.txt.gz"), "--root", str(packages)])
    documents = english_corpus(tmp_path / "out.txt.gz")
    sentences = [s for doc in documents for s in doc]
    assert (
        sentences
        == [
            "Open the Activities overview and start typing a name.",
            "Your files are kept safe when you log out.",
            "The package manager keeps your system up to date.",
            "Most people never need to edit this file by hand.",
            "Inserts a new table into the text.",
            "Python is an easy language to learn.",
            "He abandoned himself to his favorite vice.",
            "The temple of the god Stomach.",
            "Men bow to it daily.",  # "Every abdomen ..." repeats the headword
            "A dream will always triumph over reality, once it is given the chance.",  # the fortune repeating gnome's: gone
            "The dog barked all night.",  # WordNet's example, not its definition
        ]
    )


def test_clean_sentence_accepts_prose_only():
    assert clean_sentence("  The  cat sat on the mat . . . again.") == "The cat sat on the mat... again."
    assert clean_sentence("Run apt-get install foo with --yes now.") is None  # an option
    assert clean_sentence("the cat sat on the mat.") is None  # not capitalised
    assert clean_sentence("Too short.") is None
    assert clean_sentence("The cat sat on the mat") is None  # no end


def test_a_missing_package_is_named(tmp_path: Path, capsys):
    assert main([str(tmp_path / "out.txt.gz"), "--root", str(tmp_path)]) == 2
    assert "gnome-user-docs" in capsys.readouterr().err


def test_grouped_joins_lone_sentences_of_one_topic_and_keeps_longer_documents_whole():
    documents = [
        ("a", ["A1."]),
        ("a", ["A2."]),
        ("a", []),
        ("a", ["A3."]),
        ("b", ["B1."]),
        ("b", ["B2.", "B3."]),
        ("b", ["B4."]),
        ("b", ["B5."]),
        ("b", ["B6."]),
    ]
    assert list(everyday.grouped(documents, size=2)) == [
        ["A1.", "A2."],
        ["A3."],
        ["B1."],
        ["B2.", "B3."],
        ["B4.", "B5."],
        ["B6."],
    ]
