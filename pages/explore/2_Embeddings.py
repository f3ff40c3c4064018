"""Embeddings: token + position + segment vectors, their sum, LayerNorm, norms, positions, PCA."""

import streamlit as st

from bertviz_lite import analysis, explore, figures
from pages.common._ui import clamp_number, clamp_state, load_context, show_figure, trace_for

WINDOW = 64  # tokens per heatmap page: 512 × 384 × 5 cells would be a slow figure

ctx = load_context()
trace = trace_for(ctx)
count = trace.num_tokens

st.header("Embeddings")
st.caption(
    "BERT's input vector for each token is the sum of three learned vectors: the token's own embedding, one for "
    "its position and one for its segment (A or B). LayerNorm then rescales each sum to mean 0 and variance 1."
)
start = 0
if count > WINDOW:
    clamp_number("emb_start", 0, count - WINDOW)
    start = st.slider(f"First token shown ({WINDOW} at a time)", 0, count - WINDOW, 0, key="emb_start")
parts, tokens = explore.embedding_parts(trace, explore.token_window(count, start, WINDOW))
show_figure(figures.embedding_parts_figure(*parts, tokens=tokens), "embedding_parts")
st.caption(f"Check: largest |sum − (token + position + segment)| = {explore.embedding_sum_error(trace):.2e}.")

norms = analysis.embedding_component_norms(*(trace.embeddings[n] for n in explore.EMBEDDING_NAMES), tokens=trace.tokens)
show_figure(figures.component_norms_bar(norms), "embedding_norms", frame=norms)

st.subheader("Position embeddings")
max_positions = ctx.model.config.max_position_embeddings
clamp_number("emb_positions", 2, max_positions)
positions = st.number_input("Positions compared", 2, max_positions, min(64, max_positions), key="emb_positions")
learned, sinusoidal = explore.position_tables(ctx.model, positions)
kind = ctx.model.config.position_embedding_type
left, right = st.columns(2)
with left:
    show_figure(figures.position_similarity_heatmap(
        analysis.cosine_similarity_matrix(learned), title=f"This model's position embeddings ({kind})"),
        "position_similarity_model")
with right:
    show_figure(figures.position_similarity_heatmap(
        analysis.cosine_similarity_matrix(sinusoidal), title="Sinusoidal table (Vaswani et al.), for comparison"),
        "position_similarity_sinusoidal")

st.subheader("Token vectors in 2-D")
choices = explore.vector_choices(ctx.model.config.num_hidden_layers)
clamp_state("pca_vectors", choices, choices[-1])
choice = st.selectbox("Vectors", choices, index=len(choices) - 1, key="pca_vectors")
points = analysis.pca_2d(explore.vectors_for(trace, choice))
show_figure(figures.pca_scatter(points, trace.tokens, explore.sentence_of_tokens(trace),
                                title=f"{choice}: first two principal components"), "pca")
