"""The code beside a view (its "The code" panel): the source of the functions it declares, read from the installed
package at run time, with the shapes the current pair gave beside the lines that made them (`# (1, 12, 17, 32)`).

Views and walkthrough steps declare their functions themselves (`ViewTab(code=…)` in figures/tabs.py, `Step(code=…)`
in inspection/walkthrough.py); `code_listing(code, shapes)` reads their source with `inspect` (never a copy that
can go stale) and places the shapes that live_shapes.pair_shapes recorded.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bertviz_lite.inspection.live_shapes import PACKAGE, RETURN, LiveShapes
from bertviz_lite.model.config import BertConfig

NOTE = "  # "  # what joins a line of source and the shapes it made


@dataclass(frozen=True)
class SourceBlock:
    """One declared function: its source lines as the installed file has them, and the shapes made on each line."""

    name: str  # the qualified name: BertSelfAttention.forward_with_attention
    path: str  # the file, from the package's parent folder: bertviz_lite/model/modeling.py
    first_line: int  # the line of the file where the source starts (its first decorator or def)
    lines: tuple[str, ...]  # inspect.getsourcelines' lines, newlines kept
    notes: tuple[str, ...]  # per line: the shapes made there, '' where none

    @property
    def source(self) -> str:
        """The function's source, exactly inspect.getsource's."""
        return "".join(self.lines)

    @property
    def text(self) -> str:
        """The source with each line's shapes as a comment after it."""
        return "\n".join(_annotated(line, note) for line, note in zip(self.lines, self.notes, strict=True))

    @property
    def has_shapes(self) -> bool:
        return any(self.notes)

    @property
    def where(self) -> str:
        """Where the source lives: `bertviz_lite/model/modeling.py, line 58: BertSelfAttention.forward_with_attention`."""
        return f"{self.path}, line {self.first_line}: {self.name}"


def _annotated(line: str, note: str) -> str:
    """One line of source without its newline, and its shapes after NOTE when it made any."""
    line = line.rstrip("\n")
    return f"{line}{NOTE}{note}" if note else line


def code_listing(
    code: Sequence[Callable[..., Any]], shapes: LiveShapes | None = None
) -> tuple[SourceBlock, ...]:
    """The declared functions' source blocks, in order, each line with the shapes `shapes` recorded there."""
    return tuple(source_block(function, shapes or LiveShapes()) for function in code)


def source_block(function: Callable[..., Any], shapes: LiveShapes) -> SourceBlock:
    """One function's source (inspect.getsourcelines) with a note on the last line of each statement that made shapes."""
    function = inspect.unwrap(function)
    lines, first = inspect.getsourcelines(function)
    filename = function.__code__.co_filename
    ends, several = statement_ends("".join(lines))
    made: dict[int, list[tuple[str, str]]] = {}
    for offset, end in enumerate(ends):
        found = made.setdefault(end, [])
        found.extend(entry for entry in shapes.at(filename, first + offset) if entry not in found)
    notes = tuple(note_text(made.get(offset, []), offset in several) for offset in range(len(lines)))
    return SourceBlock(function.__qualname__, _package_path(filename), first, tuple(lines), notes)


def statement_ends(source: str) -> tuple[list[int], set[int]]:
    """For each line of a function's source (0-based), the line that ends its statement, where its note goes; and
    the ends of the statements that bind more than one name (their notes name what they hold).

    A compound statement (for, if, with) takes its note on its first line, which holds what it binds; a line that
    is no statement's (a def line, a blank) keeps its own number.
    """
    wrapped = source[:1].isspace()  # a method: indented, so it is parsed inside a class
    tree = ast.parse("class _:\n" + source if wrapped else source)
    shift = 2 if wrapped else 1  # ast counts lines from 1, and the wrapper adds one
    ends = list(range(len(source.splitlines())))
    several = set()
    statements = [node for node in ast.walk(tree) if isinstance(node, ast.stmt) and not _is_definition(node)]
    for node in sorted(statements, key=lambda n: n.end_lineno - n.lineno, reverse=True):  # inner ones last
        end = (node.lineno if hasattr(node, "body") else node.end_lineno) - shift
        ends[node.lineno - shift : node.end_lineno - shift + 1] = [end] * (node.end_lineno - node.lineno + 1)
        if len(_bound_names(node)) > 1:
            several.add(end)
    return ends, several


def _is_definition(node: ast.stmt) -> bool:
    return isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)


def _bound_names(node: ast.stmt) -> set[str]:
    """The names a statement binds (a compound statement: in its header only)."""
    if isinstance(node, ast.For | ast.AsyncFor):
        targets = [node.target]
    elif isinstance(node, ast.With | ast.AsyncWith):
        targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
    else:
        targets = [] if hasattr(node, "body") else [node]
    names = (n for target in targets for n in ast.walk(target) if isinstance(n, ast.Name))
    return {n.id for n in names if isinstance(n.ctx, ast.Store)}


def note_text(made: list[tuple[str, str]], named: bool = False) -> str:
    """The shapes one statement made: `(1, 12, 17, 32)` when it binds or returns one thing, `q, k, v: (1, 12, 17, 32)`
    for names with one shape, `a: (1, 17); b: (1, 2)` otherwise; a name that took several shapes (in a loop) has them
    joined by |. named: the statement binds several names, so even one made is named."""
    by_name: dict[str, list[str]] = {}
    for name, shape in made:
        by_name.setdefault(name, []).append(shape)
    if len(by_name) == 1 and (not named or RETURN in by_name):
        return " | ".join(next(iter(by_name.values())))
    groups: dict[str, list[str]] = {}
    for name, taken in by_name.items():
        groups.setdefault(" | ".join(taken), []).append(name)
    return "; ".join(f"{', '.join(names)}: {shape}" for shape, names in groups.items())


def _package_path(filename: str) -> str:
    """bertviz_lite/model/modeling.py: the file from the package's parent folder."""
    root = Path(PACKAGE).parent
    return (
        Path(filename).relative_to(root).as_posix() if filename.startswith(PACKAGE) else Path(filename).name
    )


def shape_legend(config: BertConfig, num_tokens: int) -> str:
    """What the numbers in the shapes are, for this model and pair."""
    return (
        f"Shapes for the sidebar's sentence pair: batch B = 1, tokens T = {num_tokens}, hidden size H = {config.hidden_size}, "
        f"heads nh = {config.num_attention_heads} of size hd = {config.head_dim}, feed-forward "
        f"{config.intermediate_size}, vocabulary V = {config.vocab_size}."
    )
