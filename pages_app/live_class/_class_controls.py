"""The lecturer's hold on a live class: who may join, how many are expected, End class, and the typed words the
lecturer checks (and may hide with one click) before the class sees them."""

from __future__ import annotations

import streamlit as st

from bertviz_lite.server import class_results, live_class
from bertviz_lite.server.live_class import CLOZE, ClassError
from bertviz_lite.text.display import plain_markdown

ERROR = "class_lead_error"  # a refusal of the lecturer's last click, shown once
ENDED = "class_ended_here"  # this session ended its class: the lead cookie is deleted on the next run


def act(action, *args) -> None:
    """Run a lecturer's action from a button's callback; a refusal is kept for the page to show."""
    try:
        action(*args)
    except ClassError as err:
        st.session_state[ERROR] = str(err)


def _end(code: str, secret: str) -> None:
    act(live_class.end_class, code, secret)
    st.session_state[ENDED] = ERROR not in st.session_state


def _expect(code: str, secret: str) -> None:
    act(live_class.set_expected, code, secret, int(st.session_state["class_expected"]))


def class_controls(code: str, secret: str, view: live_class.ClassView) -> None:
    """Close or reopen joining, the expected head count, and End class (after a confirmation click)."""
    st.toggle(
        "Joining open",
        value=view.joining_open,
        key=f"class_joining_{view.joining_open}",
        on_change=act,
        args=(live_class.set_joining, code, secret, not view.joining_open),
        help="Closed: students already in stay; nobody new can join, with the code or the QR code.",
    )
    st.number_input(
        "Expected students",
        min_value=0,
        max_value=live_class.MAX_EXPECTED,
        step=1,
        value=view.expected,
        key="class_expected",
        on_change=_expect,
        args=(code, secret),
        help="The projector shows joined students against it.",
    )
    with st.popover("End class", icon=":material/stop_circle:", width="stretch"):
        st.caption(
            "The code, the QR code and your lecturer's link stop working at once; the answers stay for "
            "the CSV."
        )
        st.button("End the class now", key="class_end", type="primary", on_click=_end, args=(code, secret))


def _hide(code: str, secret: str, question_id: int, word: str, hidden: bool) -> None:
    act(live_class.hide_answer, code, secret, question_id, word, hidden)


def review_words(code: str, secret: str, view: live_class.ClassView) -> None:
    """A free cloze's typed words, for the lecturer only and on a click: hide one before the class sees the chart."""
    question = view.question
    if question is None or question.kind != CLOZE:
        return
    if not st.toggle(
        "Check the typed words first",
        key=f"class_review_{question.id}",
        help="Only on this screen, and only while switched on: hide a word before you reveal.",
    ):
        return
    hidden = class_results.hidden_answers(question.id)
    spread = class_results.distribution(question, with_hidden=True)
    for index, (word, count) in enumerate(spread.answers):
        shown, button = st.columns([4, 1], vertical_alignment="center")
        label = f"~~{plain_markdown(word)}~~ (hidden)" if word in hidden else plain_markdown(word)
        shown.markdown(f"{label} · {count}")
        button.button(
            "Show" if word in hidden else "Hide",
            key=f"class_hide_{question.id}_{index}",
            width="stretch",
            on_click=_hide,
            args=(code, secret, question.id, word, word not in hidden),
        )
    if not spread.answers:
        st.caption("No words yet.")
