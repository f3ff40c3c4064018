"""Meaning in context: one word in many WordNet sentences, layer by layer, coloured by sense; how well the senses
separate; and the nearest neighbours of one occurrence, in context."""

from functools import partial

import numpy as np
import streamlit as st

from bertviz_lite.figures.meaning_in_context import context_scatter, separation_figure
from bertviz_lite.figures.tabs import PAGE_ABOUT
from bertviz_lite.inspection.views import meaning_in_context as meaning
from bertviz_lite.limits import MAX_USER_SENTENCE_CHARS
from bertviz_lite.text.corpora.senses import sense_index
from bertviz_lite.text.display import plain_markdown
from pages_app.common._state import keep_choice
from pages_app.common._ui import (
    SHARED,
    get_trace,
    is_present,
    load_context,
    load_model,
    narrow_key,
    show_figure,
    show_table,
)
from pages_app.explore._code import show_code
from pages_app.explore._tabs import about

WORD = "meaning_word"
EXTRA = "meaning_extra"
LAYER = "meaning_layer"
QUERY = "meaning_query"
SCOPE = "meaning_scope"
UNLABELLED = "meaning_unlabelled"
KEPT = {
    WORD: "bank",
    EXTRA: "",
    LAYER: None,
    SCOPE: None,
    UNLABELLED: False,
}  # page widgets keep their values across page visits
OWN = "this word's sentences"
WHOLE = "every labelled word of the index"
K = 10
QUIZ = "meaning_quiz"
GUESS = "meaning_guess"
VERDICT = "meaning_verdict"
LINKED = "_meaning_link"


def keep_picks() -> None:
    """Streamlit forgets a page's widgets when the user leaves the page; their values are kept under _keys."""
    for key, default in KEPT.items():
        if key not in st.session_state and f"_{key}" in st.session_state:
            st.session_state[key] = st.session_state[f"_{key}"]
        elif key not in st.session_state and default is not None:
            st.session_state[key] = default


def remember(key: str) -> None:
    st.session_state[f"_{key}"] = st.session_state[key]


def word_contexts(
    source: str, version: str, word: str, extra: tuple[str, ...], unlabelled: bool
) -> meaning.WordContexts:
    """meaning.word_contexts on the model of a source, once per word, typed sentences and choice of sentences."""
    return SHARED.get(
        ("word_contexts", source, version, word, extra, unlabelled),
        partial(_word_contexts, source, version, word, extra, unlabelled),
    )


def _word_contexts(source: str, version: str, word: str, extra: tuple[str, ...], unlabelled: bool):
    with st.spinner("Running the model on every sentence with the word…"):
        model, tokenizer = load_model(source, version)
        return meaning.word_contexts(model, tokenizer, sense_index(), word, extra, unlabelled=unlabelled)


# One pool per model and layer; MiniLM's holds 39,364 × 384 floats (60 MB), so at most two are kept (120 MB: a
# bound by construction), and kept while the server runs: one took 1-4 minutes to build.
@st.cache_resource(
    max_entries=2,
    show_spinner="Running the model on the whole sense index up to this layer (once per "
    "model and layer; MiniLM's last layer took 1-4 minutes on one busy core, "
    "bench/meaning_in_context_latency.py)…",
)
def index_pool(source: str, version: str, layer: int) -> meaning.NeighbourPool:
    """meaning.index_pool on the model of a source: every labelled word of the index at one layer."""
    model, tokenizer = load_model(source, version)
    return meaning.index_pool(model, tokenizer, sense_index(), layer)


def apply_word_link() -> None:
    """?word=bank (and ?preset=bank: labelled sentences and the question first), once per link."""
    linked = (st.query_params.get("word"), st.query_params.get("preset"))
    if linked[0] is None or st.session_state.get(LINKED) == linked:
        return
    st.session_state[LINKED] = linked
    try:
        st.session_state[WORD] = st.session_state[f"_{WORD}"] = meaning.check_word(linked[0])
    except ValueError as err:
        st.warning(f"The link's word is not used: {plain_markdown(err)}")
        return
    if linked[1] in meaning.PRESETS:
        st.session_state[EXTRA] = st.session_state[f"_{EXTRA}"] = "\n".join(meaning.PRESETS[linked[1]])
        st.session_state[QUIZ] = True


