"""The student's side of a live class: join with the code, follow the lecturer, answer once per question.

The screen follows without a click: a fragment reads the class's version every POLL_S seconds (one indexed
SELECT) and reruns the page only when the lecturer has moved, asked or revealed.
"""

from __future__ import annotations

import streamlit as st

from bertviz_lite.server import access, class_joining, live_class
from bertviz_lite.server.class_joining import MAX_WORD_CHARS
from bertviz_lite.server.live_class import CLOZE, ClassError
from bertviz_lite.text.display import plain_markdown
from pages_app.common._visitor import current_visitor
from pages_app.live_class._lecturer import POLL_S, distribution_figure
from pages_app.live_class._stage import chart, pair_caption, stage_for, step_figure, step_header

JOINED = "class_joined"  # (code, student id) of the class this session follows
SEEN = "class_seen_version"
SAID = "class_said"  # the answer's refusal, shown once
CODE_BOX = "class_code"


def joined() -> tuple[str, str] | None:
    return st.session_state.get(JOINED)


def join(code: str, token: str = "") -> bool:
    """Join the class with this code (and the QR link's token) as this browser's student; a refusal in words."""
    visitor = current_visitor().id
    address = access.client_address(st.context.ip_address)
    try:
        student = class_joining.join(code, visitor, address, token=token)
    except ClassError as err:
        st.error(plain_markdown(err))
        return False
    st.session_state[JOINED] = (live_class.normalise_code(code), student)
    return True


def join_form() -> None:
    """A box for the code on the projector (a ?class=CODE link joins by itself)."""
    with st.form("class_join_form", border=False, enter_to_submit=True):
        st.text_input(
            "Join code (on the projector)",
            key=CODE_BOX,
            max_chars=2 * live_class.CODE_LENGTH,
            placeholder="e.g. " + "K7" * (live_class.CODE_LENGTH // 2),
        )
        submitted = st.form_submit_button(
            "Join the class", type="primary", icon=":material/login:", width="stretch"
        )
    if submitted and join(st.session_state.get(CODE_BOX, "")):
        st.rerun()


def _answer(code: str, student: str, question_id: int, text: str) -> None:
    try:
        class_joining.answer(
            code, student, question_id, text, address=access.client_address(st.context.ip_address)
        )
    except ClassError as err:
        st.session_state[SAID] = str(err)


def _ask(code: str, student: str, view: live_class.ClassView) -> None:
    question = view.question
    st.markdown(f"#### {plain_markdown(question.prompt)}")
    if SAID in st.session_state:
        st.warning(plain_markdown(st.session_state.pop(SAID)))
    if view.my_answer is not None:
        st.success(f"Answer received: **{plain_markdown(view.my_answer)}**", icon=":material/check_circle:")
    elif view.revealed:
        st.info("Answers are closed: the model's answer has been revealed.")
    elif question.kind == CLOZE:
        with st.form(f"class_cloze_{question.id}", border=False):
            word = st.text_input("Your word", max_chars=MAX_WORD_CHARS, key=f"class_word_{question.id}")
            if st.form_submit_button("Send", type="primary", width="stretch"):
                _answer(code, student, question.id, word)
                st.rerun()
    else:
        for index, option in enumerate(question.options):
            st.button(
                plain_markdown(option),
                key=f"class_option_{question.id}_{index}",
                width="stretch",
                on_click=_answer,
                args=(code, student, question.id, option),
            )
    if view.revealed:
        right = view.my_answer is not None and view.my_answer == question.answer
        (st.success if right else st.info)(
            plain_markdown(question.explanation or f"The model: {question.answer}.")
        )


@st.fragment(run_every=POLL_S)
def _follow(code: str, student: str, version: int) -> None:
    """Rerun the page when the class has changed (one indexed SELECT per tick)."""
    view = live_class.current(code, student)
    if view is None or view.version != version:
        st.rerun(scope="app")


def follow(code: str, student: str) -> None:
    """The student's screen: the lecturer's step and pair, the question with its buttons, the figure."""
    view = live_class.current(code, student)
    if view is None:
        st.warning("This class has ended.")
        st.button("Join another class", on_click=st.session_state.pop, args=(JOINED, None), key="class_leave")
        return
    stage = stage_for(view.position)
    if isinstance(stage, str):
        st.error(plain_markdown(stage))
    else:
        step_header(stage)
    pair_caption(view.position)
    if view.question is not None:
        _ask(code, student, view)
        if view.revealed:
            chart(
                distribution_figure(None if isinstance(stage, str) else stage, view.question, phone=True),
                "distribution",
                phone=True,
            )
    cloze_shown = (
        view.question is not None and view.question.kind == CLOZE and view.revealed
    )  # it has the top 5
    if not isinstance(stage, str) and not cloze_shown:
        step_figure(stage, answer_hidden=view.question is not None and not view.revealed, phone=True)
    st.caption(f"Class {view.code}: your screen follows the lecturer.")
    _follow(code, student, view.version)
