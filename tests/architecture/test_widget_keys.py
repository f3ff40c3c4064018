"""A widget key that a page's link or another module names is declared once, in its PageSpec (pages_app/common/
_pages.py); the pages read it from there (ATTENTION.tab_key), so a renamed key cannot leave a stale copy behind."""

from __future__ import annotations

import ast
from pathlib import Path

from pages_app.common._pages import PAGES

REPO = Path(__file__).resolve().parents[2]
KEY_FIELDS = ("tab_key", "token_key", "masked_key", "knocked_key", "sentence_filter_key", "step_key")
KEY_FIELDS += ("target_key", "foil_key")


def declared_keys() -> set[str]:
    keys = {key for page in PAGES for key in page.index_keys}
    return keys | {getattr(page, field) for page in PAGES for field in KEY_FIELDS if getattr(page, field)}


def test_every_declared_key_is_spelled_only_in_the_page_specs():
    keys = declared_keys()
    spelled = []
    for path in [REPO / "app.py", *sorted((REPO / "pages_app").rglob("*.py"))]:
        if path.name == "_pages.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in keys:
                spelled.append(f"{path.relative_to(REPO)}:{node.lineno} {node.value!r}")
    assert spelled == []


def test_the_specs_declare_the_keys_the_link_sets():
    assert {
        "attn_layer",
        "attn_head",
        "beyond_layer",
        "beyond_head",
        "walk_step",
        "contrast_target",
    } <= declared_keys()
