"""Your BERT: a learner's own BERT checked against ours, stage by stage (bertviz_lite.check), on their own machine."""

import os

import streamlit as st

from bertviz_lite.check import check_files
from bertviz_lite.check.advice import what_to_change
from bertviz_lite.check.compare import TOLERANCE
from bertviz_lite.check.ladder import mapping_frame, stage_ladder
from bertviz_lite.check.learner_explore import PAGES, open_learner
from bertviz_lite.check.learner_model import LearnerSpec
from bertviz_lite.check.request import check_request, start_skeleton
from bertviz_lite.check.side_by_side import stage_shape, stage_sides
from bertviz_lite.figures.check import stage_ladder_figure, stage_sides_figure
from bertviz_lite.loading.pretrained import DEFAULT_MODEL, model_sources
from bertviz_lite.server.code_gate import code_allowed
from bertviz_lite.text.display import plain_markdown
from pages_app.build._learner_source import add_learner
from pages_app.common._state import keep_choice
from pages_app.common._ui import load_model, show_figure, show_table

REPORT = "build_report"
ASKED = "build_asked"
SKELETON_NOTE = "build_skeleton_note"
EXPLORE_NOTE = "build_explore_note"
OPENED = "build_opened"

st.header("Your BERT")
allowed, why = code_allowed(st.get_option("server.address"), os.environ)
if not allowed:  # before any widget: the learner's file is never read, let alone imported
    st.info(why)
    st.stop()
st.caption(
    "Write your own BERT (docs/learners.md, Build your own BERT), give its file here and press Check: your code runs in a "
    "separate process with a time and a memory limit, filled with the weights of a tiny seeded BERT, and every "
    "stage is compared with ours. The checker uses its own 4 padded sentence pairs, not the sidebar's pair, so "
    "that the same file gives the same numbers every time."
)


def run_check() -> None:
    """Check the typed file (or, for Check again, the one checked last) and keep the report."""
    try:
        request = check_request(
            st.session_state.get("build_file", ""), st.session_state.get("build_class", "")
        )
    except ValueError as error:
        st.session_state[REPORT] = None
        st.session_state[ASKED] = str(error)
        return
    st.session_state[REPORT] = check_files([request])[0]
    st.session_state[ASKED] = None


def explore_weights() -> str:
    """The model whose weights their model runs with on the explore pages: the sidebar's, if it is one of ours."""
    chosen = st.session_state.get("model_picker", DEFAULT_MODEL)
    return chosen if chosen in model_sources() else DEFAULT_MODEL


def open_in_explore() -> None:
    """Their model (as checked last) as the sidebar's model for this session, with the sidebar model's weights."""
    try:
        request = check_request(
            st.session_state.get("build_file", ""), st.session_state.get("build_class", "")
        )
        model, tokenizer = load_model(explore_weights())
        opened = open_learner(
            LearnerSpec(request.file, request.class_name), explore_weights(), model, tokenizer
        )
    except (ValueError, OSError) as error:
        st.session_state[EXPLORE_NOTE] = str(error)
        return
    add_learner(opened)
    st.session_state[OPENED] = True


def make_skeleton() -> None:
    try:
        path = start_skeleton(st.session_state.get("build_skeleton_dir", ""))
    except ValueError as error:
        st.session_state[SKELETON_NOTE] = (False, str(error))
        return
    st.session_state["build_file"] = str(path)
    st.session_state[SKELETON_NOTE] = (True, f"Wrote {path}: fill in its TODOs, then press Check.")


left, right = st.columns([3, 1])
left.text_input(
    "Your file",
    key="build_file",
    max_chars=400,
    placeholder="my_bert/bert.py",
    help="The path of your .py file on this machine (relative to the folder the app runs in).",
)
right.text_input(
    "Class (optional)",
    key="build_class",
    max_chars=80,
    placeholder="Bert",
    help="Found by itself when it is called Bert, BERT, BertModel or BERTModel.",
)
check, again = st.columns(2)
check.button("Check", key="build_check", on_click=run_check, type="primary", icon=":material/fact_check:")
if st.session_state.get(REPORT) is not None:
    again.button(
        "Check again",
        key="build_again",
        on_click=run_check,
        icon=":material/refresh:",
        help="After you edit your file: the same file checked afresh.",
    )

