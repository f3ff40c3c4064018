"""The Train page's run picker (kept in the URL) and live view: state, progress, Stop, final numbers, curves.

The live view is a fragment that reruns itself every REFRESH_S seconds while the run trains and reads
only files (status.json, metrics.jsonl): there is no loop in the script, and a reload, another tab or a
restarted app shows the same run from disk.
"""

from __future__ import annotations

import time
from pathlib import Path

import streamlit as st

from bertviz_lite.check.learner_run import run_note
from bertviz_lite.figures.training import curve_frame, lr_curve, metric_curves, throughput_curve
from bertviz_lite.loading.run_folder import RunFolder, read_metrics
from bertviz_lite.runs import lifecycle
from bertviz_lite.runs.store import final_metrics
from bertviz_lite.server import access
from bertviz_lite.text.display import plain_markdown
from bertviz_lite.training import metrics
from pages_app.common._state import keep_choice
from pages_app.common._ui import is_present, show_figure
from pages_app.common._visitor import current_visitor
from pages_app.train._admin import admin_login

REFRESH_S = 2.0
# Until its first metrics line, a run just started refreshes its (small) panel faster: its first progress and
# points show within a fraction of a second, not up to REFRESH_S later; then a full rerun sets the steady pace.
FIRST_METRICS_REFRESH_S = 0.5
# For its first FIRST_METRICS_WINDOW_S seconds of training at most: a run that logs rarely (a large "Log every") has
# no first line for a long while, and each tab watching it reran twice a second all that time.
FIRST_METRICS_WINDOW_S = 5.0
# Stop waits this long for the run to end (its step, a save, the final status: well under a second for a small
# run), so that the page says "Stopped" at once; a longer save is shown by the refresh as before.
STOP_WAIT_S = REFRESH_S
STATE_COLOURS = {
    "starting": "blue",
    "running": "blue",
    "finished": "green",
    "stopped": "orange",
    "diverged": "red",
    "failed": "red",
    "ready": "gray",
}
QUERY_KEY = "run"
CLAIM_KEY = "claim"


def state_badge(state: str) -> str:
    """Markdown for a coloured state label."""
    return f":{STATE_COLOURS.get(state, 'gray')}-badge[{state}]"


def _remember_run(key: str) -> None:
    st.query_params[QUERY_KEY] = st.session_state[key]


def select_run(choices: list[lifecycle.RunState], key: str = "train_run") -> lifecycle.RunState:
    """A run picker whose choice lives in the URL (?run=NAME), so a reload or another tab shows the same run."""
    names = [run.name for run in choices]
    wanted = st.query_params.get(QUERY_KEY)
    if wanted in names:
        # Only a change is written: a write on every rerun would undo a pick made while one runs.
        if st.session_state.get(key) != wanted:
            st.session_state[key] = wanted
    elif wanted:
        st.warning(
            f"There is no run named “{plain_markdown(wanted)}” here (renamed or deleted?); showing another one."
        )
    keep_choice(key, names, names[0], start=True)
    name = st.selectbox(
        "Run",
        names,
        key=key,
        on_change=_remember_run,
        args=(key,),
        help="Newest first. The page's address names the run: share it or reload it.",
    )
    st.query_params[QUERY_KEY] = name
    return choices[names.index(name)]


def live_view(run_dir: Path) -> None:
    """State, progress, Stop and curves of one run; refreshed every REFRESH_S seconds only while it trains
    (every FIRST_METRICS_REFRESH_S until its first metrics line, in its first FIRST_METRICS_WINDOW_S seconds)."""
    run = lifecycle.run_state(run_dir)
    first = _awaiting_first_metrics(run)
    every = (FIRST_METRICS_REFRESH_S if first else REFRESH_S) if run.active else None
    st.fragment(run_every=every)(_live_panel)(run_dir, run.active, first)


def _awaiting_first_metrics(run: lifecycle.RunState) -> bool:
    """A run that trains, has no metrics line yet and started at most FIRST_METRICS_WINDOW_S ago (or is starting)."""
    young = run.started_at is None or time.time() - run.started_at < FIRST_METRICS_WINDOW_S
    return run.active and young and not _has_metrics(run.path)


def _has_metrics(run_dir: Path) -> bool:
    """Whether the run has written a metrics line (its file is not empty), without reading it."""
    try:
        return RunFolder(run_dir).metrics.stat().st_size > 0
    except OSError:
        return False


def _live_panel(run_dir: Path, was_active: bool, awaiting_metrics: bool = False) -> None:
    run = lifecycle.run_state(run_dir)
    if was_active and not run.active:
        st.rerun()  # a full rerun redraws the fragment without the timer, with the final numbers
    if awaiting_metrics and not _awaiting_first_metrics(run):
        st.rerun()  # its first points (or none within the window): a full rerun sets the steady REFRESH_S
    _status(run)
    if note := run_note(run_dir):  # a learner's own model: whose, and MLM only where it has no NSP head
        st.caption(plain_markdown(note))
    records = read_metrics(run_dir)
    if not records:
        _outcome(run)
        st.info("Waiting for the first metrics line…" if run.active else "This run logged no metrics.")
        return
    above = st.container() if is_present() else None  # a projector: the curves right under the progress bar
    _outcome(run)
    if not run.active:
        _final_metrics(records)
    with above or st.container():
        _curves(records, run.name)


