"""The lecturer's side of a live class: start it, show the join code and QR code, move it, ask, reveal, download.

The lecturer's secret stays in this browser session, in an HttpOnly cookie (a reload still leads; page scripts
cannot read it) and in a private link, shown only on a click and never in presentation mode; the projector shows
the code and the QR code's join link. Closing joining, the head count, End class and hiding a typed word before
the reveal are in pages_app/live_class/_class_controls.py.
"""

from __future__ import annotations

import io
import time
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import segno
import streamlit as st

from bertviz_lite.figures.live_class import class_answers_figure, class_cloze_figure
from bertviz_lite.figures.style import readable
from bertviz_lite.inspection import walkthrough as walk
from bertviz_lite.server import access, class_results, cookie_handoff, live_class
from bertviz_lite.server.live_class import CLOZE, ClassError, Position
from bertviz_lite.text.display import plain_markdown
from pages_app.common._sidebar import Inputs, current_inputs
from pages_app.common._state import keep_choice
from pages_app.common._ui import SLIDE_BOTTOM, is_present
from pages_app.common._visitor import current_visitor
from pages_app.live_class._class_controls import ENDED, ERROR, act, class_controls, review_words
from pages_app.live_class._stage import (
    Stage,
    chart,
    model_top,
    pair_caption,
    questions,
    stage_for,
    step_figure,
    step_header,
)

LEAD = "class_lead"  # (code, secret) of the class this session leads
LEAD_COOKIE = cookie_handoff.LEAD_COOKIE  # CODE.SECRET, HttpOnly: a reload of the lecturer's page still leads
LEAD_PARAM = "lead"  # the private link's query parameter, removed from the URL once read
JOIN_PARAM = (
    "join"  # the QR code link's join token (live_class.join_token): not subject to the wrong-code limit
)
STEP = "class_step"
LAYER = "class_layer"
HEAD = "class_head"
ANSWERS_MAX_HEIGHT = SLIDE_BOTTOM - 450  # on a 1280 × 720 slide the class's answers start ~450 px down
POLL_S = 1.0  # the projector's live count, and how often students' screens look for a move


def _take_up(code: str, secret: str) -> bool:
    """This session leads the class from where it is, if `secret` is its lecturer's and it has not ended."""
    view = live_class.current(code) if live_class.is_lecturer(code, secret) else None
    if view is None:
        return False
    position = view.position  # the pair comes with the page's URL (a=, b=), which the sidebar read
    st.session_state.update(
        {LEAD: (code, secret), STEP: position.step, LAYER: position.layer, HEAD: position.head}
    )
    return True


def leading() -> tuple[str, str] | None:
    """(code, secret) when this session leads a class: kept in the session, else from a private link
    (?class=…&lead=…) or this browser's lecturer cookie (a reload), each checked first."""
    secret = st.query_params.get(LEAD_PARAM)
    if secret:
        del st.query_params[LEAD_PARAM]  # off the projector's address bar
        if not _take_up(live_class.normalise_code(st.query_params.get("class", "")), secret):
            st.error("This lecturer's link is not valid (or its class has ended).")
    elif LEAD not in st.session_state:
        kept = st.context.cookies.get(LEAD_COOKIE)
        code, _, secret = kept.partition(".") if isinstance(kept, str) else ("", "", "")
        if secret:
            _take_up(code, secret)
    return st.session_state.get(LEAD)


def set_lead_cookie(value: str, max_age: int) -> None:
    """Have the browser fetch the lead cookie (HttpOnly, SameSite=Strict; "" and 0 delete it)."""
    nonce = cookie_handoff.park(cookie_handoff.ParkedCookie(LEAD_COOKIE, value, max(0, int(max_age))))
    st.html(cookie_handoff.fetch_script(nonce), unsafe_allow_javascript=True)


def _remember_lead(code: str, secret: str, expires_at: float) -> None:
    """Once per session, keep the class's code and key in an HttpOnly cookie, so a reload still leads it."""
    if st.session_state.get("class_lead_cookie") == code:
        return
    st.session_state["class_lead_cookie"] = code
    set_lead_cookie(f"{code}.{secret}", expires_at - time.time())  # both parts are cookie-safe characters


