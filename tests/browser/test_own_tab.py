"""The `page` fixture hands one tab to one test after another (tests/browser/conftest.py): a test that adds listeners,
routes or scripts to its page is marked `own_tab`, or they would outlive it and act in the next test."""

from __future__ import annotations

import ast
from pathlib import Path

OUTLIVE_THE_TEST = {
    "on",
    "once",
    "route",
    "route_from_har",
    "expose_function",
    "expose_binding",
    "add_init_script",
}


def _unmarked_listeners(source: str) -> list[str]:
    """Names of the test functions taking `page` that call page.on/route/… without the own_tab mark."""
    found = []
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test_")):
            continue
        if "page" not in [arg.arg for arg in node.args.args]:
            continue
        marked = any("own_tab" in ast.unparse(decorator) for decorator in node.decorator_list)
        calls = {
            call.func.attr
            for call in ast.walk(node)
            if isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and isinstance(call.func.value, ast.Name)
            and call.func.value.id == "page"
        }
        if calls & OUTLIVE_THE_TEST and not marked:
            found.append(node.name)
    return found


def test_a_test_that_listens_on_or_routes_its_page_has_a_tab_of_its_own():
    unmarked = {
        path.name: names
        for path in sorted(Path(__file__).parent.glob("test_*.py"))
        if (names := _unmarked_listeners(path.read_text(encoding="utf-8")))
    }
    assert not unmarked, f"mark these @pytest.mark.own_tab: {unmarked}"


def test_the_check_finds_a_route_without_the_mark_and_passes_it_with_the_mark():
    body = "(streamlit_url, page):\n    page.route('**/x.js', lambda route: None)\n"
    assert _unmarked_listeners("def test_x" + body) == ["test_x"]
    assert _unmarked_listeners("@pytest.mark.own_tab\ndef test_x" + body) == []