def _stop(run_dir) -> None:
    try:
        lifecycle.stop_run(run_dir, visitor=current_visitor())
    except PermissionError as err:
        st.session_state["train_notice"] = ("error", str(err))
        return
    lifecycle.wait_until_ended(run_dir, STOP_WAIT_S)  # the rerun that follows then shows how it ended


NOT_MINE = (
    "Started on another browser: only its owner, a browser that opened the owner's claim link, or the "
    "admin may stop, rename or delete it."
)


def apply_claim(run_dir: Path) -> None:
    """A claim link (?run=NAME&claim=CODE) opened here makes this browser an owner of the run, once."""
    code = st.query_params.get(CLAIM_KEY)
    if code is None:
        return
    del st.query_params[CLAIM_KEY]  # not left in the address bar, nor in links copied from it
    try:
        st.success(access.claim(run_dir, current_visitor(), code))
    except PermissionError as err:
        st.error(str(err))


def claim_link(run_dir: Path) -> None:
    """For the run's owner: the link that makes another browser (the lecture hall's) an owner too."""
    code = access.claim_code(run_dir, current_visitor())
    if code is None:
        return
    base = (st.context.url or "http://localhost:8501").split("?")[0]
    with st.expander("Control this run from another browser", icon=":material/devices:"):
        st.code(f"{base}?{QUERY_KEY}={run_dir.name}&{CLAIM_KEY}={code}", language=None, wrap_lines=True)
        st.markdown(
            "Open this link on the other browser (the lecture hall's computer, say): it may then stop, "
            "rename and delete this run too. Keep it to yourself."
        )


def _status(run: lifecycle.RunState) -> None:
    left, right = st.columns([4, 1])
    left.markdown(f"**{run.name}** {state_badge(run.state)}")
    mine = access.may_change(run.path, current_visitor())
    if run.active:
        right.button(
            "Stop",
            key="train_stop",
            icon=":material/stop:",
            on_click=_stop,
            args=(run.path,),
            disabled=not mine,
            help="Finish the current step, save the checkpoint and stop." if mine else NOT_MINE,
        )
        if (
            not mine
        ):  # said on the page, not only on hover: presentation mode hides captions, a projector has no hover
            st.info(NOT_MINE, icon=":material/lock:")
            admin_login()  # the lecturer can stop any run
    eta = f" · {run.eta_text}" if run.eta_text else ""
    st.progress(run.progress, text=f"Step {run.step} of {run.total_steps or '?'}{eta}")


def _outcome(run: lifecycle.RunState) -> None:
    """How the run ended (or what it is doing), in words."""
    if run.state in ("failed", "diverged"):
        reason, details = run.report_for(
            access.may_change(run.path, current_visitor())
        )  # others: no log, no paths
        st.error(f"The run {run.state}: {plain_markdown(reason)}")  # st.error wraps
        if details:
            st.code(
                details, language=None, wrap_lines=True
            )  # the log's tail, wrapped: long lines stay readable
    elif run.state in ("finished", "stopped"):
        st.success(run.message)
    elif run.message:
        st.caption(run.message)
    if run.active and RunFolder(run.path).stop_requested():
        st.caption("Stopping: the run finishes its current step and saves…")


def _final_metrics(records: list[dict]) -> None:
    row = st.container(
        horizontal=True, gap="medium"
    )  # each as wide as its label (in quarters at 1024 px, cut)
    for label, value in metrics.headline(final_metrics(records)):
        row.metric(label, value, width="content")


def _curves(records: list[dict], name: str) -> None:
    """Loss, accuracy, learning rate and speed, two by two, in projector style, each with its numbers as CSV."""
    labels = {key: metric.label for key, metric in metrics.METRICS.items()}
    figures = {
        "train_loss_chart": (
            metric_curves(records, metrics.LOSS_CURVES, "Loss: train and held-out", labels=labels),
            metrics.LOSS_CURVES,
        ),
        "train_accuracy_chart": (
            metric_curves(records, metrics.ACCURACY_CURVES, "Accuracy: train and held-out", labels=labels),
            metrics.ACCURACY_CURVES,
        ),
        "train_lr_chart": (lr_curve(records, "lr"), ("lr",)),
        "train_speed_chart": (throughput_curve(records, metric="tokens_per_s"), ("tokens_per_s",)),
    }
    columns = st.columns(2) + st.columns(2)
    for column, (key, (figure, shown)) in zip(columns, figures.items(), strict=True):
        figure.update_layout(height=330, margin={"t": 50, "b": 40})
        with column:
            show_figure(figure, key, frame=lambda shown=shown: curve_frame({name: records}, shown))
