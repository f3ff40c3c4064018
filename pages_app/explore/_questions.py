"""Predict, then reveal: a question about what the model will do, a Reveal button, then the model's answer."""

from __future__ import annotations

import streamlit as st

from bertviz_lite.inspection.walkthrough import Question, check_answer
from bertviz_lite.text.display import plain_markdown


def _reveal(key: str, signature: str) -> None:
    st.session_state[f"walk_reveal_{key}"] = (signature, st.session_state.get(f"walk_choice_{key}"))


def _ask_again(key: str) -> None:
    st.session_state.pop(f"walk_reveal_{key}", None)


def ask(question: Question, key: str) -> bool:
    """The question and a Reveal button; once revealed, whether the learner was right. True when revealed.

    A new input makes a new question (its signature), so an old reveal does not carry over.
    """
    stored = st.session_state.get(f"walk_reveal_{key}")
    if stored and stored[0] == question.signature:
        verdict = check_answer(question, stored[1])
        box, again = st.columns([5, 1.4], vertical_alignment="center")
        (box.success if verdict.correct else box.warning)(plain_markdown(verdict.message))
        again.button("Ask again", key=f"walk_again_{key}", on_click=_ask_again, args=(key,), width="stretch")
        return True
    st.radio(
        f"**Your guess.** {plain_markdown(question.prompt)}",
        question.options,
        index=None,
        horizontal=True,
        key=f"walk_choice_{key}",
        format_func=plain_markdown,
    )  # options are vocab tokens: shown as text
    st.button(
        "Reveal the model's answer",
        key=f"walk_reveal_button_{key}",
        on_click=_reveal,
        args=(key, question.signature),
        type="primary",
        icon=":material/visibility:",
    )
    return False
