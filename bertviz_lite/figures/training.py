"""Training curves from metric records (the dicts of a run's metrics JSON-lines file)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
import plotly.graph_objects as go

from bertviz_lite.figures._common import LEGEND_BELOW
from bertviz_lite.limits import MAX_POINTS_DRAWN, recorded_number

# What `bertviz_lite.figures` offers at its top (its __init__ lists them by name).
__all__ = [
    "compare_runs",
    "curve_frame",
    "lr_curve",
    "metric_curves",
    "throughput_curve",
]


def _is_number(value) -> bool:
    return (
        recorded_number(value) is not None
    )  # a 400-digit int is no number to draw (math.isfinite overflows)


def downsample(xs: list, ys: list, max_points: int = MAX_POINTS_DRAWN) -> tuple[list, list]:
    """At most `max_points` evenly spaced points of a curve, its first and last kept."""
    if len(xs) <= max_points:
        return xs, ys
    picks = sorted({round(i * (len(xs) - 1) / (max_points - 1)) for i in range(max_points)})
    return [xs[i] for i in picks], [ys[i] for i in picks]


def metric_points(records: Sequence[Mapping], metric: str, x: str = "step") -> tuple[list, list]:
    """(xs, ys) of the records that hold a finite number for both x and metric, downsampled to MAX_POINTS_DRAWN."""
    pairs = [(r[x], r[metric]) for r in records if _is_number(r.get(x)) and _is_number(r.get(metric))]
    return downsample([p[0] for p in pairs], [p[1] for p in pairs])


def _line_chart(traces: list[go.Scatter], title: str, x: str, y_title: str, log_y: bool) -> go.Figure:
    fig = go.Figure(traces)
    fig.update_layout(
        title=title,
        xaxis_title=x.replace("_", " "),
        yaxis_title=y_title,
        hovermode="x unified",
        yaxis_type="log" if log_y else "linear",
    )
    return fig


def _name(metric: str, labels: Mapping[str, str] | None) -> str:
    return (labels or {}).get(metric) or metric.replace("_", " ")


def metric_curves(
    records: Sequence[Mapping],
    metrics: Sequence[str],
    title: str = "Training metrics",
    x: str = "step",
    log_y: bool = False,
    labels: Mapping[str, str] | None = None,
) -> go.Figure:
    """One line per metric against x; records missing a metric (or holding NaN/None) are skipped.

    labels: how people read each metric key ("MLM accuracy (held-out)" for eval_mlm_acc); else the key, spaced.
    Several metrics get their legend in rows under the plot.
    """
    traces = []
    for metric in metrics:
        xs, ys = metric_points(records, metric, x)
        traces.append(
            go.Scatter(
                x=xs, y=ys, mode="lines+markers" if len(xs) < 50 else "lines", name=_name(metric, labels)
            )
        )
    y_title = _name(metrics[0], labels) if len(metrics) == 1 else "value"
    fig = _line_chart(traces, title, x, y_title, log_y)
    if len(metrics) > 1:  # beside the plot, four entries left it ~100 px in half a 1024-px page
        fig.update_layout(legend=LEGEND_BELOW)
    return fig


def curve_frame(
    runs: Mapping[str, Sequence[Mapping]], metrics: Sequence[str], x: str = "step"
) -> pd.DataFrame:
    """The numbers behind the curves, long form: one row per run, metric and x (the charts' CSV)."""
    rows = [
        {"run": name, "metric": metric, x: px, "value": py}
        for name, records in runs.items()
        for metric in metrics
        for px, py in zip(*metric_points(records, metric, x), strict=True)
    ]
    return pd.DataFrame(rows, columns=["run", "metric", x, "value"])


def compare_runs(
    runs: Mapping[str, Sequence[Mapping]],
    metric: str,
    x: str = "step",
    title: str | None = None,
    log_y: bool = False,
    label: str | None = None,
    narrow: bool = False,
) -> go.Figure:
    """One line per run (keyed by run name) for the same metric; label: how people read it (the y axis).

    narrow: for a phone's width: the runs' legend in rows under the plot (beside it, it took a third of the width).
    """
    traces = []
    for name, records in runs.items():
        xs, ys = metric_points(records, metric, x)
        traces.append(go.Scatter(x=xs, y=ys, mode="lines", name=str(name)))
    label = label or metric.replace("_", " ")
    fig = _line_chart(traces, title or f"{label} by run", x, label, log_y)
    if narrow:
        fig.update_layout(legend=LEGEND_BELOW)
    return fig


def lr_curve(records: Sequence[Mapping], metric: str = "lr", x: str = "step") -> go.Figure:
    """Learning-rate schedule as logged (warm-up, then decay)."""
    return metric_curves(records, [metric], "Learning rate", x)


def throughput_curve(records: Sequence[Mapping], metric: str = "tokens_per_s", x: str = "step") -> go.Figure:
    """Training speed as logged, e.g. tokens per second."""
    return metric_curves(records, [metric], "Throughput", x)
