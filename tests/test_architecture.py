"""The code's shape: ARCHITECTURE.md names every module and page, no package module passes 400 lines, and
the package never imports Streamlit."""

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "bertviz_lite"
MAX_MODULE_LINES = 400
MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py")
PAGES = sorted((REPO / "pages").rglob("*.py"))


def _named(path: Path, text: str) -> bool:
    """Whether ARCHITECTURE.md names the file: `name.py`, its path, or the name in a list like `views/tokens.py`."""
    return re.search(rf"(?<![\w.]){re.escape(path.stem)}(\.py)?(?![\w])", text) is not None


@pytest.mark.parametrize("path", [*MODULES, *(p for p in PAGES if p.name != "__init__.py")], ids=lambda p: p.name)
def test_architecture_names_every_module_and_page(path):
    text = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert _named(path, text), f"ARCHITECTURE.md does not mention {path.relative_to(REPO)}"


def test_no_package_module_is_over_400_lines():
    long = {str(p.relative_to(REPO)): n for p in MODULES if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert long == {}


def test_the_package_never_imports_streamlit():
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(name.split(".")[0] == "streamlit" for name in names), path
