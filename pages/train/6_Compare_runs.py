"""Compare runs: overlay the curves of several runs and set their hyperparameters side by side."""

import pandas as pd
import streamlit as st

from bertviz_lite.figures.training import compare_runs
from bertviz_lite.loading.run_folder import checkpoints_root, read_metrics
from bertviz_lite.runs import lifecycle
from bertviz_lite.runs.run_options import labels
from bertviz_lite.training.metrics import METRICS
from pages.common._state import keep_choices
from pages.common._ui import plotly_config

st.header("Compare runs")
records = {run.name: read_metrics(run.path) for run in lifecycle.list_runs()}
records = {name: lines for name, lines in records.items() if lines}
if not records:
    st.info("No run has logged metrics yet: start one on the Train page.")
    st.stop()
names = list(records)
st.session_state.setdefault("compare_runs", names[:2])
keep_choices("compare_runs", names)
chosen = st.multiselect("Runs", names, key="compare_runs")
metric = st.selectbox("Metric", list(METRICS), key="compare_metric", format_func=lambda key: METRICS[key].label)
if not chosen:
    st.info("Choose one or more runs.")
    st.stop()
figure = compare_runs({name: records[name] for name in chosen}, metric, title=METRICS[metric].label,
                      log_y=st.toggle("Log scale", key="compare_log"))  # fmt: skip
st.plotly_chart(figure, key="compare_chart", config=plotly_config("compare_runs"))

st.subheader("Hyperparameters")
table = pd.DataFrame({name: lifecycle.hyperparameters(checkpoints_root() / name) for name in chosen})
if table.empty:
    st.info("These runs have no train_args.json (uploaded checkpoints, or runs that never started).")
    st.stop()
table = table.drop(index="out", errors="ignore")  # the folder: the column names say it
st.session_state.setdefault("compare_differ", True)
if st.toggle("Only the hyperparameters that differ", key="compare_differ") and len(chosen) > 1:
    table = table[table.astype(str).nunique(axis=1) > 1]
label_of = labels()
table.index = [label_of.get(name, name) for name in table.index]
st.dataframe(table.astype(str), key="compare_table", width="stretch")
