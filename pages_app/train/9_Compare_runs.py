"""Compare runs: overlay the curves of several runs and set their hyperparameters side by side."""

from functools import partial

import streamlit as st

from bertviz_lite.figures.training import compare_runs, curve_frame
from bertviz_lite.runs import lifecycle, store
from bertviz_lite.training.metrics import METRICS
from pages_app.common._state import keep_choices
from pages_app.common._ui import show_figure

st.header("Compare runs")
records, notes = store.compared_metrics([run.name for run in lifecycle.list_runs()])
if not records:
    st.info("No run has logged metrics yet: start one on the Train page.")
    st.stop()
names = list(records)
st.session_state.setdefault("compare_runs", names[:2])
keep_choices("compare_runs", names)
chosen = st.multiselect("Runs", names, key="compare_runs")
metric = st.selectbox(
    "Metric", list(METRICS), key="compare_metric", format_func=lambda key: METRICS[key].label
)
if not chosen:
    st.info("Choose one or more runs.")
    st.stop()
runs = {name: records[name] for name in chosen}
figure = partial(
    compare_runs,
    runs,
    metric,
    title=METRICS[metric].label,
    label=METRICS[metric].label,
    log_y=st.toggle("Log scale", key="compare_log"),
)
show_figure(
    figure(),
    "compare_runs",
    frame=lambda: curve_frame(runs, [metric]),
    key="compare_chart",
    narrow=figure(narrow=True),
)
for note in notes:
    st.caption(note)

st.subheader("Hyperparameters")
table = store.hyperparameter_table(chosen)
if table.empty:
    st.info("These runs have no train_args.json (uploaded checkpoints, or runs that never started).")
    st.stop()
st.session_state.setdefault("compare_differ", True)
if st.toggle("Only the hyperparameters that differ", key="compare_differ"):
    table = store.differing_rows(table)
st.dataframe(table, key="compare_table", width="stretch")
