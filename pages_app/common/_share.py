"""The view's state in the URL: a prepared link opens the same view; the URL follows the user; "Copy link".

On a session's first run `apply_link` reads st.query_params through share.parse_query (only models the
sidebar offers, text cut, numbers bounded) into the widgets' session state; `load_context` later clamps
layer and head to the model (`clamp_linked_indices`). On every run `sync_link` writes the current state
back to the query, touching only share.QUERY_KEYS (the Train page's `run` stays).
"""

from __future__ import annotations

import streamlit as st

from bertviz_lite.inspection import walkthrough
from bertviz_lite.loading.pretrained import DEFAULT_MODEL, model_sources
from bertviz_lite.server import share
from bertviz_lite.text.display import plain_markdown
from pages_app.common._pages import HEAD_KEY, LAYER_KEY, PAGES, WALKTHROUGH, WHY_THIS_WORD, by_url_path
from pages_app.common._sidebar import OTHER_FOLDER

APPLIED = "_link_applied"
NOTES = "_link_notes"
PENDING = "_link_indices"
# The picks a link set that a page would otherwise reset for a new input (layer and head are checked against the
# model once it is loaded).
FROM_LINK = "_link_picks"
PRESENT = "present"
ALL_HEADS = -1  # the Beyond attention page's "all heads", which a link leaves out
LINK_BOX_KEY = "copy_link"  # the sidebar's "Copy link to this view" box: open (True) or not


def page_fields(page_path: str) -> tuple[str, ...]:
    """The URL fields this page's link carries (_pages.PAGES), by its url_path ("" is the default page)."""
    page = by_url_path(page_path)
    return page.link_fields if page else ()


def index_keys(page_path: str) -> tuple[str, str]:
    """The widgets that hold this page's layer and head (a link sets every page's pair)."""
    page = by_url_path(page_path)
    return page.index_keys if page else (LAYER_KEY, HEAD_KEY)


def _set_state(linked: share.SharedState) -> None:
    state = st.session_state
    for key, value in (
        ("sentence_a", linked.text_a),
        ("sentence_b", linked.text_b),
        ("model_picker", linked.model),
        (PRESENT, linked.present),
        (WHY_THIS_WORD.target_key, linked.target),
        (WHY_THIS_WORD.foil_key, linked.foil),
    ):
        if value is not None:
            state[key] = value
    if linked.step is not None:
        state[WALKTHROUGH.step_key] = walkthrough.clamp_step(linked.step)
    for page in PAGES:  # a tab and a filter go to every page that has them (the link does not say which page)
        if page.tab_key and linked.tab in {tab.title for tab in page.tabs}:
            state[page.tab_key] = linked.tab
        if page.sentence_filter_key and linked.sentence_filter is not None:
            state[page.sentence_filter_key] = linked.sentence_filter
        for key, value in (
            (page.token_key, linked.token),
            (page.knocked_key, linked.knocked),
            (page.masked_key, linked.masked),
        ):
            if key and value is not None:  # checked against the input by the page (keep_choice, keep_choices)
                state[key] = list(value) if isinstance(value, tuple) else value
                state[FROM_LINK] = {*state.get(FROM_LINK, set()), key}
    pairs = {page.index_keys for page in PAGES}
    indices = {
        key: value
        for layer_key, head_key in pairs
        for key, value in ((layer_key, linked.layer), (head_key, linked.head))
        if value is not None
    }
    state.update(indices)
    state[PENDING] = indices


def apply_link() -> None:
    """On a session's first run, the URL's state goes into session state (once; later runs keep the user's)."""
    if st.session_state.get(APPLIED):
        return
    st.session_state[APPLIED] = True
    query = {key: st.query_params[key] for key in share.QUERY_KEYS if key in st.query_params}
    if not query:
        return
    linked = share.parse_query(
        query, model_sources(), DEFAULT_MODEL
    )  # what the picker offers, no typed folder
    _set_state(linked)
    step_note = linked.step is not None and walkthrough.clamp_step(linked.step) != linked.step
    st.session_state[NOTES] = [
        *linked.notes,
        *(
            [
                f"The walkthrough has {len(walkthrough.STEPS)} steps; the link's step {linked.step} is not one of them."
            ]
            if step_note
            else []
        ),
    ]


