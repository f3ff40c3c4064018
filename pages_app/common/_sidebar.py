"""The sidebar every page shares: model picker, sentence pair and max length (rendered by app.py).

Its widgets are drawn on every run, before the page, so their keys (`present`, `model_picker`, `model_path`,
`sentence_a`, `sentence_b`, `max_length`) keep their values when the user switches pages.
"""

from __future__ import annotations

from typing import NamedTuple

import streamlit as st

from bertviz_lite.limits import MAX_PATH_CHARS
from bertviz_lite.loading.pretrained import BUILT_IN, DEFAULT_MODEL, describe, model_sources, source_label
from bertviz_lite.server import access
from pages_app.build._learner_source import is_learner_entry, learner_sources, learner_version
from pages_app.common._state import keep_choice
from pages_app.common._visitor import remember_visitor

OTHER_FOLDER = "Another folder…"
MODEL_HELP = " ".join(f"{name}: {describe(name)}" for name in BUILT_IN) + (
    " Then your checkpoints, BERT models in the local Hugging Face cache, or any BERT folder."
)
PAGE_INPUTS = "_page_inputs"  # the Inputs app.py handed to this run's page (hand_over)
DEFAULTS = {
    "present": False,
    "model_picker": DEFAULT_MODEL,
    "model_path": "",
    "sentence_a": "The cat sat on the mat because it was tired.",
    "sentence_b": "It fell asleep in the warm sun.",
    "max_length": 128,
}


class Inputs(NamedTuple):
    """What the pages compute from; hashable, so it keys the caches."""

    source: str
    text_a: str
    text_b: str
    max_length: int
    version: str  # explore.source_version: a rewritten checkpoint is a new cache entry


def model_options() -> list[str]:
    """The built-in models, every checkpoint, BERT folders in the Hugging Face cache, then a free path."""
    return [*model_sources(), *learner_sources(), OTHER_FOLDER]


def model_label(option: str) -> str:
    """How an option reads in the picker."""
    return option if option == OTHER_FOLDER or is_learner_entry(option) else source_label(option)


def _held(key: str):
    """The session's value for a sidebar widget, as its default: a browser that draws the widget late (its code still
    loading) starts it from the default and sends that back, so a built-in default would undo a link's ?present=1."""
    return st.session_state.get(key, DEFAULTS[key])


def render_sidebar() -> Inputs:
    """Draw the shared sidebar and return the current inputs."""
    options = model_options()
    keep_choice("model_picker", options, DEFAULT_MODEL)  # a deleted checkpoint falls back to the default
    model = _held("model_picker")
    with st.sidebar:
        st.toggle(
            "Presentation mode",
            _held("present"),
            key="present",
            help="Large dark text in figures, a compact "
            "page and the sidebar folded away: for a projector. Also ?present=1 in the URL.",
        )
        st.selectbox(
            "Model",
            options,
            index=options.index(model) if model in options else 0,
            key="model_picker",
            format_func=model_label,
            help=MODEL_HELP,
        )
        if description := describe(st.session_state["model_picker"]):
            st.caption(description)
        if st.session_state["model_picker"] == OTHER_FOLDER:
            st.text_input(
                "Model folder",
                _held("model_path"),
                key="model_path",
                placeholder="/path/to/a/bert/folder",
                max_chars=MAX_PATH_CHARS,
                help="A folder with config.json, vocab.txt and model.safetensors (or pytorch_model.bin).",
            )
        # No max_chars: a box drops a paste longer than it without a word; explore.encode refuses one with a sentence.
        st.text_input("Sentence A", _held("sentence_a"), key="sentence_a")
        st.text_input("Sentence B (optional)", _held("sentence_b"), key="sentence_b")
        st.number_input(
            "Max length (tokens)",
            8,
            512,
            _held("max_length"),
            step=8,
            key="max_length",
            help="[CLS] A [SEP] B [SEP] is cut to this many tokens; the longer sentence loses tokens first.",
        )
        remember_visitor()
    return _read_inputs()


def hand_over(inputs: Inputs) -> None:
    """app.py gives the page it runs next the Inputs render_sidebar() returned (load_context starts from them)."""
    st.session_state[PAGE_INPUTS] = inputs


def current_inputs() -> Inputs:
    """The Inputs app.py handed over on this run (those of the sidebar's widgets before a first hand-over)."""
    return st.session_state.get(PAGE_INPUTS) or _read_inputs()


def _read_inputs() -> Inputs:
    """The inputs as the sidebar's widgets hold them."""
    state = {**DEFAULTS, **st.session_state.to_dict()}
    source = state["model_path"].strip() if state["model_picker"] == OTHER_FOLDER else state["model_picker"]
    return Inputs(
        source,
        state["sentence_a"],
        state["sentence_b"],
        int(state["max_length"]),
        learner_version(source) or access.fenced_version(source),
    )
