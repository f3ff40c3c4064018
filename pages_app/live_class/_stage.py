"""What the lecturer and the students of a live class both see: the step, its figure and its questions.

Everything is computed from the class's Position (the lecturer's model, pair, step, layer and head), through
the same caches as the explore pages, so a hundred phones showing one step share one trace.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import NamedTuple

import streamlit as st

from bertviz_lite.export.toolbar import plotly_config
from bertviz_lite.figures import (
    embedding_window_figure,
    model_view_figure,
    next_sentence_figure,
    token_chip_html,
    top_predictions_figure,
)
from bertviz_lite.figures.style import readable
from bertviz_lite.figures.walkthrough import ids_figure, one_head_figure, residual_figure
from bertviz_lite.inspection import explore, views
from bertviz_lite.inspection import walkthrough as walk
from bertviz_lite.inspection.views.predictions import default_masks
from bertviz_lite.limits import clamp
from bertviz_lite.server.live_class import CHOICE, CLOZE, NewQuestion, Position
from bertviz_lite.text.display import plain_markdown
from pages_app.common._sidebar import DEFAULTS, Inputs
from pages_app.common._ui import (
    LOAD_ERRORS,
    SHARED,
    SLIDE_BOTTOM,
    Context,
    context_for,
    get_trace,
    is_present,
    view,
)

CLASS_MAX_LENGTH = DEFAULTS["max_length"]
QUESTION_STEPS = (
    "one_head",
    "mlm",
    "nsp",
)  # the walkthrough's steps that ask (pages_app/explore/0_Walkthrough.py)
FIGURE_MAX_HEIGHT = (
    SLIDE_BOTTOM - 260
)  # in presentation mode, below the step's question on a 1280 × 720 slide
PROJECTOR_ONLY = ("embeddings",)  # five wide heatmaps side by side: unreadable at 390 px
NSP_QUESTION = "Next-sentence prediction: does sentence B follow A?"
CLOZE_PROMPT = "What word will BERT put in place of [MASK]? Type one word."


class Stage(NamedTuple):
    position: Position
    ctx: Context
    masked: tuple[int, ...]
    trace: explore.PairTrace
    query: int | None  # the masked position (the question's token)

    @property
    def model(self):
        return self.ctx.model

    @property
    def tokenizer(self):
        return self.ctx.tokenizer

    @property
    def encoding(self):
        return self.ctx.encoding

    @property
    def step(self) -> walk.Step:
        return walk.STEPS[walk.clamp_step(self.position.step) - 1]


def stage_for(position: Position) -> Stage | str:
    """The class's model and traced pair, or a sentence saying why they cannot be shown here."""
    inputs = Inputs(
        position.source,
        position.text_a,
        position.text_b,
        CLASS_MAX_LENGTH,
        explore.source_version(position.source),
    )
    try:
        ctx = context_for(inputs)
        masked = default_masks(ctx.encoding)
        trace = get_trace(ctx, masked)
    except LOAD_ERRORS as err:
        return f"The class's model cannot be shown here: {err}"
    query = (views.mask_token_positions(trace.tokens) or [None])[0]
    return Stage(clamped(position, ctx.model.config), ctx, masked, trace, query)


def clamped(position: Position, config) -> Position:
    """The position with its layer and head inside this model (a class moved to a smaller model keeps its pick)."""
    return replace(
        position,
        layer=clamp(position.layer, 0, config.num_hidden_layers - 1),
        head=clamp(position.head, 0, config.num_attention_heads - 1),
    )


def step_header(stage: Stage) -> None:
    number = walk.clamp_step(stage.position.step)
    st.subheader(f"Step {number} of {len(walk.STEPS)}: {stage.step.title}", anchor=False)


def questions(stage: Stage) -> dict[str, NewQuestion]:
    """The questions this step can ask the class: the walkthrough's own, and on the MLM step a free cloze."""
    key = stage.step.key
    trace = stage.trace
    pos = stage.position
    if key == "one_head":
        target = 0 if stage.query is None else stage.query
        asked = view(
            walk.attention_question, stage.ctx, stage.masked, layer=pos.layer, head=pos.head, query=target
        )
        return {"Ask the question": _choice(asked)}
    if key == "mlm" and stage.model.has_mlm_head and stage.query is not None:
        original = stage.encoding.tokens[stage.query] if stage.masked else None
        top = model_top(stage)
        cloze = NewQuestion(
            CLOZE,
            CLOZE_PROMPT,
            tuple(top["token"]),
            top["token"].iloc[0],
            f"The model's top guess is “{top['token'].iloc[0]}” ({top['probability'].iloc[0]:.0%}).",
        )
        return {
            "Ask the question": _choice(
                walk.mlm_question(trace.mlm_logits, stage.tokenizer, stage.query, original)
            ),
            "Ask a free cloze": cloze,
        }
    if key == "nsp" and stage.model.has_nsp_head and trace.has_sentence_b:
        return {"Ask the question": _choice(walk.nsp_question(views.is_next_probability(trace.nsp_logits)))}
    return {}


