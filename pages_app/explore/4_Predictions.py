"""Predictions: what the MLM head guesses at masked positions, and the NSP head's P(B follows A)."""

import streamlit as st

from bertviz_lite import figures
from bertviz_lite.figures.tabs import PAGE_ABOUT
from bertviz_lite.inspection import analysis, explore, views
from bertviz_lite.inspection.views.predictions import default_masks
from bertviz_lite.loading.pretrained import DEFAULT_MODEL
from pages_app.common._pages import PREDICTIONS
from pages_app.common._share import from_link
from pages_app.common._state import KEEP, keep_choices, new_input
from pages_app.common._ui import load_context, show_figure, view
from pages_app.explore._code import show_code
from pages_app.explore._model_switch import switch_model_button
from pages_app.explore._tabs import about

ctx = load_context(learner=True)  # a learner's own model too (Your BERT)
encoding = ctx.encoding

st.header("Predictions")
about(PAGE_ABOUT["predictions"])  # presentation mode: one plain line on what the page shows
if not (ctx.model.has_mlm_head or ctx.model.has_nsp_head):
    st.info(
        f"{ctx.inputs.source} is an encoder without BERT's pre-training heads: it was fine-tuned to make sentence "
        "embeddings, and its masked-word (MLM) and next-sentence (NSP) layers were dropped, so it cannot guess "
        f"masked words. {DEFAULT_MODEL} is the same encoder with both heads trained in this project."
    )
    if not switch_model_button():
        st.caption(f"checkpoints/{DEFAULT_MODEL} is missing from this install (see docs/learners.md).")
    st.stop()

labels = analysis.unique_labels(encoding.tokens)
maskable = views.maskable_positions(encoding)
default = list(default_masks(encoding))
if new_input("pred_mask_input", ctx.inputs) and not from_link(
    PREDICTIONS.masked_key
):  # new text: positions mean other tokens
    st.session_state[PREDICTIONS.masked_key] = default
keep_choices(PREDICTIONS.masked_key, maskable)  # a link's positions past this input's end
left, right = st.columns([3, 1])
chosen = left.multiselect(
    "Tokens to mask (or type [MASK] in a sentence)",
    maskable,
    default=default,
    key=PREDICTIONS.masked_key,
    persist_state=KEEP,
    format_func=lambda i: labels[i],
)
k = right.number_input("Top k", 1, 30, 10, key="pred_k", persist_state=KEEP)

# Side by side, so both fit a 1280 × 720 screen.
mlm_column, nsp_column = (
    st.columns([3, 2])
    if ctx.model.has_mlm_head and ctx.model.has_nsp_head
    else (st.container(), st.container())
)
if ctx.model.has_mlm_head:
    with mlm_column:
        st.subheader("Masked words")
        positions = sorted(
            {*views.mask_token_positions(encoding.tokens), *chosen}
        )  # typed and picked [MASK]s
        if not positions:
            st.info("Pick a token to mask above, or write [MASK] in sentence A or B.")
        for position in positions:
            top = view(views.top_predictions, ctx, chosen, position=position, k=k)
            show_figure(figures.top_predictions_figure(top), f"predictions_{position}", frame=top.to_frame)
            if top.note:
                st.caption(top.note)

if ctx.model.has_nsp_head:
    with nsp_column:
        st.subheader("Next sentence")
        if not explore.has_sentence_b(encoding):
            st.info("Type a sentence B to ask the model whether it follows sentence A.")
        else:
            # NSP judges the pair as typed: the tokens picked above are masked for the MLM guesses only.
            as_typed = view(views.next_sentence, ctx)
            show_figure(figures.next_sentence_figure(as_typed), "nsp", frame=as_typed.to_frame)
            with_picks = view(views.next_sentence, ctx, chosen)
            st.caption(views.nsp_caption(as_typed.p_is_next, with_picks.p_is_next, len(chosen)))
show_code(ctx, PAGE_ABOUT["predictions"].code, "predictions")
