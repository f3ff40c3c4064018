"""Walkthrough: one sentence pair through BERT, step by step (walkthrough.STEPS); some ask the learner first."""

from functools import partial

import streamlit as st

from bertviz_lite import export
from bertviz_lite.figures import (
    embedding_window_figure,
    model_view_figure,
    next_sentence_figure,
    token_chip_html,
    top_predictions_figure,
)
from bertviz_lite.figures.walkthrough import ids_figure, one_head_figure, residual_figure
from bertviz_lite.inspection import explore, views
from bertviz_lite.inspection import walkthrough as walk
from bertviz_lite.limits import export_token_problem
from bertviz_lite.loading.pretrained import DEFAULT_MODEL
from bertviz_lite.text.display import plain_markdown
from pages_app.common._pages import WALKTHROUGH
from pages_app.common._state import KEEP, clamp_number
from pages_app.common._ui import (
    about,
    get_trace,
    html_button,
    is_present,
    load_context,
    on_tile_click,
    show_figure,
    step_keys,
    view,
)
from pages_app.explore._code import show_code
from pages_app.explore._model_switch import switch_model_button
from pages_app.explore._questions import ask

STEP_KEY = WALKTHROUGH.step_key
(LAYER_KEY, HEAD_KEY) = WALKTHROUGH.index_keys

ctx = load_context()
encoding = ctx.encoding
focus = views.mask_focus(encoding)  # the word masked here, the first [MASK] of the input, the hidden word
masked = focus.masked
query = focus.query
original = focus.original
num_layers = ctx.model.config.num_hidden_layers
num_heads = ctx.model.config.num_attention_heads
step = walk.clamp_step(st.session_state.get(STEP_KEY, 1))
st.session_state[STEP_KEY] = step
current = walk.STEPS[step - 1]


def _go(to: int) -> None:
    st.session_state[STEP_KEY] = walk.clamp_step(to)


# "Previous" needs ~125 px with its icon: at 1024 px with the sidebar open, 1.4 parts in 7.8 cut it to "Prev…".
title, back, forward = st.columns([4.6, 1.75, 1.35], vertical_alignment="center")
title.header(f"Step {step} of {len(walk.STEPS)}: {current.title}", anchor=False)
back.button(
    "Previous",
    on_click=_go,
    args=(step - 1,),
    disabled=step == 1,
    key="walk_prev",
    icon=":material/arrow_back:",
    width="stretch",
)
forward.button(
    "Next",
    on_click=_go,
    args=(step + 1,),
    disabled=step == len(walk.STEPS),
    key="walk_next",
    icon=":material/arrow_forward:",
    type="primary",
    width="stretch",
)
step_keys("walk_prev", "walk_next")
facts = walk.step_facts(ctx.model.config, ctx.tokenizer.vocab_size, len(encoding), original)
st.markdown(walk.step_text(current, facts))


def no_head(kind: str) -> None:
    st.info(
        f"{plain_markdown(ctx.inputs.source)} has no trained {kind} head (it was fine-tuned for sentence embeddings, and these "
        f"layers were dropped), so it cannot show this step. {DEFAULT_MODEL} is the same encoder with both heads."
    )
    switch_model_button(key="walk_switch_model")


def step_tokens() -> None:
    tokens = get_trace(ctx, masked).tokens
    st.html(token_chip_html(tokens, encoding.token_type_ids, encoding.special_tokens_mask))


def step_ids() -> None:
    tokens = get_trace(ctx, masked).tokens
    ids = (
        tokens,
        encoding.position_ids,
        encoding.token_type_ids,
    )  # a new encoding each run: built here, small
    show_figure(
        ids_figure(*ids),
        "walk_ids",
        frame=views.encoding_frame(encoding),
        narrow=ids_figure(*ids, narrow=True),
    )


def step_embeddings() -> None:
    window = view(views.embedding_window, ctx, masked, start=0, size=48)
    show_figure(
        partial(embedding_window_figure, window),
        "walk_embeddings",
        frame=window.to_frame,
        slide_top=210,
        narrow=partial(embedding_window_figure, window, narrow=True),
    )


