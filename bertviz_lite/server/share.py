"""Shareable links: the view's state as URL query parameters, and untrusted parameters read back safely.

A lecturer prepares
`?a=…&b=…&model=…&layer=…&head=…&filter=…&tab=…&token=…&masked=…&knocked=…&step=…&present=1`
(and `target=…&foil=…`, the two candidate words of "Why this word"); anyone who opens it sees the same pair, model,
layer, head, sentence filter, open tab, picked token, masked tokens, knocked-out heads, walkthrough step, candidate
words and presentation mode. A URL is typed by strangers, so
`parse_query` accepts only models the sidebar offers, cuts long text and keeps numbers in range, and
says in plain sentences what it changed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlencode

from bertviz_lite.figures.tabs import ALL_TABS
from bertviz_lite.inspection.analysis import SENTENCE_FILTERS
from bertviz_lite.limits import MAX_LINK_SENTENCE_CHARS, MAX_WORD_CHARS, clamp

MAX_INDEX = 1023  # layer, head and step numbers are clamped to the model later; this only bounds the parse
QUERY_KEYS = (
    "a",
    "b",
    "model",
    "layer",
    "head",
    "filter",
    "tab",
    "token",
    "masked",
    "knocked",
    "step",
    "present",
    "target",
    "foil",
)
MAX_LIST = 32  # positions or heads in one list parameter
_HEAD_NAME = re.compile(r"L[0-9]{1,3}H[0-9]{1,3}")  # attribution.head_name's "L2H5"


@dataclass(frozen=True)
class SharedState:
    """What a link sets; None means "the link does not say" (keep the current value)."""

    text_a: str | None = None
    text_b: str | None = None
    model: str | None = None
    layer: int | None = None
    head: int | None = None
    sentence_filter: str | None = None  # the sentence filter (query → key): All, A→A, A→B, B→A, B→B
    tab: str | None = None  # the open tab's title (figures/tabs.py)
    token: int | None = (
        None  # the picked token: the neuron view's query, the prediction Beyond attention explains
    )
    masked: tuple[int, ...] | None = None  # positions Predictions masks
    knocked: tuple[str, ...] | None = None  # heads Beyond attention knocks out ("L2H5")
    step: int | None = None
    present: bool | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    target: str | None = None  # the candidate word explained, against the foil ("Why this word")
    foil: str | None = None


def _text(value: str | None, name: str, notes: list[str], limit: int = MAX_LINK_SENTENCE_CHARS) -> str | None:
    if value is None:
        return None
    if len(value) > limit:
        notes.append(f"{name} in the link was {len(value):,} characters long; it is cut to {limit:,}.")
        return value[:limit]
    return value


def _index(value: str | None, name: str, notes: list[str], low: int = 0) -> int | None:
    if value is None:
        return None
    try:
        number = int(value.strip())
    except ValueError:
        notes.append(f"The link's {name} ({value[:20]!r}) is not a whole number, so it is ignored.")
        return None
    clamped = clamp(number, low, MAX_INDEX)
    if clamped != number:
        notes.append(f"The link's {name} {number} is out of range; {clamped} is used.")
    return clamped


def _model(value: str | None, allowed: Sequence[str], default: str, notes: list[str]) -> str | None:
    if value is None:
        return None
    if value in allowed:
        return value
    notes.append(f"The link names a model this server does not offer, so {default} is used instead.")
    return default


def _choice(value: str | None, name: str, allowed: Sequence[str], notes: list[str]) -> str | None:
    if value is None or value in allowed:
        return value
    notes.append(f"The link's {name} ({value[:40]!r}) is not one of {', '.join(allowed)}, so it is ignored.")
    return None


def _positions(value: str | None, notes: list[str]) -> tuple[int, ...] | None:
    if value is None:
        return None
    parts = [part.strip() for part in value.split(",") if part.strip()][:MAX_LIST]
    if not all(part.isdigit() and len(part) <= 4 for part in parts):
        notes.append(
            "The link's masked tokens are not whole numbers separated by commas, so they are ignored."
        )
        return None
    return tuple(int(part) for part in parts)


def _heads(value: str | None, notes: list[str]) -> tuple[str, ...] | None:
    if value is None:
        return None
    parts = [part.strip() for part in value.split(",") if part.strip()][:MAX_LIST]
    if not all(_HEAD_NAME.fullmatch(part) for part in parts):
        notes.append("The link's knocked-out heads are not names like L2H5, so they are ignored.")
        return None
    return tuple(parts)


def parse_query(query: Mapping[str, str], allowed_models: Sequence[str], default_model: str) -> SharedState:
    """Validated state from URL query parameters (a mapping of str to str), with notes on what was changed."""
    notes: list[str] = []
    present = query.get("present")
    return SharedState(
        text_a=_text(query.get("a"), "Sentence A", notes),
        text_b=_text(query.get("b"), "Sentence B", notes),
        model=_model(query.get("model"), allowed_models, default_model, notes),
        layer=_index(query.get("layer"), "layer", notes),
        head=_index(query.get("head"), "head", notes),
        sentence_filter=_choice(query.get("filter"), "sentence filter", SENTENCE_FILTERS, notes),
        tab=_choice(query.get("tab"), "tab", [tab.title for tab in ALL_TABS], notes),
        token=_index(
            query.get("token"), "token", notes, low=-1
        ),  # -1: Beyond attention's next-sentence decision
        masked=_positions(query.get("masked"), notes),
        knocked=_heads(query.get("knocked"), notes),
        step=_index(query.get("step"), "step", notes, low=1),
        present=None if present is None else present.strip().lower() in ("1", "true", "yes", "on"),
        target=_text(query.get("target"), "The target word", notes, MAX_WORD_CHARS),
        foil=_text(query.get("foil"), "The foil word", notes, MAX_WORD_CHARS),
        notes=tuple(notes),
    )


def clamp_index(value: int, count: int, name: str) -> tuple[int, str | None]:
    """value kept within 0..count-1, with a note when it had to move (a link made for a bigger model)."""
    clamped = clamp(value, 0, max(count - 1, 0))
    if clamped == value:
        return value, None
    return (
        clamped,
        f"This model has {count} {name}s (0–{count - 1}); the link's {name} {value} shows as {clamped}.",
    )


def query_for(state: SharedState) -> dict[str, str]:
    """The query parameters of a state: only what it sets, numbers as decimal text, present as "1".

    Sentences are cut to MAX_LINK_SENTENCE_CHARS, as parse_query would cut them: a pasted book must not make a 100 kB URL.
    """
    cut = {
        key: None if text is None else text[:MAX_LINK_SENTENCE_CHARS]
        for key, text in (("a", state.text_a), ("b", state.text_b))
    }
    values = {
        "a": cut["a"],
        "b": cut["b"],
        "model": state.model,
        "layer": state.layer,
        "head": state.head,
        "filter": state.sentence_filter,
        "tab": state.tab,
        "token": state.token,
        "masked": None if state.masked is None else ",".join(map(str, state.masked[:MAX_LIST])),
        "knocked": None if state.knocked is None else ",".join(state.knocked[:MAX_LIST]),
        "step": state.step,
        "present": "1" if state.present else None,
        "target": state.target and state.target[:MAX_WORD_CHARS],
        "foil": state.foil and state.foil[:MAX_WORD_CHARS],
    }
    return {key: str(value) for key, value in values.items() if value is not None}


def share_link(base_url: str, page_path: str, state: SharedState) -> str:
    """The full link to a page with the state in its query, e.g. http://host:8501/attention?a=…&layer=2."""
    path = f"{base_url.rstrip('/')}/{page_path.strip('/')}".rstrip("/")
    query = urlencode(query_for(state))
    return f"{path}?{query}" if query else path
