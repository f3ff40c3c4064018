"""Walkthrough: one sentence pair through BERT, step by step (walkthrough.STEPS); some ask the learner first."""

import streamlit as st

from bertviz_lite.figures import embedding_parts_figure, model_view_figure, nsp_bar, token_chip_html, topk_bar
from bertviz_lite.figures.walkthrough import ids_figure, one_head_figure, residual_figure
from bertviz_lite.inspection import views
from bertviz_lite.inspection import walkthrough as walk
from bertviz_lite.inspection.views.predictions import default_masks
from bertviz_lite.loading.pretrained import DEFAULT_MODEL
from bertviz_lite.text.display import plain_markdown
from pages.common._share import HEAD, LAYER, STEP
from pages.common._state import clamp_number
from pages.common._ui import (
    load_context,
    on_tile_click,
    show_figure,
    step_keys,
    switch_model_button,
    trace_for,
    view,
)

ctx = load_context()
encoding = ctx.encoding
masked = default_masks(encoding)
trace = trace_for(ctx, masked)
query = (views.masked_positions(trace.tokens) or [None])[0]
original = encoding.tokens[query] if masked else None
num_layers, num_heads = trace.attentions.shape[:2]
step = walk.clamp_step(st.session_state.get(STEP, 1))
st.session_state[STEP] = step
current = walk.STEPS[step - 1]


def _go(to: int) -> None:
    st.session_state[STEP] = walk.clamp_step(to)


title, back, forward = st.columns([5, 1.4, 1.4], vertical_alignment="center")
title.header(f"Step {step} of {len(walk.STEPS)}: {current.title}", anchor=False)
back.button("Previous", on_click=_go, args=(step - 1,), disabled=step == 1, key="walk_prev",
            icon=":material/arrow_back:", width="stretch")
forward.button("Next", on_click=_go, args=(step + 1,), disabled=step == len(walk.STEPS), key="walk_next",
               icon=":material/arrow_forward:", type="primary", width="stretch")
step_keys("walk_prev", "walk_next")
facts = walk.step_facts(ctx.model.config, ctx.tokenizer.vocab_size, trace.num_tokens, original)
st.markdown(walk.step_text(current, facts))


def _reveal(key: str, signature: str) -> None:
    st.session_state[f"walk_reveal_{key}"] = (signature, st.session_state.get(f"walk_choice_{key}"))


def _ask_again(key: str) -> None:
    st.session_state.pop(f"walk_reveal_{key}", None)


def ask(question: walk.Question, key: str) -> bool:
    """The question and a Reveal button; once revealed, whether the learner was right. True when revealed."""
    stored = st.session_state.get(f"walk_reveal_{key}")
    if stored and stored[0] == question.signature:
        verdict = walk.check_answer(question, stored[1])
        box, again = st.columns([6, 1], vertical_alignment="center")
        (box.success if verdict.correct else box.warning)(plain_markdown(verdict.message))
        again.button("Ask again", key=f"walk_again_{key}", on_click=_ask_again, args=(key,), width="stretch")
        return True
    st.radio(f"**Your guess.** {plain_markdown(question.prompt)}", question.options, index=None, horizontal=True,
             key=f"walk_choice_{key}", format_func=plain_markdown)  # options are vocab tokens: shown as text
    st.button("Reveal the model's answer", key=f"walk_reveal_button_{key}", on_click=_reveal,
              args=(key, question.signature), type="primary", icon=":material/visibility:")
    return False


def no_head(kind: str) -> None:
    st.info(f"{plain_markdown(ctx.inputs.source)} has no trained {kind} head (it was fine-tuned for sentence embeddings, and these "
            f"layers were dropped), so it cannot show this step. {DEFAULT_MODEL} is the same encoder with both heads.")
    switch_model_button(key="walk_switch_model")


def step_tokens() -> None:
    st.html(token_chip_html(trace.tokens, encoding.token_type_ids, encoding.special_tokens_mask))


def step_ids() -> None:
    show_figure(ids_figure(trace.tokens, encoding.position_ids, encoding.token_type_ids), "walk_ids",
                frame=views.encoding_frame(encoding))


def step_embeddings() -> None:
    window = view(views.embedding_window, ctx.inputs, masked, start=0, size=48)
    show_figure(embedding_parts_figure(*window.parts, tokens=window.tokens), "walk_embeddings", frame=window.to_frame)


def step_one_head() -> None:
    clamp_number(LAYER, 0, num_layers - 1)
    clamp_number(HEAD, 0, num_heads - 1)
    layer = st.session_state.get(LAYER, num_layers // 2)
    head = st.session_state.get(HEAD, 0)
    target = 0 if query is None else query
    question = view(walk.attention_question, ctx.inputs, masked, layer=layer, head=head, query=target)
    if ask(question, "attention"):
        data = view(walk.one_head_data, ctx.inputs, masked, layer=layer, head=head, query_index=target)
        show_figure(one_head_figure(data), "walk_one_head", frame=data.to_frame)
    pick_layer, pick_head, _ = st.columns([1, 1, 4])
    pick_layer.selectbox("Layer", range(num_layers), index=num_layers // 2, key=LAYER)
    pick_head.selectbox("Head", range(num_heads), index=0, key=HEAD)


def _open_head(layer: int, head: int) -> None:
    """A clicked tile opens that head in the one-head step."""
    st.session_state[LAYER], st.session_state[HEAD] = layer, head
    st.session_state[STEP] = walk.step_number("one_head")


def step_many_heads() -> None:
    overview = view(views.model_view, ctx.inputs, masked)
    show_figure(model_view_figure(overview, tile_size=min(80, 520 // num_layers)), "walk_model_view",
                frame=overview.to_frame, on_select=on_tile_click("walk_model_view", num_layers, num_heads, _open_head),
                selection_mode="points")


def step_residual() -> None:
    changes = view(walk.residual_changes, ctx.inputs, masked)
    show_figure(residual_figure(changes), "walk_residual", frame=changes.to_frame)


def step_mlm() -> None:
    if not ctx.model.has_mlm_head:
        return no_head("masked-word (MLM)")
    if query is None:
        return st.info("There is no word to mask: type a sentence with at least one ordinary word.")
    question = walk.mlm_question(trace.mlm_logits, ctx.tokenizer, query, original)
    if ask(question, "mlm"):
        top = views.top_predictions(trace.mlm_logits, ctx.tokenizer, query, 10)
        show_figure(topk_bar(top["token"].tolist(), top["probability"], title=views.prediction_title(encoding, query)),
                    "walk_mlm", frame=top)


def step_nsp() -> None:
    if not ctx.model.has_nsp_head:
        return no_head("next-sentence (NSP)")
    if not trace.has_sentence_b:
        return st.info("Type a sentence B in the sidebar to ask the model whether it follows sentence A.")
    probability = views.is_next_probability(trace.nsp_logits)
    if ask(walk.nsp_question(probability), "nsp"):
        show_figure(nsp_bar(probability), "walk_nsp", frame=views.nsp_frame(probability))


# A step declared in walk.STEPS is drawn by step_<its key> above; a step without such a function shows its text only.
RENDER = {step.key: globals().get(f"step_{step.key}") for step in walk.STEPS}
if RENDER[current.key] is not None:
    RENDER[current.key]()
if step == len(walk.STEPS):  # the walk's end leads on to a word's meaning in context, with a guess first
    st.page_link("pages/explore/6_Meaning_in_context.py", icon=":material/translate:",
                 query_params={"word": "bank", "preset": "bank"},
                 label="Next: one word, many meanings. Guess at which layer “bank” by the river and “bank” with money "
                       "drift furthest apart")  # fmt: skip