def step_one_head() -> None:
    clamp_number(LAYER_KEY, 0, num_layers - 1)
    clamp_number(HEAD_KEY, 0, num_heads - 1)
    layer = st.session_state.get(LAYER_KEY, num_layers // 2)
    head = st.session_state.get(HEAD_KEY, 0)
    target = 0 if query is None else query
    question = view(walk.attention_question, ctx, masked, layer=layer, head=head, query=target)
    if is_present():  # a slide: the pickers beside the question, so that they show with the figure
        pick_layer, pick_head, question_box = st.columns([1, 1, 6], vertical_alignment="bottom")
    else:
        question_box = st.container()
    with question_box:
        revealed = ask(question, "attention")
    if revealed:
        data = view(walk.one_head_data, ctx, masked, layer=layer, head=head, query_index=target)
        show_figure(
            partial(one_head_figure, data),
            "walk_one_head",
            frame=data.to_frame,
            slide_top=315,
            narrow=partial(one_head_figure, data, narrow=True),
        )
    if not is_present():
        pick_layer, pick_head, _ = st.columns([1, 1, 4])
    pick_layer.selectbox("Layer", range(num_layers), index=num_layers // 2, key=LAYER_KEY, persist_state=KEEP)
    pick_head.selectbox("Head", range(num_heads), index=0, key=HEAD_KEY, persist_state=KEEP)


def _open_head(layer: int, head: int) -> None:
    """A clicked tile opens that head in the one-head step."""
    st.session_state[LAYER_KEY] = layer
    st.session_state[HEAD_KEY] = head
    st.session_state[STEP_KEY] = walk.step_number("one_head")


def step_many_heads() -> None:
    overview = view(views.model_view, ctx, masked)
    tile_size = min(80, 520 // num_layers)
    show_figure(
        partial(model_view_figure, overview, tile_size=tile_size),
        "walk_model_view",
        frame=overview.to_frame,
        on_select=on_tile_click("walk_model_view", num_layers, num_heads, _open_head),
        selection_mode="points",
        slide_top=235,
        narrow=partial(model_view_figure, overview, tile_size=tile_size, narrow=True),
    )


def step_residual() -> None:
    changes = view(walk.residual_changes, ctx, masked)
    show_figure(
        partial(residual_figure, changes),
        "walk_residual",
        frame=changes.to_frame,
        slide_top=235,
        narrow=partial(residual_figure, changes, narrow=True),
    )


def step_mlm() -> None:
    if not ctx.model.has_mlm_head:
        return no_head("masked-word (MLM)")
    if query is None:
        return st.info("There is no word to mask: type a sentence with at least one ordinary word.")
    question = walk.mlm_question(get_trace(ctx, masked).mlm_logits, ctx.tokenizer, query, original)
    if ask(question, "mlm"):
        top = view(views.top_predictions, ctx, masked, position=query, k=10)
        show_figure(top_predictions_figure(top), "walk_mlm", frame=top.to_frame, slide_top=285)


def step_nsp() -> None:
    if not ctx.model.has_nsp_head:
        return no_head("next-sentence (NSP)")
    if not explore.has_sentence_b(encoding):
        return st.info("Type a sentence B in the sidebar to ask the model whether it follows sentence A.")
    answer = view(views.next_sentence, ctx, masked)
    if ask(walk.nsp_question(answer.p_is_next), "nsp"):
        show_figure(next_sentence_figure(answer), "walk_nsp", frame=answer.to_frame)  # the step says NSP


def download_lesson() -> None:
    """The walkthrough's steps for this pair and model in one HTML file (bertviz_lite.export), built when clicked."""
    problem = export_token_problem(len(encoding), "A lesson")
    if problem:
        return st.caption(problem)
    made = about("walkthrough")

    def lesson() -> str:
        return export.lesson_html(get_trace(ctx, masked), made)

    html_button(lesson, "walkthrough", "walk_lesson", label="Download this walkthrough")


def step_build() -> None:
    st.page_link(
        "pages_app/build/12_Your_BERT.py",
        icon=":material/construction:",
        label="Build: check your own BERT against this one, stage by stage",
    )


# A step declared in walk.STEPS is drawn by its function here; a step without one shows its text only.
RENDER = {
    "tokens": step_tokens,
    "ids": step_ids,
    "embeddings": step_embeddings,
    "one_head": step_one_head,
    "many_heads": step_many_heads,
    "residual": step_residual,
    "mlm": step_mlm,
    "nsp": step_nsp,
    "build": step_build,
}
if current.key in RENDER:
    RENDER[current.key]()
show_code(ctx, current.code, f"walk_{current.key}")  # the step's "The code", below its figure
download_lesson()
if step == len(walk.STEPS):  # the walk's end leads on to a word's meaning in context, with a guess first
    st.page_link(
        "pages_app/explore/6_Meaning_in_context.py",
        icon=":material/translate:",
        query_params={"word": "bank", "preset": "bank"},
        label="Next: one word, many meanings. Guess at which layer “bank” by the river and “bank” with money "
        "drift furthest apart",
    )
