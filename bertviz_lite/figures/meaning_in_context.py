"""Meaning in context: a word's occurrences in 2-D coloured by sense, and how well its senses separate per layer."""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from bertviz_lite.figures._common import COLUMN_TITLE_CHARS, HEAD_COLOURS, LEGEND_BELOW, wrapped
from bertviz_lite.inspection.views.meaning_in_context import (
    UNLABELLED,
    YOURS,
    ContextProjection,
    Occurrence,
    SenseSeparation,
    layer_names,
)

MAX_LEGEND_SENSES = (
    6  # more senses are drawn in one grey "other senses" group, so the legend fits a projector
)
GLOSS_CHARS = 30
NARROW_LEGEND_ROW = 24  # px a legend row takes at the app's legend font (13 px)
OTHER = "other WordNet senses"
GREY = "#7f7f7f"
LIGHT_GREY = "#c7c7c7"


def _short(text: str, limit: int = GLOSS_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _hover(o: Occurrence) -> str:
    """The sentence with the word in bold, every character of it escaped (a user may type markup)."""
    before, word, after = (
        html.escape(part) for part in (o.text[: o.start], o.text[o.start : o.end], o.text[o.end :])
    )
    gloss = f"<br><i>{html.escape(_short(o.gloss, 90))}</i>" if o.gloss else ""
    return f"{before}<b>{word}</b>{after}{gloss}"


def sense_groups(projection: ContextProjection) -> list[tuple[str, np.ndarray]]:
    """(legend name, occurrence numbers) per group: the commonest senses, other senses, the user's, unlabelled."""
    senses = np.array([o.sense for o in projection.occurrences], dtype=object)
    labelled = [s for s in projection.glosses if s not in (UNLABELLED, YOURS)]
    shown = labelled[:MAX_LEGEND_SENSES]
    rest = labelled[MAX_LEGEND_SENSES:]
    groups = []
    for sense in shown:
        members = np.flatnonzero(senses == sense)
        gloss = projection.glosses[sense]
        groups.append((html.escape(f"{_short(gloss) if gloss else sense} ({len(members)})"), members))
    for name, members in (
        (OTHER, np.flatnonzero(np.isin(senses, rest))),
        (YOURS, np.flatnonzero(senses == YOURS)),
        (UNLABELLED, np.flatnonzero(senses == UNLABELLED)),
    ):
        if members.size:
            groups.append((f"{name} ({members.size})", members))
    return groups


def _marker(name: str, number: int) -> dict:
    if name.startswith(UNLABELLED):
        return {"color": LIGHT_GREY, "size": 8, "symbol": "circle-open"}
    if name.startswith(OTHER):
        return {"color": GREY, "size": 8}
    if name.startswith(YOURS) or f"({YOURS})" in name:
        return {
            "color": HEAD_COLOURS[number % len(HEAD_COLOURS)],
            "size": 13,
            "symbol": "diamond",
            "line": {"width": 1, "color": "#111111"},
        }
    return {"color": HEAD_COLOURS[number % len(HEAD_COLOURS)], "size": 11}


def context_scatter(
    projection: ContextProjection,
    word: str,
    chosen: int | None = None,
    height: int = 480,
    narrow: bool = False,
) -> go.Figure:
    """One point per occurrence of the word, coloured by sense (gloss in the legend, sentence on hover).

    chosen: the occurrence whose neighbours are listed, ringed. customdata is the occurrence number.
    narrow: for a phone's width: the legend in rows under the plot (beside it, it took two thirds of the width and
    covered points) and the title on two lines; the figure grows by the legend's rows.
    """
    fig = go.Figure()
    for number, (name, members) in enumerate(sense_groups(projection)):
        fig.add_trace(
            go.Scatter(
                x=projection.points[members, 0],
                y=projection.points[members, 1],
                mode="markers",
                name=name,
                customdata=members,
                hovertext=[_hover(projection.occurrences[i]) for i in members],
                marker=_marker(name, number),
                hovertemplate="%{hovertext}<extra></extra>",
            )
        )
    if chosen is not None and 0 <= chosen < len(projection.occurrences):
        fig.add_trace(
            go.Scatter(
                x=[projection.points[chosen, 0]],
                y=[projection.points[chosen, 1]],
                mode="markers",
                name="neighbours of this one",
                hoverinfo="skip",
                marker={"size": 22, "symbol": "circle-open", "color": "#111111", "line": {"width": 3}},
            )
        )
    where = layer_names(projection.num_layers)[projection.layer]
    heading = f"“{html.escape(word)}” in {len(projection.occurrences)} sentences, {where}"
    fig.update_layout(
        title=f"{heading}: first two principal components",
        xaxis_title="PC 1",
        yaxis_title="PC 2",
        height=height,
        margin={"t": 50, "b": 40, "l": 50, "r": 10},
        legend={"title": {"text": "sense (sentences)"}, "itemsizing": "constant"},
    )
    if narrow:
        legend_px = NARROW_LEGEND_ROW * (
            len(fig.data) + 1
        )  # one entry a row on a phone, and the legend's title
        fig.update_layout(
            title=f"{heading}<br>first two principal components",
            height=height + legend_px,
            margin={"t": 75, "b": 40, "l": 50, "r": 10},  # plotly adds the legend's rows to the bottom margin
            legend={**LEGEND_BELOW, "title": {"side": "top"}},
        )
    return fig


def _separation_traces(separation: SenseSeparation, layer: int | None, names: list[str]) -> list[go.Scatter]:
    """The accuracy line, the static-embedding and chance baselines (where defined), the shown layer ringed."""
    traces = [
        go.Scatter(
            x=names,
            y=separation.accuracy * 100,
            mode="lines+markers",
            name="in context",
            line={"color": HEAD_COLOURS[0], "width": 3},
            hovertemplate="%{x}: %{y:.0f}%<extra></extra>",
        )
    ]
    for value, name, dash in (
        (separation.static, "static embedding", "dash"),
        (separation.chance, "chance", "dot"),
    ):
        if np.isfinite(value):
            traces.append(
                go.Scatter(
                    x=[names[0], names[-1]],
                    y=[value * 100] * 2,
                    mode="lines",
                    name=name,
                    line={"color": GREY, "dash": dash},
                    hoverinfo="skip",
                )
            )
    if layer is not None and np.isfinite(separation.accuracy[layer]):
        traces.append(
            go.Scatter(
                x=[names[layer]],
                y=[separation.accuracy[layer] * 100],
                mode="markers",
                name="shown above",
                marker={"size": 16, "color": "#d62728", "symbol": "circle-open", "line": {"width": 3}},
                hoverinfo="skip",
            )
        )
    return traces


def separation_figure(
    separation: SenseSeparation, layer: int | None = None, height: int = 300, narrow: bool = False
) -> go.Figure:
    """Leave-one-out nearest-centroid accuracy per layer, with the static-embedding and chance baselines.

    narrow: for a column of a laptop's screen or a phone: the title and the x-axis title in lines that fit (on one
    they ran past both edges of a 204-px column), the margins grown by their second lines.
    """
    names = layer_names(len(separation.accuracy) - 1)
    fig = go.Figure(_separation_traces(separation, layer, names))
    title = "Senses told apart: accuracy by layer"
    axis_title = (
        f"layer (leave-one-out over {separation.num_scored} sentences, {separation.num_senses} senses)"
    )
    fig.update_layout(
        title=wrapped(title, COLUMN_TITLE_CHARS) if narrow else title,
        xaxis={
            "title": {"text": wrapped(axis_title, COLUMN_TITLE_CHARS) if narrow else axis_title},
            "tickangle": 0,
            "tickvals": names,
            "ticktext": ["emb.", *(str(i) for i in range(1, len(names)))],
        },
        # The unit on the ticks, not in a rotated axis title: on a short slide that title ran into the chart's own.
        yaxis={"ticksuffix": "%", "range": [0, 105]},
        height=height,
        # The legend sits at the figure's bottom edge in pixels, under the axis title at any height (placed as a share
        # of the plot, it ran into the title when presentation mode made the chart shorter).
        margin={"t": 75 if narrow else 50, "b": 130 if narrow else 110, "l": 50, "r": 10},
        legend=LEGEND_BELOW,
    )
    return fig
