"""Tokens: the WordPiece pieces of the pair, their ids, segments and positions, and BERT's masking."""

import streamlit as st

from bertviz_lite.figures import token_chip_html
from bertviz_lite.figures.tabs import PAGE_ABOUT
from bertviz_lite.inspection import views
from pages_app.common._state import KEEP
from pages_app.common._ui import load_context, show_table
from pages_app.explore._code import show_code
from pages_app.explore._tabs import about

ctx = load_context(learner=True)  # a learner's own model too (Your BERT)
encoding = ctx.encoding

st.header("Tokens")
about(PAGE_ABOUT["tokens"])  # presentation mode: one plain line on what the page shows
st.caption(
    "BERT reads [CLS] A [SEP] B [SEP]. Each chip is one WordPiece token; beneath it, its position · segment id "
    "(0 = sentence A, 1 = sentence B). Italic chips starting with ## continue the word before them."
)
st.html(token_chip_html(encoding.tokens, encoding.token_type_ids, encoding.special_tokens_mask))
show_table(views.encoding_frame(encoding), "tokens", hide_index=True)

st.subheader("Masking for pre-training")
st.caption(
    "During pre-training BERT chooses each ordinary token with some probability; a chosen token becomes [MASK] "
    "80% of the time, a random token 10%, and stays as it is 10%. The model must predict the original (the MLM label)."
)
left, right, button = st.columns([3, 2, 1], vertical_alignment="bottom")
mask_prob = left.slider(
    "Probability of choosing a token", 0.05, 0.95, 0.15, 0.05, key="mask_prob", persist_state=KEEP
)
right.number_input("Seed", min_value=0, value=0, step=1, key="mask_seed", persist_state=KEEP)


def _resample() -> None:
    st.session_state["mask_seed"] = st.session_state.get("mask_seed", 0) + 1


button.button("Resample", on_click=_resample, icon=":material/casino:")
result = views.mask_encoding(encoding, ctx.tokenizer, mask_prob, st.session_state["mask_seed"])
masking = views.masking_frame(encoding, result, ctx.tokenizer)
st.html(
    token_chip_html(
        masking["model input"].tolist(),
        encoding.token_type_ids,
        encoding.special_tokens_mask,
        decisions=result.decisions.tolist(),
    )
)
show_table(masking, "masking", hide_index=True)
show_code(ctx, PAGE_ABOUT["tokens"].code, "tokens")
