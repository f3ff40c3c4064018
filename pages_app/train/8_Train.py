"""Train: start a pre-training run, watch it learn live, stop it, replay its attention heads forming."""

import streamlit as st

from bertviz_lite.runs import lifecycle
from bertviz_lite.server import access
from pages_app.common._ui import is_present
from pages_app.common._visitor import current_visitor
from pages_app.train._admin import admin_login
from pages_app.train._form import new_run_form
from pages_app.train._live import apply_claim, claim_link, live_view, select_run
from pages_app.train._replay import attention_replay

st.header("Train a BERT")
st.caption(
    "Pick a preset, change any option, press Start: the model trains in its own process (masked words and "
    "next sentence) and this page draws its curves as they are written. Reloading or closing the page does "
    "not stop it."
)
choices = [run for run in lifecycle.list_runs() if run.state != "ready"]
training = [run for run in choices if run.active]


def start_form(expanded: bool = False) -> None:
    """The new-run form in an expander: open where it comes first, folded away below a run's curves otherwise."""
    with st.expander("Start a new run", expanded=expanded, icon=":material/add:"):
        if len(training) >= lifecycle.max_concurrent_runs():
            st.info(
                f"{', '.join(run.name for run in training)} is training, and at most "
                f"{lifecycle.max_concurrent_runs()} run(s) may train at once: a new run can start when it ends or "
                "is stopped."
            )
        new_run_form()


if not choices:
    start_form(expanded=True)
    st.info("No training run yet: start one above.")
    st.stop()
# A visitor with no run of their own (a newcomer) gets the form first, the other runs' curves one pick below it; a
# visitor with a run sees its curves first (what a class looks at, and always on a slide), the form folded below.
newcomer = not is_present() and not any(access.is_owner(run.path, current_visitor()) for run in choices)
if newcomer:
    start_form(expanded=True)
if not is_present():  # on a slide the page title says it, and the curves need the room
    st.subheader("Watch a run")
run = select_run(choices)
apply_claim(run.path)
live_view(run.path)
claim_link(run.path)
if not access.may_change(run.path, current_visitor()):
    admin_login()  # the other way to a run started elsewhere (shown only when the server has an admin token)
if not newcomer:
    start_form()
st.subheader("Attention replay")
st.caption("The attention of one fixed sentence pair, saved every few steps: watch the heads form.")
attention_replay(run.path)
