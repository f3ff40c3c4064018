"""The code's shape: rooms (sub-packages) whose imports only run downward, ARCHITECTURE.md naming every module
and page by its path, no package module past 400 lines, thin pages, and no Streamlit in the package."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "bertviz_lite"
# Counted as `ruff format` lays the code out (one argument a line where a call does not fit), so that the formatter
# never has to be undone to fit the cap; ARCHITECTURE.md, "Module size", says why 650.
MAX_MODULE_LINES = 650
MAX_COMMON_LINES = 900  # pages_app/common/, formatted likewise: Streamlit glue only
# The declared order, bottom first: a module imports from its own room or the rooms before it, never after.
LAYERS = (
    "limits",
    "atomic",
    "model",
    "text",
    "loading",
    "inspection",
    "figures",
    "export",
    "check",
    "training",
    "server",
    "runs",
    "train",
    "serve",
)
FACADE = "bertviz_lite"  # the top-level __init__ names the public entry points and may import any room
MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py")
PAGES = sorted(p for p in (REPO / "pages_app").rglob("*.py") if p.name != "__init__.py")


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, package: Path = PACKAGE) -> Iterator[tuple[str, int]]:
    """(module, line) for every import of the package in the file: top level, lazy or TYPE_CHECKING alike."""
    root = package.name
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((a.name, node.lineno) for a in node.names if a.name.split(".")[0] == root)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == root:
            for (
                alias
            ) in node.names:  # `from pkg.room import module` imports the module, not the room's __init__
                candidate = f"{node.module}.{alias.name}"
                yield (candidate if _file_of(candidate, package).exists() else node.module), node.lineno


def _file_of(module: str, package: Path) -> Path:
    relative = Path(*module.split(".")[1:])
    return (
        package / relative / "__init__.py"
        if (package / relative).is_dir()
        else (package / relative).with_suffix(".py")
    )


def layer_of(module: str) -> int | None:
    """Index of the module's room in LAYERS; None for the facade."""
    parts = module.split(".")
    return None if len(parts) == 1 else LAYERS.index(parts[1])


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    return {
        module_name(p, package): {m for m, _ in imported_modules(p, package)} for p in package.rglob("*.py")
    }


def upward_imports(package: Path = PACKAGE) -> list[str]:
    """Every import of a room above the importer's (or of the facade from inside a room)."""
    found = []
    for path in sorted(package.rglob("*.py")):
        importer = module_name(path, package)
        if layer_of(importer) is None:
            continue
        for target, line in imported_modules(path, package):
            if layer_of(target) is None or layer_of(target) > layer_of(importer):
                found.append(f"{path.relative_to(package.parent)}:{line} imports {target}")
    return found


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected set of two or more modules (or a module importing itself), by Tarjan's algorithm."""
    index = {}
    low = {}
    stack = []
    on_stack = set()
    cycles = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            members = []
            while (member := stack.pop()) != node:
                on_stack.discard(member)
                members.append(member)
            on_stack.discard(node)
            if members or node in graph.get(node, ()):
                cycles.append(sorted([node, *members]))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_every_module_sits_in_a_declared_room():
    rooms = {module_name(p).split(".")[1] for p in MODULES}
    assert rooms <= set(LAYERS), f"rooms not in LAYERS: {sorted(rooms - set(LAYERS))}"


def test_imports_only_run_downward():
    assert upward_imports() == []


def test_no_import_circle():
    assert import_cycles(import_graph()) == []


def _write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder / "bertviz_lite"


def test_the_layering_check_catches_an_upward_import_and_a_circle(tmp_path):
    package = _write(
        tmp_path,
        {
            "bertviz_lite/__init__.py": "",
            "bertviz_lite/model/__init__.py": "",
            "bertviz_lite/model/modeling.py": "from bertviz_lite.text import tokenization\n",
            "bertviz_lite/text/__init__.py": "",
            "bertviz_lite/text/tokenization.py": "def f():\n    from bertviz_lite.text import masking\n",
            "bertviz_lite/text/masking.py": "from bertviz_lite.text.tokenization import f\n",
        },
    )
    assert upward_imports(package) == [
        "bertviz_lite/model/modeling.py:1 imports bertviz_lite.text.tokenization"
    ]
    assert import_cycles(import_graph(package)) == [
        ["bertviz_lite.text.masking", "bertviz_lite.text.tokenization"]
    ]


