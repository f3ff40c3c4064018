"""The Train page's attention replay: the probe pair's snapshots replayed, with Play and Follow.

Each snapshot file is summarised once (replay.read_summary, cached per version of the file) and a few
frames of full maps are kept (replay.replay_frame); each figure is built once from them and shared (show_figure's
partial), so Play, Follow and a class watching one run draw a snapshot's figures once.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import plotly.graph_objects as go
import streamlit as st

from bertviz_lite.check.learner_run import predictions_gap, replay_gap
from bertviz_lite.figures.replay import (
    guesses_bar,
    prediction_curves,
    replay_heatmap,
    replay_model_view,
    specialisation_heatmap,
)
from bertviz_lite.inspection.analysis import attention_to_csv_frame
from bertviz_lite.inspection.views import replay
from bertviz_lite.loading.checkpoints import file_version, snapshot_path
from bertviz_lite.runs import lifecycle
from bertviz_lite.text.display import plain_markdown
from pages_app.common._state import KEEP, keep_choice
from pages_app.common._ui import SHARED, on_tile_click, show_figure

REPLAY_REFRESH_S = 5.0
PLAY_S = 1.2  # seconds per snapshot while Play is on
PLAYING = "replay_playing"
HOLD = "replay_hold"
OPEN = "replay_open"


def attention_replay(run_dir: Path) -> None:
    """The run's snapshots replayed: one head's map, the model view, the probe's predictions, head patterns.

    The panel is a fragment. While Play is on it reruns every PLAY_S seconds and each run shows the next
    snapshot; while the run trains it looks for new snapshots every REPLAY_REFRESH_S seconds and, unless
    the user moved the slider, jumps to the newest. Starting or pausing Play reruns the page once, which
    sets the fragment's timer anew.

    It is drawn when the user opens it (a toggle, kept across page visits): its five charts cost a page load about
    a CPU-second of the browser's drawing, paid by every visitor, most of whom come for the curves or the form.
    """
    if not st.toggle(
        "Show the replay",
        key=OPEN,
        on_change=_stop_playing,
        persist_state=KEEP,
        help="One head's map, the model view, the probe's predictions and when heads specialise, step by step.",
    ):
        return
    active = lifecycle.run_state(run_dir).active
    playing = bool(st.session_state.get(PLAYING))
    every = PLAY_S if playing else REPLAY_REFRESH_S if active else None
    st.fragment(run_every=every)(_replay_panel)(run_dir, active, playing)


def _stop_playing() -> None:
    """Opening or closing the replay starts it paused (a closed replay has no timer to play on)."""
    st.session_state[PLAYING] = False


def _stop_following() -> None:
    st.session_state["replay_follow"] = False
    st.session_state[PLAYING] = False


def _hold() -> None:
    """A widget changed while playing: show this step again instead of moving on."""
    st.session_state[HOLD] = True


def _toggle_play(steps: list[int]) -> None:
    playing = not st.session_state.get(PLAYING)
    st.session_state[PLAYING] = playing
    st.session_state[HOLD] = True
    if playing:
        st.session_state["replay_follow"] = False
        if st.session_state.get("replay_step") == steps[-1]:
            st.session_state["replay_step"] = steps[0]  # Play at the end starts again from the first snapshot


def _play_tick(steps: list[int]) -> None:
    """While playing, each run of the panel moves to the next snapshot; Play ends at the last one."""
    if not st.session_state.get(PLAYING) or st.session_state.pop(HOLD, False):
        return
    later = replay.next_step(steps, st.session_state.get("replay_step"))
    if later is None:
        st.session_state[PLAYING] = False
    else:
        st.session_state["replay_step"] = later


def _retime(was_playing: bool) -> None:
    """A full rerun when Play started or stopped since the fragment was set up, to set its timer anew."""
    if bool(st.session_state.get(PLAYING)) != was_playing:
        st.rerun()


def _replay_panel(run_dir: Path, active: bool, was_playing: bool) -> None:
    steps = lifecycle.snapshot_steps(run_dir)
    if not steps:
        gap = replay_gap(run_dir)  # a learner's model whose attention keeps its probabilities inside
        waiting = (
            "Waiting for the first attention snapshot…" if active else "This run saved no attention snapshot."
        )
        st.info(plain_markdown(gap) if gap else waiting)
        return
    _retime(was_playing)  # before the tick: the run that follows a Play click keeps the first step
    _play_tick(steps)
    _retime(was_playing)  # Play just ended at the last snapshot
    step = _step_controls(steps, active)
    lapse = run_replay(str(run_dir), tuple(steps))
    if step not in lapse.steps:
        st.warning(f"The snapshot of step {step} could not be read (being written, or not a snapshot).")
        return
    zrange = _colour_range(lapse)
    path = snapshot_path(run_dir, step)
    try:
        frame = replay_frame(str(path), file_version(path))
    except ValueError:
        st.warning(f"The snapshot of step {step} could not be read (being written, or not a snapshot).")
        return
    _head_and_predictions(frame, lapse, step, zrange, predictions_gap(run_dir))
    st.caption("Click a tile to open that head above.")
    show_figure(
        partial(replay_model_view, frame.overview, zrange=zrange),
        "replay_mosaic",
        frame.overview.to_frame,
        selection_mode="points",
        on_select=partial(_open_tile, *frame.attentions.shape[:2]),
    )
    _specialisation(lapse, step)


def _step_controls(steps: list[int], active: bool) -> int:
    """Play/Pause, the step slider and (while the run trains) Follow; returns the step to show."""
    st.session_state.setdefault("replay_follow", True)
    if active and st.session_state["replay_follow"] and not st.session_state.get(PLAYING):
        st.session_state["replay_step"] = steps[-1]
    keep_choice("replay_step", steps, steps[-1], start=True)
    play, slider = st.columns([1, 6], vertical_alignment="bottom")
    playing = st.session_state.get(PLAYING)
    play.button(
        "Pause" if playing else "Play",
        key="replay_play",
        icon=":material/pause:" if playing else ":material/play_arrow:",
        on_click=_toggle_play,
        args=(steps,),
        disabled=len(steps) < 2,
        help=f"Step through the snapshots, one every {PLAY_S:g} s.",
    )
    step = slider.select_slider(
        "Training step",
        steps,
        key="replay_step",
        on_change=_stop_following,
        help="Move it to watch the heads form.",
    )
    if active:
        st.toggle("Follow the newest snapshot", key="replay_follow", on_change=_hold)
    return step


def _colour_range(lapse: replay.Replay) -> tuple[float, float]:
    scale = st.radio(
        "Colour scale",
        replay.COLOUR_SCALES,
        key="replay_scale",
        horizontal=True,
        on_change=_hold,
        help="The same colours at every step, so an untrained head (every weight about 1/T) looks "
        "flat rather than patterned.",
    )
    zrange = replay.colour_range(scale, lapse.largest_weight)
    st.caption(
        f"Colours run from {zrange[0]:g} (white) to {zrange[1]:.3g} (dark blue) at every step"
        + ("." if scale == replay.COLOUR_SCALES[0] else ": the largest weight in any snapshot of this run.")
    )
    return zrange


def _head_and_predictions(
    frame: replay.ReplayFrame, lapse: replay.Replay, step: int, zrange: tuple[float, float], gap: str | None
) -> None:
    attentions = frame.attentions
    tokens = frame.tokens
    layers, heads = attentions.shape[:2]
    keep_choice("replay_layer", range(layers), 0, start=True)
    keep_choice("replay_head", range(heads), 0, start=True)
    left, right = st.columns([3, 2])
    pick_layer, pick_head = left.columns(2)
    layer = pick_layer.selectbox("Layer", range(layers), key="replay_layer", on_change=_hold)
    head = pick_head.selectbox("Head", range(heads), key="replay_head", on_change=_hold)
    with left:
        st.markdown(f"**Layer {layer}, head {head} at step {step}**")
        weights = attentions[layer, head]
        show_figure(
            partial(_head_map, frame, layer=layer, head=head, zrange=zrange),
            "replay_heatmap",
            lambda: attention_to_csv_frame(weights, tokens).assign(step=step, layer=layer, head=head),
        )
    with right:
        _predictions(lapse.predictions, step, gap)


def _head_map(frame: replay.ReplayFrame, layer: int, head: int, zrange: tuple[float, float]) -> go.Figure:
    """One head's map in a snapshot's frame (a cached frame and plain picks: show_figure shares what it builds)."""
    return replay_heatmap(frame.attentions[layer, head], frame.tokens, zrange)


def _predictions(series: replay.PredictionSeries, step: int, gap: str | None) -> None:
    """The probe pair's MLM guesses and NSP probability at this step, and both over the steps."""
    if not series.steps:
        st.info(
            plain_markdown(gap)
            if gap
            else "This run's snapshots hold no MLM/NSP predictions: it was trained before they were saved, "
            "or its model has no MLM and NSP heads."
        )
        return
    index = series.at(step)
    if index is None:
        st.info(f"The snapshot of step {step} holds no predictions; the chart below shows the steps that do.")
    else:
        st.markdown(
            f"NSP head at step {step}: B follows A with probability **{series.is_next_prob[index]:.1%}**"
        )
        show_figure(partial(guesses_bar, series, step=step), "replay_guesses", series.to_frame)
    show_figure(partial(prediction_curves, series, step=step), "replay_predictions", series.to_frame)