with st.expander("Start a skeleton", icon=":material/note_add:"):
    st.caption(
        "The exercise's outline (shapes in comments, TODOs, no solution) as bert.py in a folder you name."
    )
    st.text_input("Folder", key="build_skeleton_dir", max_chars=400, placeholder="my_bert")
    st.button("Write the skeleton", key="build_skeleton", on_click=make_skeleton)
    if note := st.session_state.get(SKELETON_NOTE):
        written, sentence = note
        (st.success if written else st.error)(plain_markdown(sentence))

if asked := st.session_state.get(ASKED):
    st.error(plain_markdown(asked))
report = st.session_state.get(REPORT)
if report is None:
    st.stop()
subject = plain_markdown(report.subject)
if report.verdict == "match":
    st.success(f"{subject} matches BERT at every stage (tolerance {TOLERANCE:g}).")
elif report.verdict == "error":
    st.error(plain_markdown(report.findings[0].message))
    st.stop()
else:
    st.error(f"{subject} differs from BERT.")
for note in report.notes:
    st.caption(plain_markdown(note))
if report.findings:
    st.subheader("What to change")
    st.markdown(
        "\n".join(
            f"- **{plain_markdown(f.code)}** at `{f.stage}`: {plain_markdown(what_to_change(f))}"
            for f in report.findings
        )
    )


def side_by_side(report, names: list[str], event, first: int | None) -> None:
    """One stage (clicked on the ladder, or picked) as heatmaps: yours, BERT's and the difference."""
    state = st.session_state
    clicked = (
        next((point.get("y") for point in (event.selection.get("points") or [])), None) if event else None
    )
    if clicked in names and clicked != state.get("build_clicked"):
        state["build_clicked"] = state["build_stage"] = clicked
    keep_choice("build_stage", names, names[first or 0], start=True)
    stage_col, pair_col, head_col = st.columns([3, 1, 1])
    stage = stage_col.selectbox("Stage (or click one on the ladder)", names, key="build_stage")
    try:
        pairs, heads = stage_shape(report, stage)
        keep_choice("build_pair", range(1, pairs + 1), 1)
        keep_choice("build_head", range(1, heads + 1), 1)
        pair = pair_col.selectbox("Sentence pair", range(1, pairs + 1), key="build_pair", disabled=pairs == 1)
        head = head_col.selectbox("Head", range(1, heads + 1), key="build_head", disabled=heads == 1)
        sides = stage_sides(report, stage, pair - 1, head - 1)
    except ValueError as error:
        st.info(plain_markdown(str(error)))
        return
    show_figure(stage_sides_figure(sides), "stage_sides", frame=sides.to_frame)


if report.stages:
    st.subheader("Stage by stage")
    st.caption("Click a stage to see your numbers beside BERT's below.")
    ladder = stage_ladder(report)
    event = show_figure(
        stage_ladder_figure(ladder),
        "stage_ladder",
        frame=ladder.to_frame,
        on_select="rerun",
        selection_mode="points",
    )
    if report.tensors:
        side_by_side(report, ladder.stages, event, ladder.first_failing)
st.subheader("Explore it")
st.caption(
    f"Your model on the {PAGES} pages, with the weights of {plain_markdown(explore_weights())} (the sidebar's model) "
    "placed on your parameters: it runs in the separate process, one sentence pair at a time, and a view that needs "
    "something your modules do not show says so."
)
st.button(
    "Open in the explore pages", key="build_explore", on_click=open_in_explore, icon=":material/visibility:"
)
if note := st.session_state.pop(EXPLORE_NOTE, None):
    st.error(plain_markdown(note))
if st.session_state.pop(OPENED, False):
    st.switch_page("pages_app/explore/3_Attention.py")
st.caption(
    "To train it: Start from → Your BERT on the Train page, or `python -m bertviz_lite.train --model-file FILE[:CLASS]`."
)
st.subheader("Weights")
st.caption("Our seeded weights, placed on your parameters (theirs ← ours).")
show_table(mapping_frame(report), "weight_mapping", hide_index=True)
for side, whose in (("theirs", "Your parameters"), ("ours", "Our parameters")):
    if report.unmapped[side]:
        st.markdown(f"{whose} not placed: " + plain_markdown(", ".join(report.unmapped[side][:50])))