def test_the_house_has_rooms_and_few_loose_modules():
    loose = sorted(p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    rooms = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
    assert len(loose) <= 8, loose
    assert len(rooms) >= 5, rooms


def test_architecture_draws_the_declared_order():
    text = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert " → ".join(LAYERS[: LAYERS.index("runs") + 1]) in text  # the rooms; the loose CLI shims sit on top


@pytest.mark.parametrize("path", [*MODULES, *PAGES], ids=lambda p: str(p.relative_to(REPO)))
def test_architecture_names_every_module_and_page_by_its_path(path):
    text = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    base = PACKAGE if path.is_relative_to(PACKAGE) else REPO
    assert f"`{path.relative_to(base).as_posix()}`" in text, (
        f"ARCHITECTURE.md does not name {path.relative_to(REPO)}"
    )


def test_no_package_module_is_over_the_line_cap():
    long = {
        str(p.relative_to(REPO)): n
        for p in MODULES
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


def test_pages_common_stays_small():
    lines = sum(len(p.read_text().splitlines()) for p in (REPO / "pages_app" / "common").glob("*.py"))
    assert lines < MAX_COMMON_LINES, (
        f"pages_app/common/ has {lines} lines: domain logic belongs in the package"
    )


def test_no_pages_folder_sits_beside_app_py():
    """A pages/ folder (even one left with only __pycache__ after pulling the rename to pages_app/) puts Streamlit in
    its legacy pages-folder mode: a fresh server's first deep link then meets "Page not found"."""
    assert not (REPO / "pages").exists(), (
        "remove the folder pages/ beside app.py (the pages live in pages_app/)"
    )


def test_the_package_never_imports_streamlit_or_pages():
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else ([node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            )
            assert not any(name.split(".")[0] in ("streamlit", "pages_app") for name in names), path


# ---------------------------------------------------------------- the hallway: no hidden doors

# bertviz_lite/check/ builds and calls a learner's own classes, whose parameters it cannot know in advance: reading
# their signatures is what it is for, and no call of ours goes through it.
READS_FOREIGN_CODE = PACKAGE / "check"
HALLWAY = [
    *sorted(p for p in PACKAGE.rglob("*.py") if READS_FOREIGN_CODE not in p.parents),
    *PAGES,
    REPO / "app.py",
]


def _module_names(tree: ast.Module) -> set[str]:
    """The names a file binds to modules (`import numpy as np`, `from bertviz_lite import figures`)."""
    import importlib.util

    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                try:
                    found = importlib.util.find_spec(f"{node.module}.{alias.name}") is not None
                except (ImportError, ValueError):
                    found = False
                if found:
                    names.add(alias.asname or alias.name)
    return names


def hidden_doors(path: Path) -> list[str]:
    """Where a call or a name is resolved by reflection: a __getattr__, globals(), a function's parameters read to
    fill them by name (inspect.signature), getattr on a module (a function looked up by its name as a string)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules = _module_names(tree)
    found = []
    for node in ast.walk(tree):
        where = f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path.name}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.FunctionDef) and node.name in ("__getattr__", "__getattribute__"):
            found.append(f"{where} defines {node.name}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
            args = node.args
            if name in ("globals", "locals"):
                found.append(f"{where} calls {name}()")
            elif name == "getattr" and args and isinstance(args[0], ast.Name) and args[0].id in modules:
                found.append(f"{where} looks up a name in module {args[0].id} by string")
        if isinstance(node, ast.Attribute) and (
            node.attr in ("getfullargspec", "co_varnames")
            or (node.attr == "signature" and getattr(node.value, "id", None) == "inspect")
        ):
            found.append(f"{where} reads a function's parameters ({node.attr})")
        if (
            isinstance(node, ast.ImportFrom)
            and node.module == "inspect"
            and any(alias.name in ("signature", "getfullargspec") for alias in node.names)
        ):
            found.append(f"{where} imports inspect's signature reading")
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "update"
            and isinstance(node.value, ast.Call)
            and getattr(node.value.func, "id", None) == "globals"
        ):
            found.append(f"{where} fills globals()")
    return found


def test_the_hallway_has_no_hidden_doors():
    """From the sidebar's sentence to a figure, every call can be followed by go-to-definition (issue 31)."""
    assert [door for path in HALLWAY for door in hidden_doors(path)] == []


def test_the_hidden_door_check_finds_each_kind(tmp_path):
    sample = tmp_path / "hidden_doors_sample.py"
    sample.write_text(
        "import inspect\nfrom bertviz_lite import figures\n\n\nclass Proxy:\n    def __getattr__(self, name):\n"
        "        return name\n\n\nglobals().update({})\nbuilder = getattr(figures, 'head_view')\n"
        "wanted = inspect.signature(print).parameters\n",
        encoding="utf-8",
    )
    doors = hidden_doors(sample)
    assert sorted(door.split(" ", 1)[1] for door in doors) == [
        "calls globals()",
        "defines __getattr__",
        "fills globals()",
        "looks up a name in module figures by string",
        "reads a function's parameters (signature)",
    ]


def test_no_page_keeps_a_trace_in_its_globals():
    """Streamlit keeps a page's globals after its run (for the widget callbacks): a page reads its trace where it uses
    it, so that only the shared cache decides how long a trace lives."""
    kept = []
    for path in PAGES:
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign | ast.AnnAssign) and any(
                isinstance(call, ast.Call) and getattr(call.func, "id", None) == "get_trace"
                for call in ast.walk(node.value)
            ):
                kept.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert kept == []


def test_page_files_have_numbers_of_their_own():
    """pages_app/<section>/N_Name.py: one number per page across the sections, in the navigation's order."""
    numbers = [int(path.name.split("_", 1)[0]) for path in PAGES if path.name[0].isdigit()]
    assert len(numbers) == len(set(numbers)) and sorted(numbers) == list(range(len(numbers)))