def _position(inputs: Inputs) -> Position:
    state = st.session_state
    return Position(
        inputs.source,
        inputs.text_a,
        inputs.text_b,
        walk.clamp_step(state.get(STEP, 1)),
        int(state.get(LAYER, 0)),
        int(state.get(HEAD, 0)),
    )


def start_button() -> None:
    """Start a class on the sidebar's pair."""
    if st.button("Start a class", type="primary", icon=":material/co_present:", key="class_start"):
        try:
            st.session_state[LEAD] = live_class.start_class(
                _position(current_inputs()),
                owner=current_visitor().id,
                address=access.client_address(st.context.ip_address),
            )
        except ClassError as err:
            st.error(plain_markdown(err))
            return
        st.rerun()


def _join_panel(code: str, secret: str, view: live_class.ClassView) -> None:
    """The code, large, and a QR code of the join link with its token (a PNG, no network), for the projector."""
    base = (st.context.url or "").split("?")[0] or "http://localhost:8501/class"
    link = f"{base}?{urlencode({'class': code, JOIN_PARAM: live_class.join_token(code, secret)})}"
    qr = io.BytesIO()
    segno.make(link, error="m").save(qr, kind="png", scale=8, border=2)
    st.html(
        f'<div style="text-align:center;line-height:1.2">Join with the QR code or the code'
        f'<div class="bvl-join-code" style="font:700 2.6rem/1.2 monospace;letter-spacing:0.1em">{code}</div></div>'
    )
    st.image(qr.getvalue(), width="stretch", caption=link)
    _head_count(code, view.expected, view.joining_open)


@st.fragment(run_every=POLL_S)
def _head_count(code: str, expected: int, joining_open: bool) -> None:
    """Joined students, live, against the head count the lecturer expects."""
    joined = class_results.student_count(code)
    st.metric(
        "Students",
        f"{joined} of {expected}" if expected else joined,
        help=None if joining_open else "Joining is closed: nobody new can join.",
    )
    if not joining_open:
        st.caption("Joining is closed.")


def _go(to: int) -> None:
    st.session_state[STEP] = walk.clamp_step(to)


def _controls(stage: Stage) -> None:
    step = walk.clamp_step(st.session_state.get(STEP, 1))
    back, pick, forward = st.columns([1, 3, 1], vertical_alignment="bottom")
    back.button(
        "Previous",
        on_click=_go,
        args=(step - 1,),
        disabled=step == 1,
        key="class_prev",
        width="stretch",
        icon=":material/arrow_back:",
    )
    pick.selectbox(
        "Step", range(1, len(walk.STEPS) + 1), key=STEP, format_func=lambda n: walk.STEPS[n - 1].title
    )
    forward.button(
        "Next",
        on_click=_go,
        args=(step + 1,),
        disabled=step == len(walk.STEPS),
        key="class_next",
        type="primary",
        width="stretch",
        icon=":material/arrow_forward:",
    )
    if walk.STEPS[step - 1].key == "one_head":
        config = stage.model.config
        keep_choice(LAYER, range(config.num_hidden_layers), 0)  # another model: its own layers and heads
        keep_choice(HEAD, range(config.num_attention_heads), 0)
        layer, head, _ = st.columns([1, 1, 3])
        layer.selectbox("Layer", range(config.num_hidden_layers), key=LAYER)
        head.selectbox("Head", range(config.num_attention_heads), key=HEAD)


def _question_controls(code: str, secret: str, stage: Stage, view: live_class.ClassView) -> None:
    asked = view.question is not None
    choices = questions(stage)
    if not choices and not asked:
        st.caption("This step asks no question; Next goes on (steps with questions: one head, MLM, NSP).")
    columns = st.columns(len(choices) + 1)
    for column, (label, question) in zip(columns, choices.items(), strict=False):
        column.button(
            label,
            key=f"class_ask_{question.kind}",
            on_click=act,
            width="stretch",
            args=(live_class.ask, code, secret, question),
            icon=":material/help:",
            type="secondary" if asked else "primary",
        )
    if asked and not view.revealed:
        columns[-1].button(
            "Reveal the model's answer",
            key="class_reveal",
            type="primary",
            width="stretch",
            on_click=act,
            args=(live_class.reveal, code, secret),
            icon=":material/visibility:",
        )
    if ERROR in st.session_state:
        st.error(plain_markdown(st.session_state.pop(ERROR)))


