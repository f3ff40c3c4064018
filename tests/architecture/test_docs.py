"""README is a front door (under 10,000 characters: what it is, a picture, the two commands, a tour, where to go
next); everything else lives in docs/ by reader, each file saying whom it is for, and every relative link resolves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))
MARKDOWN = [README, *DOCS, REPO / "ARCHITECTURE.md"]
MAX_README_CHARS = 10_000
# The commands a newcomer copies; .ci/run runs the second one as it is.
COMMANDS = (
    "pip install -r requirements.txt && streamlit run app.py",
    "pip install -r requirements-dev.txt && pytest",
)
# Where each section that left README lives now (issue 31, item 6).
MOVED = {
    "server.md": (
        "One server for a lecture hall",
        "Threat model",
        "Known limits",
        "Several app processes behind a load balancer",
        "A live class on the server",
        "Across machines",
    ),
    "lecturers.md": ("Lecture mode", "Live class"),
    "learners.md": (
        "The models",
        "What each page shows",
        "Head view with many heads",
        "Beyond attention",
        "Meaning in context",
        "Why this word",
        "The package",
        "Build your own BERT",
    ),
    "training.md": ("Train from the terminal", "GPU", "The training replay"),
    "benchmarks.md": ("Benchmarks", "The test suite"),
}
FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK_TARGET = re.compile(r"\]\(([^)\s]+)\)")  # the end of [text](target) and ![alt](target)


def prose(path: Path) -> str:
    """The file without fenced code blocks and code spans, where a `](` is not a link."""
    return CODE_SPAN.sub("", FENCE.sub("", path.read_text(encoding="utf-8")))


def headings(path: Path) -> list[str]:
    return [line.lstrip("#").strip() for line in prose(path).splitlines() if line.startswith("#")]


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def relative_links(path: Path) -> list[str]:
    return [t for t in LINK_TARGET.findall(prose(path)) if not re.match(r"[a-z]+:", t)]


def test_readme_is_short_and_shows_the_two_commands():
    text = README.read_text(encoding="utf-8")
    assert len(text) < MAX_README_CHARS, f"README.md has {len(text)} characters: move a section to docs/"
    for command in COMMANDS:
        assert command in text
    assert "requirements-minilm.txt" in text  # the optional MiniLM package is said where the install is


def test_readme_shows_the_walkthrough_screenshot():
    png = REPO / "docs" / "walkthrough.png"
    assert "](docs/walkthrough.png)" in README.read_text(encoding="utf-8")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size < 200_000


def test_readme_links_every_docs_file_and_the_architecture():
    targets = {t.split("#")[0] for t in relative_links(README)}
    wanted = {f"docs/{p.name}" for p in DOCS} | {"ARCHITECTURE.md"}
    assert wanted - targets == set()
    assert {name for name in MOVED} <= {p.name for p in DOCS}


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_each_docs_file_says_whom_it_is_for_and_links_back(path):
    first = path.read_text(encoding="utf-8").split("\n\n")[1]  # the paragraph under the title
    assert first.startswith("For ") and "](../README.md)" in first, first


@pytest.mark.parametrize("name", MOVED)
def test_every_section_that_left_readme_is_in_its_docs_file(name):
    found = headings(REPO / "docs" / name)
    assert [section for section in MOVED[name] if not any(h.startswith(section) for h in found)] == []


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_relative_link_points_to_a_file_and_heading_that_exist(path):
    broken = []
    for target in relative_links(path):
        file, _, fragment = target.partition("#")
        resolved = (path.parent / file).resolve() if file else path
        if not resolved.exists():
            broken.append(target)
        elif fragment and resolved.suffix == ".md" and fragment not in map(anchor, headings(resolved)):
            broken.append(target)
    assert broken == []


def test_every_setting_the_package_reads_is_in_the_operators_guide():
    code = "".join(
        p.read_text(encoding="utf-8") for p in [*(REPO / "bertviz_lite").rglob("*.py"), REPO / "app.py"]
    )
    settings = set(re.findall(r"BERTVIZ_LITE_[A-Z_]*[A-Z]", code))
    server = (REPO / "docs" / "server.md").read_text(encoding="utf-8")
    assert len(settings) > 10
    assert sorted(s for s in settings if s not in server) == []


def test_every_bench_script_is_named_in_the_benchmarks_guide():
    scripts = [
        p.name
        for p in (REPO / "bench").iterdir()
        if p.suffix in (".py", ".sh") and not p.name.startswith("_")
    ]
    text = (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert sorted(name for name in scripts if f"`{name}`" not in text) == []