def follow_word_in_link(word: str) -> None:
    """The URL names the word shown, so a copied link opens it."""
    if st.query_params.get("word") != word:
        st.query_params["word"] = word
        st.query_params.pop("preset", None)
        st.session_state[LINKED] = (word, None)


def _reveal(separation: meaning.SenseSeparation) -> None:
    st.session_state[VERDICT] = meaning.separation_verdict(separation, st.session_state.get(GUESS))
    st.session_state[QUIZ] = False


def ask_first(separation: meaning.SenseSeparation) -> bool:
    """Predict, then reveal: the question instead of the chart until the learner reveals. True while asking."""
    question = meaning.separation_question(separation) if st.session_state.get(QUIZ) else None
    if question is None:
        verdict = st.session_state.pop(VERDICT, None)
        if verdict is not None:
            (st.success if verdict.correct else st.warning)(verdict.message)
        return False
    st.radio(f"**Your guess.** {question.prompt}", question.options, index=None, key=GUESS)
    st.button(
        "Reveal the model's answer",
        on_click=_reveal,
        args=(separation,),
        type="primary",
        icon=":material/visibility:",
        key="meaning_reveal",
    )
    return True


def _scatter_key() -> str:
    """A new chart key after each click clears the selection, so the same point can be clicked again."""
    return f"meaning_scatter_{st.session_state.get('meaning_clicks', 0)}"


def _pick_point() -> None:
    """A point clicked on the wide or the phone chart: its neighbours are listed."""
    events = (st.session_state.get(key) for key in (_scatter_key(), narrow_key(_scatter_key())))
    points = [point for event in events if event for point in (event.selection or {}).get("points") or []]
    for point in points:
        if isinstance(point.get("customdata"), int):
            st.session_state[QUERY] = f"o{point['customdata']}"
            st.session_state["meaning_clicks"] = st.session_state.get("meaning_clicks", 0) + 1
            return


ctx = load_context()
apply_word_link()
keep_picks()
num_layers = ctx.model.config.num_hidden_layers
st.header("Meaning in context", anchor=False)
about(PAGE_ABOUT["meaning_in_context"])  # presentation mode: one plain line on what the page shows
st.caption(
    "One word, many sentences: each point is the word's vector in one WordNet example sentence, coloured by the sense "
    "WordNet gives it there. Every occurrence starts from the same input embedding; slide through the layers to see "
    "the sentence pull the senses apart."
)
pick_word, pick_layer, pick_more = st.columns([2, 4, 1.3], vertical_alignment="bottom")
word = pick_word.selectbox(
    "Word (pick or type)",
    meaning.SUGGESTED_WORDS,
    key=WORD,
    accept_new_options=True,
    on_change=remember,
    args=(WORD,),
)
keep_choice(LAYER, range(num_layers + 1), num_layers)
layer = pick_layer.select_slider(
    "Layer (0: the input embeddings)",
    range(num_layers + 1),
    value=num_layers,
    key=LAYER,
    format_func=lambda i: meaning.layer_names(num_layers)[i],
    on_change=remember,
    args=(LAYER,),
)
with pick_more.popover("Your sentences", icon=":material/edit_note:", width="stretch"):
    st.toggle(
        "Also sentences where WordNet labels another word",
        key=UNLABELLED,
        on_change=remember,
        args=(UNLABELLED,),
        help="The word occurs there, but WordNet's label is for another word of the sentence, "
        "so its sense is unknown (grey rings).",
    )
    st.text_area(
        "One sentence per line; put the sense in brackets first to have it scored, as in "
        "“[river] We sat on the bank.”",
        key=EXTRA,
        on_change=remember,
        args=(EXTRA,),
        height=120,
        max_chars=MAX_USER_SENTENCE_CHARS,
    )