def _specialisation(lapse: replay.Replay, step: int) -> None:
    """Per head and step, the share of attention to one pattern (picked), from every snapshot."""
    st.markdown("**When heads specialise**")
    pattern = st.radio(
        "Attention to",
        replay.PATTERNS,
        key="replay_pattern",
        horizontal=True,
        on_change=_hold,
        format_func=replay.PATTERN_LABELS.get,
    )
    st.caption(
        "Each cell: the share of a head's attention that goes to this target, averaged over the probe "
        "pair's tokens (padding left out). A head turns dark when it specialises."
    )
    spec = lapse.specialisation
    show_figure(
        partial(specialisation_heatmap, spec, pattern=pattern, step=step),
        "replay_specialisation",
        spec.to_frame,
    )


def _open_head(layer: int, head: int) -> None:
    st.session_state["replay_layer"] = layer
    st.session_state["replay_head"] = head


def _open_tile(layers: int, heads: int) -> None:
    """A click on a model-view tile selects that layer and head (and, while playing, shows this step again)."""
    on_tile_click("replay_mosaic", layers, heads, _open_head)()
    _hold()


# ---- cached reading: each snapshot is summarised once, a few frames of maps are kept --------------


# In the shared cache (bounded in bytes, idle entries dropped): a summary is a few numbers per head, a base-preset
# frame 4.7 MB.
def read_summary(path: str, version: int) -> replay.SnapshotSummary | None:
    """replay.read_summary, once per version of the file."""
    return SHARED.get(("replay_summary", path, version), partial(replay.read_summary, path))


def run_replay(run_dir: str, steps: tuple[int, ...]) -> replay.Replay:
    """The time-lapse of a run's snapshots at these steps; a new snapshot costs one new summary."""
    return SHARED.get(("run_replay", run_dir, steps), partial(_run_replay, run_dir, steps))


def _run_replay(run_dir: str, steps: tuple[int, ...]) -> replay.Replay:
    with st.spinner("Reading the run's snapshots…"):
        paths = [snapshot_path(run_dir, step) for step in steps]
        summaries = [read_summary(str(path), file_version(path)) for path in paths]
        return replay.replay([summary for summary in summaries if summary is not None])


def replay_frame(path: str, version: int) -> replay.ReplayFrame:
    """replay.replay_frame, once per version of the file."""
    return SHARED.get(("replay_frame", path, version), partial(replay.replay_frame, path))
