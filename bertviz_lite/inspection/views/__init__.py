"""The data of every explore view: one data function per view, its figure builder is in bertviz_lite.figures.

A data function takes plain arrays and labels (parameters named like PairTrace fields, such as
`attentions` or `tokens`, are filled from a trace by explore.from_trace) and returns the arrays and
labels its figure draws, usually as a small dataclass with a to_frame() for the CSV download.

`views.attention_map` and the rest: every name a module here lists in its `__all__` is offered here too,
so a new view module needs no edit in this file.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def public_names(package: str, path: list[str]) -> dict[str, object]:
    """Every name the package's modules list in their `__all__`, by name; two modules may not offer one name."""
    found: dict[str, object] = {}
    owners: dict[str, str] = {}
    for info in pkgutil.iter_modules(path):
        module: ModuleType = importlib.import_module(f"{package}.{info.name}")
        for name in getattr(module, "__all__", ()):
            if name in owners or name == info.name:
                raise ImportError(f"{package}: {name!r} is offered by {owners.get(name, info.name)} and {info.name}")
            found[name], owners[name] = getattr(module, name), info.name
    return found


globals().update(public_names(__name__, __path__))
__all__ = sorted(public_names(__name__, __path__))