try:
    extra = meaning.user_lines(
        st.session_state.get(EXTRA, "")
    )  # refused past its limits before any tokenizing
    data = word_contexts(
        ctx.inputs.source, ctx.inputs.version, word or "", extra, st.session_state[UNLABELLED]
    )
except ValueError as err:
    st.error(str(err))
    st.stop()
follow_word_in_link(data.word)

separation = meaning.sense_separation(data)
projection = meaning.context_projection(data, layer)
query = st.session_state.get(QUERY, "o0")
chosen = int(query[1:]) if query.startswith("o") and int(query[1:]) < len(data.occurrences) else None
plot, score = st.columns([5, 3])
with plot:
    show_figure(
        context_scatter(projection, data.word, chosen, height=370 if is_present() else 480),
        "meaning_scatter",
        frame=projection.to_frame,
        key=_scatter_key(),
        on_select=_pick_point,
        selection_mode="points",
        narrow=context_scatter(projection, data.word, chosen, height=400, narrow=True),
    )
with score:
    below_verdict = (
        st.session_state.get(VERDICT) is not None
    )  # then it starts lower on a slide than the scatter
    if not ask_first(separation):
        show_figure(
            separation_figure(separation, layer, height=330 if is_present() else 400),
            "meaning_separation",
            frame=separation.to_frame,
            narrow=separation_figure(separation, layer, height=400, narrow=True),
            **({"slide_top": 460} if below_verdict else {}),
        )
    if not np.isfinite(separation.accuracy).any():
        st.info(
            "To score how well senses separate, it takes two senses with two sentences each: name the senses of "
            "your sentences in brackets, as in “[river] We sat on the bank.”"
        )
    scored = "the senses you named" if separation.by_user else "WordNet senses with two sentences or more"
    st.caption(
        f"Hold out one sentence, average the others of each sense ({scored}), and guess the sense whose average "
        "points most the same way (cosine). Static embedding: the same guess from the input token embedding alone, "
        "identical in every sentence (so ties share the credit); chance: always the commonest sense."
    )

st.subheader("Nearest neighbours", anchor=False)
options = [f"o{i}" for i in range(len(data.occurrences))]
options += [f"p{i}" for i, special in enumerate(ctx.encoding.special_tokens_mask) if not special]


def _label(option: str) -> str:
    if option.startswith("o"):
        o = data.occurrences[int(option[1:])]
        return f"{o.text[: o.start]}[{o.text[o.start : o.end]}]{o.text[o.end :]}"
    return f"sidebar pair: {ctx.encoding.tokens[int(option[1:])]} (token {option[1:]})"


keep_choice(QUERY, options, options[0])
pick_query, pick_scope = st.columns([3, 2])
query = pick_query.selectbox("Neighbours of (or click a point above)", options, key=QUERY, format_func=_label)
total = sense_index().num_words
scope = pick_scope.radio(
    "Search among",
    [OWN, WHOLE],
    key=SCOPE,
    horizontal=True,
    on_change=remember,
    args=(SCOPE,),
    format_func=lambda s: f"{s} ({total:,})" if s == WHOLE else s,
)
if query.startswith("o"):
    exclude = data.occurrences[int(query[1:])]
    vector = data.vectors[layer, int(query[1:])]
else:
    exclude = None  # not a view: no trace kept
    vector = get_trace(ctx).hidden_states[layer, int(query[1:])].copy()
pool = (
    meaning.pool_from_contexts(data, layer)
    if scope == OWN
    else index_pool(ctx.inputs.source, ctx.inputs.version, layer)
)
neighbours = meaning.nearest_neighbours(pool, vector, K, exclude=exclude)
show_table(
    neighbours.to_frame(),
    "meaning_neighbours",
    hide_index=True,
    column_config={
        "before": st.column_config.TextColumn(
            width="medium", alignment="right"
        ),  # a concordance: the words line up
        "word": st.column_config.TextColumn(width="small", alignment="center"),
        "after": st.column_config.TextColumn(width="medium"),
        "gloss": st.column_config.TextColumn(width="large"),
    },
)
show_code(ctx, PAGE_ABOUT["meaning_in_context"].code, "meaning_in_context")
