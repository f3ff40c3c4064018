"""Streamlit glue for the training pages: a run picker kept in the URL, the live view, the attention replay.

The live view is a fragment that reruns itself every REFRESH_S seconds while the run trains and reads
only files (status.json, metrics.jsonl): there is no loop in the script, and a reload, another tab or a
restarted app shows the same run from disk.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import streamlit as st

from bertviz_lite import access, runs
from bertviz_lite.checkpoint_store import final_metrics
from bertviz_lite.checkpoints import load_snapshot, snapshot_path
from bertviz_lite.explore import model_view_selection
from bertviz_lite.figures.attention import attention_heatmap
from bertviz_lite.figures.mosaic import mosaic_figure
from bertviz_lite.figures.training import lr_curve, metric_curves, throughput_curve
from bertviz_lite.run_folder import RunFolder, read_metrics
from bertviz_lite.views.attention import attention_mosaic
from pages.common._ui import plotly_config
from pages.common._visitor import current_visitor

REFRESH_S = 2.0
REPLAY_REFRESH_S = 5.0
LOSS_METRICS = ("mlm_loss", "nsp_loss", "eval_mlm_loss", "eval_nsp_loss")
ACCURACY_METRICS = ("mlm_acc", "nsp_acc", "eval_mlm_acc", "eval_nsp_acc")
STATE_COLOURS = {"starting": "blue", "running": "blue", "finished": "green", "stopped": "orange",
                 "diverged": "red", "failed": "red", "ready": "gray"}  # fmt: skip
QUERY_KEY = "run"


def state_badge(state: str) -> str:
    """Markdown for a coloured state label."""
    return f":{STATE_COLOURS.get(state, 'gray')}-badge[{state}]"


def _remember_run(key: str) -> None:
    st.query_params[QUERY_KEY] = st.session_state[key]


def select_run(choices: list[runs.RunState], key: str = "train_run") -> runs.RunState:
    """A run picker whose choice lives in the URL (?run=NAME), so a reload or another tab shows the same run."""
    names = [run.name for run in choices]
    wanted = st.query_params.get(QUERY_KEY)
    if wanted in names:
        st.session_state[key] = wanted
    elif wanted:
        st.warning(f"There is no run named {wanted!r} here (renamed or deleted?); showing another one.")
    if st.session_state.get(key) not in names:
        st.session_state[key] = names[0]
    name = st.selectbox("Run", names, key=key, on_change=_remember_run, args=(key,),
                        help="Newest first. The page's address names the run: share it or reload it.")  # fmt: skip
    st.query_params[QUERY_KEY] = name
    return choices[names.index(name)]


# ---- the live view -------------------------------------------------------------------------------


def live_view(run_dir: Path) -> None:
    """State, progress, Stop and curves of one run; refreshed every REFRESH_S seconds only while it trains."""
    active = runs.run_state(run_dir).active
    st.fragment(run_every=REFRESH_S if active else None)(_live_panel)(run_dir, active)


def _live_panel(run_dir: Path, was_active: bool) -> None:
    run = runs.run_state(run_dir)
    if was_active and not run.active:
        st.rerun()  # a full rerun redraws the fragment without the timer, with the final numbers
    _status(run)
    records = read_metrics(run_dir)
    if not records:
        st.info("Waiting for the first metrics line…" if run.active else "This run logged no metrics.")
        return
    if not run.active:
        _final_metrics(records)
    _curves(records)


def _stop(run_dir) -> None:
    try:
        runs.stop_run(run_dir, visitor=current_visitor())
    except PermissionError as err:
        st.session_state["train_notice"] = ("error", str(err))


def _status(run: runs.RunState) -> None:
    left, right = st.columns([4, 1])
    left.markdown(f"**{run.name}** {state_badge(run.state)}")
    if run.active:
        mine = access.may_change(run.path, current_visitor())
        right.button("Stop", key="train_stop", icon=":material/stop:", on_click=_stop, args=(run.path,),
                     disabled=not mine, help="Finish the current step, save the checkpoint and stop." if mine
                     else "Another visitor started this run: only they (or the admin) can stop it.")  # fmt: skip
    eta = f" · about {_duration(run.eta_s)} left" if run.eta_s is not None and run.active else ""
    st.progress(run.progress, text=f"Step {run.step} of {run.total_steps or '?'}{eta}")
    first, _, rest = run.message.partition("\n")
    if run.state in ("failed", "diverged"):
        st.error(f"The run {run.state}: {first}")  # the reason comes first (see runs.run_state); st.error wraps
        if rest:
            st.code(rest, language=None, wrap_lines=True)  # the log's tail, wrapped: long lines stay readable
    elif run.state in ("finished", "stopped"):
        st.success(run.message)
    elif run.message:
        st.caption(run.message)
    if run.active and RunFolder(run.path).stop_requested():
        st.caption("Stopping: the run finishes its current step and saves…")


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


FINAL_SHOWN = (("MLM loss", "mlm_loss", "{:.3f}"), ("NSP loss", "nsp_loss", "{:.3f}"),
               ("held-out MLM accuracy", "eval_mlm_acc", "{:.1%}"), ("held-out NSP accuracy", "eval_nsp_acc", "{:.1%}"))  # fmt: skip


def _final_metrics(records: list[dict]) -> None:
    last = final_metrics(records)
    shown = [(label, fmt.format(last[key])) for label, key, fmt in FINAL_SHOWN if key in last]
    for column, (label, value) in zip(st.columns(max(len(shown), 1)), shown, strict=False):
        column.metric(label, value)


def _curves(records: list[dict]) -> None:
    figures = {
        "train_loss_chart": metric_curves(records, LOSS_METRICS, "Loss: train and held-out"),
        "train_accuracy_chart": metric_curves(records, ACCURACY_METRICS, "Accuracy: train and held-out"),
        "train_lr_chart": lr_curve(records, "lr"),
        "train_speed_chart": throughput_curve(records, metric="tokens_per_s"),
    }
    columns = st.columns(2) + st.columns(2)
    for column, (key, figure) in zip(columns, figures.items(), strict=True):
        figure.update_layout(height=330, margin={"t": 50, "b": 40})
        column.plotly_chart(figure, key=key, config=plotly_config(key))


# ---- attention replay ----------------------------------------------------------------------------


def attention_replay(run_dir: Path) -> None:
    """A slider over the run's snapshots: one head's map and the layers × heads mosaic at that step.

    While the run trains, the panel looks for new snapshots every REPLAY_REFRESH_S seconds and, unless
    the user moved the slider, jumps to the newest.
    """
    active = runs.run_state(run_dir).active
    st.fragment(run_every=REPLAY_REFRESH_S if active else None)(_replay_panel)(run_dir, active)


def _clamp(key: str, options: list, default) -> None:
    if st.session_state.get(key) not in options:
        st.session_state[key] = default


def _stop_following() -> None:
    st.session_state["replay_follow"] = False


def _replay_panel(run_dir: Path, active: bool) -> None:
    steps = runs.snapshot_steps(run_dir)
    if not steps:
        st.info("Waiting for the first attention snapshot…" if active else "This run saved no attention snapshot.")
        return
    st.session_state.setdefault("replay_follow", True)
    if active:
        st.toggle("Follow the newest snapshot", key="replay_follow")
    if active and st.session_state["replay_follow"]:
        st.session_state["replay_step"] = steps[-1]
    _clamp("replay_step", steps, steps[-1])
    step = st.select_slider("Training step", steps, key="replay_step", on_change=_stop_following,
                            help="Move it to watch the heads form.")  # fmt: skip
    try:
        _, attentions, tokens = load_snapshot(snapshot_path(run_dir, step))
    except ValueError as err:
        st.warning(str(err))
        return
    layers, heads = attentions.shape[:2]
    _clamp("replay_layer", list(range(layers)), 0)
    _clamp("replay_head", list(range(heads)), 0)
    left, right = st.columns(2)
    layer = left.selectbox("Layer", range(layers), key="replay_layer")
    head = right.selectbox("Head", range(heads), key="replay_head")
    st.markdown(f"**Layer {layer}, head {head} at step {step}**")
    heatmap = attention_heatmap(attentions[layer, head], tokens, title="")  # the top axis holds the keys
    st.plotly_chart(heatmap, key="replay_heatmap", config=plotly_config("replay_heatmap"))
    st.caption("Click a tile to open that head above.")
    st.plotly_chart(mosaic_figure(attention_mosaic(attentions, tokens)), key="replay_mosaic", on_select=partial(_open_tile, layers, heads),
                    selection_mode="points", config=plotly_config("replay_mosaic"))  # fmt: skip


def _open_tile(layers: int, heads: int) -> None:
    """A click on a mosaic tile selects that layer and head."""
    picked = model_view_selection(st.session_state["replay_mosaic"].selection, layers, heads)
    if picked is not None:
        st.session_state["replay_layer"], st.session_state["replay_head"] = picked