def show_link_notes() -> None:
    """What a link asked for that could not be honoured, once, as warnings."""
    for note in st.session_state.pop(NOTES, []):
        st.warning(plain_markdown(note))  # a note quotes what the link said


def clamp_linked_indices(num_layers: int, num_heads: int) -> None:
    """Layer and head from a link pulled into this model's range, with a warning when they moved."""
    pending = st.session_state.pop(PENDING, {})
    notes = []
    for key, value in pending.items():
        name, count = ("layer", num_layers) if key.endswith("layer") else ("head", num_heads)
        st.session_state[key], note = share.clamp_index(value, count, name)
        if note and note not in notes:  # both pages' widgets moved the same way: say it once
            notes.append(note)
            st.warning(plain_markdown(note))  # a note quotes what the link said


def _listed(values) -> tuple | None:
    return None if values is None else tuple(values)


def from_link(key: str) -> bool:
    """Whether this pick was set by the link this session opened with, and not yet used (once per key)."""
    keys = st.session_state.get(FROM_LINK, set())
    if key not in keys:
        return False
    st.session_state[FROM_LINK] = keys - {key}
    return True


def current_state(page_path: str) -> share.SharedState:
    """The state this page's link carries."""
    state = st.session_state
    fields = page_fields(page_path)
    model = state.get("model_picker", DEFAULT_MODEL)
    layer_key, head_key = index_keys(page_path)
    page = by_url_path(page_path)

    def field(name: str, key: str | None):
        value = state.get(key) if name in fields and key else None
        return None if value == ALL_HEADS and name == "head" else value

    return share.SharedState(
        text_a=state.get("sentence_a"),
        text_b=state.get("sentence_b"),
        model=None if model == OTHER_FOLDER else model,
        layer=field("layer", layer_key),
        head=field("head", head_key),
        sentence_filter=field("filter", page and page.sentence_filter_key),
        tab=field("tab", page and page.tab_key),
        token=field("token", page and page.token_key),
        masked=_listed(field("masked", page and page.masked_key)),
        knocked=_listed(field("knocked", page and page.knocked_key)),
        step=field("step", WALKTHROUGH.step_key),
        present=bool(state.get(PRESENT)),
        target=field("target", WHY_THIS_WORD.target_key) or None,
        foil=field("foil", WHY_THIS_WORD.foil_key) or None,
    )


def sync_link(page_path: str) -> None:
    """Write the current state into the URL's query; other parameters (the Train page's `run`) are left alone."""
    wanted = share.query_for(current_state(page_path))
    for key in share.QUERY_KEYS:
        if key in wanted and st.query_params.get(key) != wanted[key]:
            st.query_params[key] = wanted[key]
        elif key not in wanted and key in st.query_params:
            del st.query_params[key]


def link_control(page_path: str) -> None:
    """A "Copy link" box in the sidebar: the link to this view (st.code has a copy button), drawn only while open: an
    st.code makes the browser load Streamlit's syntax highlighter, ~0.2 of a page load's 0.8-0.9 CPU-s (docs)."""
    box = st.sidebar.expander(
        "Copy link to this view", icon=":material/link:", key=LINK_BOX_KEY, on_change="rerun"
    )
    if not box.open:
        return
    base = (st.context.url or "").split("?")[0]
    if page_path and base.rstrip("/").lower().endswith("/" + page_path.lower()):
        base = base.rstrip("/")[: -len(page_path) - 1]
    link = share.share_link(base or "http://localhost:8501", page_path, current_state(page_path))
    with box:
        st.code(link, language=None, wrap_lines=True)
        st.caption(
            "Opens this page with the same pair, model, layer, head, sentence filter, tab, token, masked "
            "tokens, knocked-out heads, step and presentation mode."
            + (
                " A model typed as a folder is not part of the link."
                if st.session_state.get("model_picker") == OTHER_FOLDER
                else ""
            )
        )