@st.fragment(run_every=POLL_S)
def _live_count(code: str, question_id: int) -> None:
    """The projector's count of answers so far, refreshed while the question is open."""
    count = class_results.answer_count(question_id)
    students = class_results.student_count(code)
    st.metric("Answers so far", f"{count} of {students}", border=True)


def distribution_figure(stage: Stage | None, question: live_class.AskedQuestion, phone: bool = False):
    """The class's answers beside the model's: bars for a choice; for a cloze the words next to its top 5."""
    spread = class_results.distribution(question)
    answers = [a for a, _ in spread.answers]
    counts = [c for _, c in spread.answers]
    if question.kind == CLOZE and stage is not None:
        top = model_top(stage)
        fig = class_cloze_figure(answers, counts, top["token"].tolist(), top["probability"], stacked=phone)
    else:
        fig = class_answers_figure(answers, counts, question.answer)
    return readable(fig, is_present() and not phone, max_height=ANSWERS_MAX_HEIGHT)


def _question_area(code: str, view: live_class.ClassView, stage: Stage) -> None:
    question = view.question
    if question is None:
        return
    st.markdown(f"**Asked:** {plain_markdown(question.prompt)}")
    if not view.revealed:
        _live_count(code, question.id)
        return
    st.success(plain_markdown(question.explanation or f"The model's answer: {question.answer}."))
    chart(distribution_figure(stage, question), "distribution", phone=False)


def _ended(code: str, secret: str) -> None:
    """The lecturer's screen once the class has ended: the CSV, a new class; the lead cookie goes."""
    if st.session_state.pop(ENDED, False) or st.session_state.get("class_lead_cookie") == code:
        set_lead_cookie("", 0)
        st.session_state.pop("class_lead_cookie", None)
    st.warning(
        "This class has ended: its code and links no longer work. Its answers can still be downloaded."
    )
    _downloads(code, secret)
    st.button("Start a new class", key="class_new", on_click=st.session_state.pop, args=(LEAD, None))


def lead(code: str, secret: str) -> None:
    """The lecturer's screen: the join panel and the class's controls beside the step, its question and figure."""
    view = live_class.current(code)
    if view is None:
        _ended(code, secret)
        return
    _remember_lead(code, secret, view.expires_at)
    main, side = st.columns([3, 1], gap="medium")
    with side:
        _join_panel(code, secret, view)
        class_controls(code, secret, view)
    with main:
        stage = stage_for(view.position)
        if isinstance(stage, str):
            st.error(plain_markdown(stage))
            return
        _controls(stage)
        position = _position(current_inputs())
        if position != view.position:
            view = _moved(code, secret, position)
            stage = stage_for(view.position)
            if isinstance(stage, str):
                st.error(plain_markdown(stage))
                return
        step_header(stage)
        pair_caption(view.position)
        _question_controls(code, secret, stage, view)
        review_words(code, secret, view)
        _question_area(code, view, stage)
        step_figure(stage, answer_hidden=view.question is not None and not view.revealed)
    with side:
        _downloads(code, secret)
        _lecturer_link(code, secret)


def _moved(code: str, secret: str, position: Position) -> live_class.ClassView:
    try:
        live_class.move(code, secret, position)
    except ClassError as err:
        st.error(plain_markdown(err))
    return live_class.current(code)


def _downloads(code: str, secret: str) -> None:
    st.download_button(
        "Answers as CSV",
        data=lambda: class_results.results_csv(code, secret),
        file_name=f"class-{code}.csv",
        mime="text/csv",
        key="class_csv",
        on_click="ignore",
        icon=":material/download:",
        width="stretch",
    )


def _lecturer_link(code: str, secret: str) -> None:
    """The private link that leads this class from another tab or browser."""
    if is_present() or not st.toggle("Show the lecturer's link", key="class_show_link", value=False):
        return  # on the projector never; otherwise only on a click (the secret is not even sent before)
    st.caption("Keep it private: it leads this class from another tab or browser, with the same pair.")
    st.code(
        _with_query(st.context.url or "", {"class": code, LEAD_PARAM: secret}), language=None, wrap_lines=True
    )


def _with_query(url: str, extra: dict[str, str]) -> str:
    """The page's URL (its a= and b= included) with these parameters set."""
    parts = urlsplit(url)
    query = {**dict(parse_qsl(parts.query)), **extra}
    return urlunsplit(parts._replace(query=urlencode(query)))
