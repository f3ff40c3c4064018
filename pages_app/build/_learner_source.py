"""A learner's model as the sidebar's model for this session, the explore pages' glue: kept beside the Build page that
opens it (Your BERT; Checkpoints opens a run that trained one). Their model runs in the checker's child process
(bertviz_lite.check.learner_explore), never in the app's."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import streamlit as st

from bertviz_lite.check.learner_explore import (
    LABEL,
    OUR_INTERNALS,
    LearnerModel,
    LearnerRunFailed,
    learner_trace,
)
from bertviz_lite.inspection import explore
from bertviz_lite.server import access
from bertviz_lite.server.code_gate import code_allowed
from bertviz_lite.text.display import plain_markdown
from bertviz_lite.text.tokenization import BertTokenizer

LEARNERS = "learner_models"  # {the model picker's entry: LearnerModel} opened this session


def learner_sources() -> dict[str, LearnerModel]:
    """The learner's models opened this session, by their entry in the sidebar's model picker."""
    return st.session_state.get(LEARNERS, {})


def is_learner_entry(option: str) -> bool:
    """Whether a model picker entry is a learner's model: it starts with LABEL and a space, which no checkpoint's
    name has (the session is not read: a picker's format_func may run outside the script's run)."""
    return option.startswith(f"{LABEL}: ")


def add_learner(model: LearnerModel) -> None:
    """Their model as the sidebar's model from now on (call from a widget's callback: the picker is a widget)."""
    st.session_state.setdefault(LEARNERS, {})[model.key] = model
    st.session_state["model_picker"] = model.key


def learner_version(source: str) -> str | None:
    """A learner's model's version for the caches (its file's content hash when opened); None for our models."""
    model = learner_sources().get(source)
    return model.sha256 if model else None


def learner_context(source: str, shown_here: bool) -> tuple[LearnerModel, BertTokenizer] | None:
    """(their model, its tokenizer) when the sidebar's model is a learner's, None when it is ours; ValueError with the
    sentence when this page does not show a learner's model (shown_here) or this server may not run their code."""
    model = learner_sources().get(source)
    if model is None:
        return None
    allowed, why = code_allowed(st.get_option("server.address"), os.environ)
    if not (shown_here and allowed):
        raise ValueError(OUR_INTERNALS if allowed else why)
    return model, model.tokenizer


def source_trace(ctx, masked: Sequence[int], load_model: Callable) -> explore.PairTrace:
    """The pair's trace by the sidebar's model (ctx: _ui.Context): ours traced here, a learner's run in the checker's
    child process with its weights (a model source's, loaded by `load_model`, or its run's own)."""
    if not isinstance(ctx.model, LearnerModel):
        return explore.trace_encoding(ctx.model, ctx.tokenizer, ctx.encoding, ctx.max_length, masked)
    reference = None if ctx.model.own_weights else load_model(ctx.model.weights)[0]
    return learner_trace(ctx.model, ctx.encoding, masked, reference)


@contextmanager
def said_when_hidden(stop: bool = True) -> Iterator[None]:
    """A view of a learner's model that needs what their modules hide, or whose run failed: one sentence, and the page
    ends there (only a learner's trace raises these); with stop=False, a hidden part's view is skipped and the page
    goes on."""
    try:
        yield
    except explore.NotExposed as err:
        st.info(plain_markdown(str(err)))
        if stop:
            st.stop()
    except LearnerRunFailed as err:
        st.error(plain_markdown(str(err)))
        st.stop()


def bert_weights(ctx) -> str | None:
    """The model source whose weights the sidebar's learner's model runs with ("Compare with BERT" shows that BERT);
    None when the sidebar's model is ours, or a learner run's own weights (no BERT has them). ctx: _ui.Context."""
    model = ctx.model
    return model.weights if isinstance(model, LearnerModel) and not model.own_weights else None


def reference_context(ctx, load_model: Callable):
    """The same pair by the BERT of `bert_weights(ctx)`: ctx (_ui.Context) with our model of that source."""
    source = bert_weights(ctx)
    ours, tokenizer = load_model(source)
    inputs = ctx.inputs._replace(source=source, version=access.fenced_version(source))
    return ctx._replace(inputs=inputs, model=ours, tokenizer=tokenizer)