def _choice(question: walk.Question) -> NewQuestion:
    return NewQuestion(CHOICE, question.prompt, question.options, question.answer, question.explanation)


def model_top(stage: Stage, k: int = 5):
    """The model's k most likely words at the masked position (a frame: token, probability)."""
    return view(views.top_predictions, stage.ctx, stage.masked, position=stage.query, k=k).to_frame()


def chart(fig, name: str, phone: bool) -> None:
    """A figure of the class; on a phone without plotly's toolbar over its title."""
    config = {**plotly_config(name), "displayModeBar": False} if phone else plotly_config(name)
    st.plotly_chart(fig, key=f"class_{name}", config=config, width="stretch")


def _build(stage: Stage, phone: bool):
    """(name, figure) of the step, as the walkthrough draws it; None for a step without one here."""
    key = stage.step.key
    trace = stage.trace
    enc = stage.encoding
    pos = stage.position
    if key == "ids":
        return "ids", ids_figure(trace.tokens, enc.position_ids, enc.token_type_ids)
    if key == "embeddings":
        return "embeddings", embedding_window_figure(
            view(views.embedding_window, stage.ctx, stage.masked, start=0, size=48)
        )
    if key == "one_head":
        target = 0 if stage.query is None else stage.query
        data = view(
            walk.one_head_data, stage.ctx, stage.masked, layer=pos.layer, head=pos.head, query_index=target
        )
        return "one_head", one_head_figure(data)
    if key == "many_heads":
        tiles = min(80, (300 if phone else 520) // stage.model.config.num_hidden_layers)
        return "model_view", model_view_figure(
            view(views.model_view, stage.ctx, stage.masked), tile_size=tiles
        )
    if key == "residual":
        return "residual", residual_figure(view(walk.residual_changes, stage.ctx, stage.masked))
    if key == "mlm" and stage.model.has_mlm_head and stage.query is not None:
        top = view(views.top_predictions, stage.ctx, stage.masked, position=stage.query, k=5 if phone else 10)
        return "mlm", top_predictions_figure(top, title="Top guesses at [MASK]" if phone else None)
    if key == "nsp" and stage.model.has_nsp_head and trace.has_sentence_b:
        answer = view(views.next_sentence, stage.ctx, stage.masked)
        return "nsp", next_sentence_figure(answer, "Does B follow A?" if phone else NSP_QUESTION)
    return None


def shared_figure(position: Position, phone: bool, present: bool):
    """The step's (name, figure) for this position, built once for every student (st.plotly_chart only reads it)."""
    return SHARED.get(
        ("class_figure", position, phone, present), partial(_step_figure, position, phone, present)
    )


def _step_figure(position: Position, phone: bool, present: bool):
    """The step's (name, figure) for this position, readable on a projector or a phone; None without one."""
    stage = stage_for(position)
    built = None if isinstance(stage, str) else _build(stage, phone)
    if built is None:
        return None
    name, fig = built
    if phone and name not in (
        "mlm",
        "nsp",
    ):  # a long title is cut at 390 px; the step's heading says what it is
        fig.update_layout(title=None, margin_t=30)
    return name, readable(fig, present and not phone, max_height=FIGURE_MAX_HEIGHT)


def step_figure(stage: Stage, answer_hidden: bool, phone: bool = False) -> None:
    """The step's figure; a figure that would give away an open question waits for the reveal."""
    if answer_hidden and stage.step.key in QUESTION_STEPS:
        st.caption("The figure shows once the lecturer reveals the model's answer.")
    elif phone and stage.step.key in PROJECTOR_ONLY:
        st.caption("This step's figure is too wide for a phone: it is on the projector.")
    elif stage.step.key == "tokens":
        st.html(
            token_chip_html(
                stage.trace.tokens, stage.encoding.token_type_ids, stage.encoding.special_tokens_mask
            )
        )
    elif (shared := shared_figure(stage.position, phone, is_present())) is not None:
        chart(shared[1], shared[0], phone)


def pair_caption(position: Position) -> None:
    """The pair the class looks at, as typed (escaped)."""
    pair = f"**A:** {plain_markdown(position.text_a)}"
    if position.text_b.strip():
        pair += f"  \n**B:** {plain_markdown(position.text_b)}"
    st.markdown(pair)
