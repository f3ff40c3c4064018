"""Embeddings: token + position + segment vectors, their sum, LayerNorm, norms, positions, PCA."""

from functools import partial

import streamlit as st

from bertviz_lite import figures
from bertviz_lite.check.learner_explore import LearnerModel
from bertviz_lite.figures.tabs import PAGE_ABOUT
from bertviz_lite.inspection import views
from pages_app.common._state import KEEP, clamp_number, keep_choice
from pages_app.common._ui import load_context, show_figure, view
from pages_app.explore._code import show_code
from pages_app.explore._tabs import about

WINDOW = 64  # tokens per heatmap page: 512 × 384 × 5 cells would be a slow figure


# Each section is a fragment: its own control redraws its figures only, not the page and the sidebar.
@st.fragment
def parts_section() -> None:
    start = 0
    if count > WINDOW:
        clamp_number("emb_start", 0, count - WINDOW)
        start = st.slider(
            f"First token shown ({WINDOW} at a time)",
            0,
            count - WINDOW,
            0,
            key="emb_start",
            persist_state=KEEP,
        )
    window = view(views.embedding_window, ctx, start=start, size=WINDOW)
    show_figure(
        figures.embedding_window_figure(window),
        "embedding_parts",
        frame=window.to_frame,
        slide_top=160,
        narrow=partial(figures.embedding_window_figure, window, narrow=True),
    )


@st.fragment
def positions_section() -> None:
    if isinstance(ctx.model, LearnerModel):  # the position table is read from our BERT's weights
        st.info(
            "This view reads the position table from our BERT's weights, which your model's run does not give."
        )
        return
    max_positions = ctx.model.config.max_position_embeddings
    clamp_number("emb_positions", 2, max_positions)
    positions = st.number_input(
        "Positions compared",
        2,
        max_positions,
        min(64, max_positions),
        key="emb_positions",
        persist_state=KEEP,
    )
    for column, similarity, name in zip(
        st.columns(2),
        views.position_similarity(ctx.model, positions),
        ("position_similarity_model", "position_similarity_sinusoidal"),
        strict=True,
    ):
        with column:
            show_figure(
                figures.position_similarity_figure(similarity),
                name,
                frame=similarity.to_frame,
                narrow=figures.position_similarity_figure(similarity, narrow=True),
            )


@st.fragment
def projection_section() -> None:
    choices = views.vector_choices(ctx.model.config.num_hidden_layers)
    keep_choice("pca_vectors", choices, choices[-1])
    choice = st.selectbox("Vectors", choices, index=len(choices) - 1, key="pca_vectors", persist_state=KEEP)
    projection = view(views.token_projection, ctx, choice=choice)
    show_figure(figures.token_projection_figure(projection), "pca", frame=projection.to_frame)


ctx = load_context(learner=True)  # a learner's own model too (Your BERT)
count = len(ctx.encoding)

st.header("Embeddings")
about(PAGE_ABOUT["embeddings"])  # presentation mode: one plain line on what the page shows
st.caption(
    "BERT's input vector for each token is the sum of three learned vectors: the token's own embedding, one for "
    "its position and one for its segment (A or B). LayerNorm then rescales each sum to mean 0 and variance 1."
)

norms = view(views.embedding_norms, ctx, stop=False)  # None: a learner's model that hides its parts (said)
if norms is not None:
    parts_section()
    st.caption(
        f"Check: largest |sum − (token + position + segment)| = {view(views.embedding_sum_error, ctx):.2e}."
    )
    show_code(ctx, PAGE_ABOUT["embeddings"].code, "embeddings")
    show_figure(figures.embedding_norms_figure(norms), "embedding_norms", frame=norms.to_frame)

st.subheader("Position embeddings")
positions_section()

st.subheader("Token vectors in 2-D")
projection_section()
