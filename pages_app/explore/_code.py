"""The code panel under a view ("The code"): the package's functions the view declares, read from the installed package,
with this pair's shapes (bertviz_lite/inspection/code_listing.py); collapsed in an expander, a toggle on a slide."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import streamlit as st

from bertviz_lite.check.learner_explore import LearnerModel
from bertviz_lite.inspection.code_listing import code_listing, shape_legend
from bertviz_lite.inspection.live_shapes import pair_shapes
from pages_app.common._ui import Context, is_present, view_of_model

LABEL = "The code"


def show_code(ctx: Context, code: Sequence[Callable], key: str) -> None:
    """The view's code panel, drawn where it is called (after its figure); the source and its shapes are made only
    while it is open. key: the view's name (each view remembers its own panel)."""
    # A view that declares no code fails tests/inspection/test_code_listing.py; meanwhile it shows no empty panel.
    if not code:
        return
    if is_present():  # a slide: one toggle row below the figure, which keeps its height
        shown = st.toggle(LABEL, key=f"code_{key}")
        box = st.container()
    else:
        box = st.expander(LABEL, icon=":material/code:", key=f"code_{key}", on_change="rerun")
        shown = box.open
    if not shown:
        return
    inputs = ctx.inputs
    # A learner's model (Your BERT): our code beside its figure, without shapes (their model is not ours to trace).
    learner = isinstance(ctx.model, LearnerModel)
    shapes = None
    if not learner:
        shapes = view_of_model(
            pair_shapes, ctx, text_a=inputs.text_a, text_b=inputs.text_b, max_length=ctx.max_length
        )
    with box:
        if learner:
            st.caption("Our BERT's code (yours is your file); the shapes show with one of our models.")
        else:
            st.markdown(shape_legend(ctx.model.config, shapes.num_tokens))
        for block in code_listing(code, shapes):
            st.caption(block.where)
            st.code(block.text, language="python")
