"""Tests for the plotly figure builders: the data read back from each figure is the data put in."""

import math
from functools import partial

import numpy as np
import plotly.graph_objects as go
import pytest

from bertviz_lite import figures
from bertviz_lite.figures._common import COLUMN_TITLE_CHARS, NARROW_TITLE_CHARS, PHONE_FIGURE_WIDTH
from bertviz_lite.figures.attention import _attention_heatmap, _rollout_heatmap
from bertviz_lite.figures.embeddings import (
    _component_norms_bar,
    _embedding_parts_figure,
    _pca_scatter,
    _position_similarity_heatmap,
    _uncluttered_labels,
)
from bertviz_lite.figures.meaning_in_context import separation_figure
from bertviz_lite.figures.predictions import _nsp_bar, _topk_bar
from bertviz_lite.figures.tokens import chip_classes
from bertviz_lite.inspection import analysis, views
from bertviz_lite.inspection.views import HeadStatistics, NeuronView, select_links
from bertviz_lite.inspection.views.meaning_in_context import SenseSeparation
from tests.attention_samples import SEGMENTS, TOKENS, random_attention
from tests.trace_arrays import pair_trace


def line_traces(fig: go.Figure) -> list:
    """The head view's line traces, without the legend entries (level 0, one gap and no line)."""
    return [t for t in fig.data if t.mode == "lines" and t.meta["level"]]


def segment_count(trace) -> int:
    return len(trace.x) // 3


# ---------------------------------------------------------------- tokens


def test_token_chip_html_classes_escaping_and_meta():
    tokens = ["[CLS]", "<script>", "##gy", "[UNK]", "[SEP]", "it", "[MASK]", "[SEP]", "[PAD]"]
    html = figures.token_chip_html(
        tokens,
        [0, 0, 0, 0, 0, 1, 1, 1, 0],
        [1, 0, 0, 0, 1, 0, 0, 1, 1],
        decisions=[0, 0, 1, 2, 0, 3, 0, 0, 0],
    )
    assert "<script>" not in html and "&lt;script&gt;" in html
    chips = html.split('<div class="bvl-chips">')[1].split('<div class="bvl-legend">')[0]
    for css in (
        "bvl-cls",
        "bvl-sep",
        "bvl-pad",
        "bvl-unk",
        "bvl-piece",
        "bvl-seg-a",
        "bvl-seg-b",
        "bvl-masktoken",
        "bvl-dec-mask",
        "bvl-dec-random",
        "bvl-dec-kept",
    ):
        assert css in chips, css
    assert 'class="bvl-chip bvl-seg-a bvl-piece bvl-dec-mask"' in chips  # "##gy", masked
    assert '<span class="bvl-meta">5 · 1</span>' in html  # position and segment under "it"
    assert html.count('<span class="bvl-meta">') == len(tokens)
    assert "bvl-legend" not in figures.token_chip_html(["a"], [0], [0], legend=False).split("</style>")[1]


def test_chip_classes_per_kind():
    assert chip_classes("[CLS]", 0, True) == ["bvl-chip", "bvl-cls"]
    assert chip_classes("##gy", 1, False, 1) == ["bvl-chip", "bvl-seg-b", "bvl-piece", "bvl-dec-mask"]
    with pytest.raises(ValueError, match="masking decision"):
        chip_classes("a", 0, False, 7)
    with pytest.raises(ValueError, match="token_type_ids"):
        figures.token_chip_html(["a", "b"], [0], [0, 0])


# ---------------------------------------------------------------- attention maps


def test_attention_heatmap_returns_input_and_unique_labels():
    attn = random_attention(8, 8)
    fig = _attention_heatmap(attn, TOKENS, TOKENS, "Layer 0 head 1")
    trace = fig.data[0]
    np.testing.assert_array_equal(np.asarray(trace.z), attn)
    np.testing.assert_allclose(np.asarray(trace.z).sum(1), 1.0)
    assert "→" in trace.hovertemplate and trace.hovertemplate.startswith("%{y} → %{x}")
    assert list(trace.y) == [
        "[CLS] (0)",
        "the (1)",
        "dog (2)",
        "##gy (3)",
        "[SEP] (4)",
        "it (5)",
        "ran (6)",
        "[SEP] (7)",
    ]
    assert len(set(trace.x)) == 8  # the two [SEP] stay apart
    assert fig.layout.title.text == "Layer 0 head 1" and fig.layout.yaxis.type == "category"


def test_rollout_heatmap():
    rollout = analysis.attention_rollout(random_attention(2, 2, 8, 8))[-1]
    fig = _rollout_heatmap(rollout, TOKENS)
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), rollout)
    assert fig.layout.title.text == "Attention rollout"


def test_head_view_one_legend_group_per_head_and_focus():
    attn = random_attention(3, 8, 8)
    fig = figures.head_view_figure(select_links(attn, TOKENS, top_k=8, min_weight=0.0))
    lines = line_traces(fig)
    assert {t.legendgroup for t in lines} == {"head 0", "head 1", "head 2"}
    assert [t.name for t in fig.data if t.showlegend] == ["head 0", "head 1", "head 2"]
    assert not any(t.showlegend for t in lines)
    assert sum(segment_count(t) for t in lines) == 3 * 8 * 8  # every (head, query, key) once
    assert all(t.line.color.startswith("rgba(") for t in lines)
    token_columns = [t for t in fig.data if t.mode != "lines"]
    assert [list(t.text) for t in token_columns] == [TOKENS, TOKENS]
    assert "%{text}" in token_columns[0].hovertemplate
    focused = line_traces(
        figures.head_view_figure(
            select_links(attn, TOKENS, heads=[1], focus_token=2, top_k=8, min_weight=0.0)
        )
    )
    assert {t.legendgroup for t in focused} == {"head 1"}
    assert sum(segment_count(t) for t in focused) == 8
    left_ends = np.concatenate([np.asarray(t.y)[0::3] for t in focused])
    assert set(left_ends.tolist()) == {2.0}


def test_head_view_weights_levels_threshold_and_mask():
    attn = np.zeros((1, 3, 3))
    attn[0] = [[0.9, 0.095, 0.005], [0.5, 0.5, 0.0], [0.31, 0.31, 0.38]]
    fig = figures.head_view_figure(select_links(attn, ["[CLS]", "a", "[SEP]"]))
    lines = line_traces(fig)
    assert sum(segment_count(t) for t in lines) == 7  # the 0.005 and 0.0 lines are dropped
    by_level = {t.meta["level"]: segment_count(t) for t in lines}
    assert by_level == {1: 1, 2: 3, 3: 2, 5: 1}  # weight w goes to level ceil(5 w)
    assert [t.line.color.endswith(",1)") for t in lines if t.meta["level"] == 5] == [True]
    mask = np.zeros((3, 3), bool)
    mask[0, 0] = True
    only = line_traces(figures.head_view_figure(select_links(attn, ["[CLS]", "a", "[SEP]"], mask=mask)))
    assert [(list(t.x[:2]), list(t.y[:2])) for t in only if len(t.x)] == [([0.0, 1.0], [0.0, 0.0])]


def test_head_view_rejects_bad_heads():
    with pytest.raises(ValueError, match="heads"):
        figures.head_view_figure(select_links(random_attention(2, 4, 4), list("abcd"), heads=[2]))


def test_large_inputs_build_with_capped_sizes():
    tokens = [f"w{i}" for i in range(512)]
    attn = random_attention(2, 2, 512, 512)
    heads = figures.head_view_figure(select_links(attn[0], tokens, top_k=20))
    lines = line_traces(heads)
    assert sum(segment_count(t) for t in lines) <= 2 * 512 * 20
    assert heads.layout.height <= 4000
    assert _attention_heatmap(attn[0, 0], tokens, tokens).data[0].z.shape == (512, 512)


def test_neuron_view_figure_shows_every_step():
    rng = np.random.default_rng(3)
    q, k, v = (rng.normal(size=(8, 4)) for _ in range(3))
    neuron = analysis.attention_steps(q, k, v, 1, key_mask=[1] * 7 + [0])
    fig = figures.neuron_view_figure(NeuronView(neuron, TOKENS, 1))
    by_name = {t.name: t for t in fig.data}
    np.testing.assert_array_equal(np.asarray(by_name["query"].z), q[1:2])
    np.testing.assert_array_equal(np.asarray(by_name["keys"].z), k)
    np.testing.assert_array_equal(np.asarray(by_name["q × k"].z), q[1] * k)
    np.testing.assert_allclose(np.asarray(by_name["softmax weight"].x), neuron.weights)
    np.testing.assert_allclose(np.asarray(by_name["q · k"].x), k @ q[1])
    np.testing.assert_allclose(np.asarray(by_name["output"].z)[0], neuron.weights @ v)
    assert by_name["q · k / √d (grey = masked)"].marker.color[-1] == "#bbbbbb"
    assert fig.layout.title.text == "Neuron view for query the (1)"


def test_head_statistics_figure():
    stats = HeadStatistics(analysis.attention_statistics(random_attention(2, 3, 8, 8), TOKENS))
    fig = figures.head_statistics_figure(stats, "to_cls")
    z = np.asarray(fig.data[0].z)
    assert z.shape == (2, 3) and z[1, 2] == pytest.approx(
        stats.table.query("layer == 1 and head == 2")["to_cls"].item()
    )
    assert list(fig.data[0].x) == ["H0", "H1", "H2"] and list(fig.data[0].y) == ["L0", "L1"]
    with pytest.raises(ValueError, match="not in the head statistics"):
        figures.head_statistics_figure(stats, "nope")


# ---------------------------------------------------------------- embeddings


def test_embedding_parts():
    rng = np.random.default_rng(0)
    parts = [rng.normal(size=(8, 6)) for _ in range(5)]
    fig = _embedding_parts_figure(*parts, tokens=TOKENS)
    assert len(fig.data) == 5
    for trace, part in zip(fig.data, parts, strict=True):
        np.testing.assert_array_equal(np.asarray(trace.z), part)
    assert [t.coloraxis for t in fig.data] == ["coloraxis"] * 4 + ["coloraxis2"]
    assert fig.layout.coloraxis.cmax == pytest.approx(
        np.percentile(np.abs(np.stack(parts[:4])), 98)
    )  # robust range
    assert _embedding_parts_figure(*parts, tokens=TOKENS, layout="column").layout.yaxis5.type == "category"


def test_component_norms_bar_and_similarity_and_pca():
    rng = np.random.default_rng(0)
    parts = [rng.normal(size=(8, 6)) for _ in range(5)]
    norms = analysis.embedding_component_norms(*parts, tokens=TOKENS)
    bars = _component_norms_bar(norms)
    assert [t.name for t in bars.data] == list(analysis.EMBEDDING_PARTS.values())
    np.testing.assert_allclose(np.asarray(bars.data[3].y), np.linalg.norm(parts[3], axis=1))
    sim = analysis.cosine_similarity_matrix(analysis.sinusoidal_position_table(16, 8))
    heat = _position_similarity_heatmap(sim, "Sinusoidal positions")
    np.testing.assert_array_equal(np.asarray(heat.data[0].z), sim)
    points = analysis.pca_2d(parts[4])
    scatter = _pca_scatter(points, TOKENS, SEGMENTS)
    assert [t.name for t in scatter.data] == ["sentence A", "sentence B"]
    assert list(scatter.data[1].text) == ["it", "ran", "[SEP]"]
    np.testing.assert_allclose(np.asarray(scatter.data[1].x), points[5:, 0])
    for fig in (bars, scatter):  # beside the plot, a legend took two thirds of a phone's width
        assert fig.layout.legend.orientation == "h" and fig.layout.legend.yanchor == "bottom"


# ---------------------------------------------------------------- predictions and training


def test_topk_bar_highest_on_top_and_nsp_bar():
    fig = _topk_bar(["cat", "1", "dog"], [0.2, 0.1, 0.7], "Predictions for [MASK] (3)")
    assert list(fig.data[0].y) == ["dog", "cat", "1"] and list(fig.data[0].x) == [0.7, 0.2, 0.1]
    assert fig.layout.yaxis.autorange == "reversed" and fig.layout.yaxis.type == "category"
    nsp = _nsp_bar(0.8)
    assert list(nsp.data[0].y) == ["IsNext", "NotNext"]
    np.testing.assert_allclose(nsp.data[0].x, [0.8, 0.2])
    with pytest.raises(ValueError, match="probability"):
        _nsp_bar(1.5)


def test_training_curves_skip_missing_values():
    records = [
        {"step": 0, "loss": 5.0, "lr": 0.0},
        {"step": 10, "loss": 4.0, "lr": 1e-4, "val_loss": 4.5},
        {"step": 20, "loss": float("nan"), "lr": 2e-4},
        {"step": 30, "loss": None, "lr": 1e-4, "tokens_per_s": 900.0},
    ]
    fig = figures.metric_curves(records, ["loss", "val_loss"], "Loss")
    assert [t.name for t in fig.data] == ["loss", "val loss"]
    assert list(fig.data[0].x) == [0, 10] and list(fig.data[0].y) == [5.0, 4.0]
    assert list(fig.data[1].x) == [10] and list(fig.data[1].y) == [4.5]
    assert list(figures.lr_curve(records).data[0].y) == [0.0, 1e-4, 2e-4, 1e-4]
    assert list(figures.throughput_curve(records).data[0].x) == [30]
    runs = figures.compare_runs({"a": records, "b": records[:2]}, "loss")
    assert [t.name for t in runs.data] == ["a", "b"] and list(runs.data[1].y) == [5.0, 4.0]
    assert not any(math.isnan(y) for t in runs.data for y in t.y)
    # Legends in rows under the plot where they would crowd it: several metrics, and the runs on a phone.
    assert (
        fig.layout.legend.orientation == "h" and figures.lr_curve(records).layout.legend.orientation is None
    )
    assert runs.layout.legend.orientation is None
    phone_runs = figures.compare_runs({"a": records, "b": records[:2]}, "loss", narrow=True)
    assert (
        phone_runs.layout.legend.orientation == "h"
        and phone_runs.to_plotly_json()["data"] == runs.to_plotly_json()["data"]
    )


def test_figures_are_deterministic():
    attn = random_attention(2, 8, 8)
    first = figures.head_view_figure(select_links(attn, TOKENS))
    second = figures.head_view_figure(select_links(attn, TOKENS))
    assert first.to_json() == second.to_json()


# ---------------------------------------------------------------- readability (presentation mode)


def test_readable_sets_dark_fonts_everywhere_and_larger_ones_for_a_projector():
    from bertviz_lite.figures.style import TEXT_COLOUR, readable

    parts = [np.random.default_rng(0).normal(size=(8, 6)) for _ in range(5)]
    for present, tick in ((False, 13), (True, 16)):
        fig = _embedding_parts_figure(*parts, tokens=TOKENS)
        height = fig.layout.height
        readable(fig, present)
        axes = [fig.layout[name] for name in fig.layout if name.startswith(("xaxis", "yaxis"))]
        assert len(axes) == 10 and all(
            a.tickfont.size == tick and a.tickfont.color == TEXT_COLOUR for a in axes
        )
        assert (
            fig.layout.coloraxis.colorbar.tickfont.size == tick
            and fig.layout.coloraxis2.colorbar.tickfont.size == tick
        )
        assert all(note.font.size >= tick for note in fig.layout.annotations)
        assert fig.layout.height == (round(height * 16 / 13) if present else height)
    heatmap = readable(_attention_heatmap(random_attention(8, 8), TOKENS), True)
    assert heatmap.data[0].colorbar.tickfont.size == 16 and heatmap.layout.xaxis.tickfont.size >= 14


def test_readable_changes_only_fonts_and_keeps_what_the_builder_set():
    """Fonts are merged into what a builder set (a font family, axis and subplot titles' texts, a legend's place)."""
    from bertviz_lite.figures.style import TEXT_COLOUR, readable

    parts = [np.random.default_rng(0).normal(size=(8, 6)) for _ in range(5)]
    fig = _embedding_parts_figure(*parts, tokens=TOKENS)
    fig.update_layout(font_family="Arial", legend_x=0.3, title_text="Parts", hoverlabel_font_family="Courier")
    before = fig.to_dict()["layout"]
    after = readable(fig, present=True).to_dict()["layout"]
    assert after["font"] == {"family": "Arial", "size": 16, "color": TEXT_COLOUR}
    assert after["legend"]["x"] == 0.3 and after["title"]["text"] == "Parts"
    assert after["hoverlabel"]["font"] == {"family": "Courier", "size": 16}
    titled = [
        name for name in before if name.startswith("xaxis") and before[name].get("title", {}).get("text")
    ]
    assert titled and all(after[name]["title"]["text"] == before[name]["title"]["text"] for name in titled)
    notes = [(note["text"], note["x"], note["y"]) for note in before["annotations"]]
    assert notes == [(note["text"], note["x"], note["y"]) for note in after["annotations"]]
    assert all(note["font"]["size"] == 17 for note in after["annotations"])


def test_embedding_colour_bars_lie_under_the_plots_and_titles_are_short():
    parts = [np.random.default_rng(0).normal(size=(8, 6)) for _ in range(5)]
    fig = _embedding_parts_figure(*parts, tokens=TOKENS)
    bars = [fig.layout.coloraxis.colorbar, fig.layout.coloraxis2.colorbar]
    assert all(bar.orientation == "h" and bar.yref == "container" for bar in bars)
    assert bars[0].x + bars[0].len / 2 < bars[1].x - bars[1].len / 2  # side by side, not overlapping
    assert max(len(note.text) for note in fig.layout.annotations) <= 12
    assert [a.title.text for a in (fig.layout[f"xaxis{i}"] for i in ("", 2, 3, 4, 5))].count(
        "hidden dimension"
    ) == 1


def test_head_view_has_sixteen_distinct_colours_a_solo_legend_and_hover_lines():
    from bertviz_lite.figures._common import head_colour
    from bertviz_lite.figures.head_view_script import head_view_hover_script

    assert len({head_colour(h) for h in range(16)}) == 16
    links = select_links(random_attention(12, 8, 8), TOKENS, min_weight=0.2)
    fig = figures.head_view_figure(links)
    assert fig.layout.legend.itemclick == "toggleothers" and fig.layout.legend.itemdoubleclick == "toggle"
    queries = next(t for t in fig.data if t.name == "queries")
    queries_of_0 = sum(int((q == 0).sum()) for q, _, _ in links.links)
    assert queries.hovertext[0].count("→") == min(queries_of_0, 6)
    script = head_view_hover_script("head_view")
    assert '"head_view"' in script and "http" not in script.replace("http://www.w3.org/2000/svg", "")
    with pytest.raises(ValueError, match="must be letters"):
        head_view_hover_script("x'];alert(1)//")


def test_prediction_bars_put_their_text_outside_and_nsp_shows_its_one():
    top = _topk_bar(["a", "b"], [0.9, 0.1])
    assert top.data[0].textposition == "outside" and top.layout.xaxis.range[1] > 0.9 * 1.15
    nsp = _nsp_bar(0.99)
    assert (
        1 in nsp.layout.xaxis.tickvals
        and nsp.layout.xaxis.range[1] > 1
        and nsp.data[0].textposition == "outside"
    )


def test_embedding_heatmaps_saturate_at_a_robust_range_a_projector_can_show():
    rng = np.random.default_rng(0)
    parts = [rng.normal(0, 0.05, (len(TOKENS), 16)) for _ in range(5)]
    parts[4][0, 0] = 40.0  # one LayerNorm outlier dimension must not wash the rest out to white
    fig = _embedding_parts_figure(*parts, tokens=TOKENS)
    norm_limit = float(np.percentile(np.abs(parts[4]), 98))
    assert fig.layout.coloraxis2.cmax == pytest.approx(norm_limit) and norm_limit < 1
    assert fig.layout.coloraxis.cmax == pytest.approx(np.percentile(np.abs(np.stack(parts[:4])), 98))
    assert "98% inside" in fig.layout.coloraxis.colorbar.title.text


def test_pca_labels_do_not_pile_up_and_every_token_stays_on_hover():
    points = np.array([[0.0, 0.0]] * 14 + [[1.0, 1.0], [0.5, 0.0]])
    tokens = [f"t{i}" for i in range(16)]
    assert _uncluttered_labels(points, tokens) == ["t0"] + [""] * 13 + ["t14", "t15"]
    scatter = _pca_scatter(points, tokens)
    assert list(scatter.data[0].text) == ["t0"] + [""] * 13 + ["t14", "t15"]
    assert [row[1] for row in scatter.data[0].customdata] == tokens  # the hover still names every point


def test_view_builders_draw_their_dataclass_as_the_array_builders_do():
    rng = np.random.default_rng(1)
    attentions = rng.dirichlet(np.ones(len(TOKENS)), size=(2, 2, len(TOKENS)))
    trace = pair_trace(attentions, TOKENS, segments=SEGMENTS)
    flow = views.rollout(trace, after=2)
    np.testing.assert_allclose(flow.flow, analysis.attention_rollout(attentions)[1])
    fig = figures.rollout_figure(flow)
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), flow.flow)
    assert fig.layout.title.text == "Attention rollout after layer 2"
    assert len(flow.to_frame()) == len(TOKENS) ** 2
    block = views.attention_map(trace, layer=1, head=0)
    np.testing.assert_array_equal(np.asarray(figures.attention_map_figure(block).data[0].z), block.weights)


def test_training_curves_read_as_people_say_them_and_give_their_numbers():
    from bertviz_lite.figures.training import compare_runs, curve_frame, metric_curves
    from bertviz_lite.training.metrics import METRICS

    records = [{"step": 1, "eval_nsp_acc": 0.5}, {"step": 2, "eval_nsp_acc": 0.75}, {"step": 3, "loss": 1.0}]
    labels = {key: metric.label for key, metric in METRICS.items()}
    fig = metric_curves(records, ["eval_nsp_acc"], labels=labels)
    assert (
        fig.data[0].name == "NSP accuracy (held-out)"
        and fig.layout.yaxis.title.text == "NSP accuracy (held-out)"
    )
    fig = compare_runs({"a": records}, "eval_nsp_acc", label=METRICS["eval_nsp_acc"].label)
    assert fig.layout.yaxis.title.text == "NSP accuracy (held-out)"
    frame = curve_frame({"a": records, "b": records[:1]}, ["eval_nsp_acc"])
    assert frame.values.tolist() == [
        ["a", "eval_nsp_acc", 1, 0.5],
        ["a", "eval_nsp_acc", 2, 0.75],
        ["b", "eval_nsp_acc", 1, 0.5],
    ]


# ---------------------------------------------------------------- phone versions (show_figure's `narrow`)


def title_lines(fig: go.Figure) -> list[str]:
    return fig.layout.title.text.split("<br>")


def test_phone_titles_fit_a_phone_and_the_wide_ones_stay():
    """At 390 px a figure is ~358 px wide: the one-line titles of these views ran past its right edge."""
    rng = np.random.default_rng(0)
    parts = [rng.normal(size=(8, 6)) for _ in range(5)]
    links = select_links(random_attention(4, 8, 8), TOKENS)
    model_view = views.model_view_tiles(random_attention(2, 4, 8, 8), TOKENS)
    for build in (
        partial(_embedding_parts_figure, *parts, tokens=TOKENS),
        partial(figures.head_view_figure, links),
        partial(figures.model_view_figure, model_view),
    ):
        wide = build()
        phone = build(narrow=True)
        assert (
            len(title_lines(wide)) == 1 and len(title_lines(wide)[0]) > NARROW_TITLE_CHARS
        )  # desktop: as it was
        assert len(title_lines(phone)) == 2 and all(
            len(line) <= NARROW_TITLE_CHARS for line in title_lines(phone)
        )
        assert " ".join(title_lines(phone)) == title_lines(wide)[0]  # the same words, wrapped
        assert phone.layout.margin.t > wide.layout.margin.t and phone.layout.height > wide.layout.height


def test_a_figure_in_a_laptops_column_wraps_its_titles_in_lines_that_fit():
    """At 1024 x 768 with the sidebar open, Meaning in context's accuracy chart gets a 204-px column and the Embeddings
    page's position heatmaps 274 px each: their one-line titles ran past both edges. Their narrow versions (shown in a
    column under 500 px, pages_app/common/assets/layout.css) break them into lines that fit, the same words."""
    separation = SenseSeparation("bank", np.array([0.0, 0.5, 0.75]), 0.5, 0.5, 4, 2, by_user=False)
    similarity = views.PositionSimilarity(np.eye(4), "Sinusoidal table (Vaswani et al.), for comparison")
    pairs = [
        (separation_figure(separation, 1), separation_figure(separation, 1, narrow=True)),
        (
            figures.position_similarity_figure(similarity),
            figures.position_similarity_figure(similarity, True),
        ),
    ]
    for wide, narrow in pairs:
        for title in (lambda fig: fig.layout.title.text, lambda fig: fig.layout.xaxis.title.text):
            lines = title(narrow).split("<br>")
            assert " ".join(lines) == title(wide)  # the same words, wrapped
            assert all(len(line) <= COLUMN_TITLE_CHARS for line in lines), lines
        assert len(narrow.layout.title.text.split("<br>")) > 1
    assert separation_figure(separation, 1, narrow=True).layout.margin.t > pairs[0][0].layout.margin.t


def test_a_head_opened_in_a_narrow_column_lays_its_colour_bar_flat_under_the_map():
    """Beside the model view at 1024 x 768 the opened head gets a 200-px column: an upright colour bar at its right
    edge had its labels cut (0.25 read "0.2"). The narrow version lays it flat under the map, with room for it."""
    block = views.attention_map(pair_trace(random_attention(2, 2, 8, 8), TOKENS), layer=1, head=0)
    wide = figures.attention_map_figure(block, axis_titles=False)
    narrow = figures.attention_map_figure(block, axis_titles=False, narrow=True)
    assert narrow.data[0].colorbar.orientation == "h" and wide.data[0].colorbar.orientation is None
    assert narrow.layout.margin.b > (wide.layout.margin.b or 0)
    assert narrow.layout.height == wide.layout.height + narrow.layout.margin.b
    assert (
        np.array_equal(narrow.data[0].z, wide.data[0].z)
        and narrow.layout.title.text == wide.layout.title.text
    )


def test_phone_embedding_parts_stack_their_colour_bars():
    """Side by side under a 358-px figure, the two colour bars' titles ran into each other: on a phone each bar
    takes the full width, the raw parts' above LayerNorm's, with a title short enough to fit beside it."""
    rng = np.random.default_rng(0)
    parts = [rng.normal(size=(8, 6)) for _ in range(5)]
    wide = _embedding_parts_figure(*parts, tokens=TOKENS)
    phone = _embedding_parts_figure(*parts, tokens=TOKENS, narrow=True)
    raw = phone.layout.coloraxis.colorbar
    norm = phone.layout.coloraxis2.colorbar
    assert (
        wide.layout.coloraxis.colorbar.x != wide.layout.coloraxis2.colorbar.x
    )  # desktop: side by side, as it was
    assert (
        raw.x == norm.x == 0.5 and raw.len == norm.len == 1.0 and raw.orientation == norm.orientation == "h"
    )
    assert raw.y > norm.y and (raw.y - norm.y) * phone.layout.height >= 40  # a bar with its ticks is ~40 px
    assert len(raw.title.text) <= 25 and len(norm.title.text) <= 25
    assert phone.layout.coloraxis.cmax == wide.layout.coloraxis.cmax  # the same colours
    for trace, part in zip(phone.data, parts, strict=True):
        np.testing.assert_array_equal(np.asarray(trace.z), part)


def test_phone_neuron_view_has_short_column_titles_and_the_same_data():
    """Five columns share ~270 px on a phone: their titles ("q · k, q · k / √d", "weight × value") ran into each
    other; the phone's are at most 7 characters, over the same traces."""
    rng = np.random.default_rng(3)
    q, k, v = (rng.normal(size=(8, 4)) for _ in range(3))
    neuron = NeuronView(analysis.attention_steps(q, k, v, 1), TOKENS, 1)
    wide = figures.neuron_view_figure(neuron)
    phone = figures.neuron_view_figure(neuron, narrow=True)
    assert max(len(note.text) for note in wide.layout.annotations) > 15  # desktop: as it was
    assert len(phone.layout.annotations) == len(wide.layout.annotations)
    assert all(len(note.text) <= 8 for note in phone.layout.annotations)
    assert phone.to_plotly_json()["data"] == wide.to_plotly_json()["data"]
    assert (
        phone.layout.xaxis2.showticklabels is False and phone.layout.xaxis3.showticklabels is False
    )  # keys, q × k


def test_phone_model_view_lays_its_colour_bar_under_a_grid_sized_to_a_phone():
    """Upright beside the grid, the colour bar left 12 heads ~200 px on a phone, in a figure twice the grid's
    height: the phone's bar lies under the grid, and the figure's height follows a phone's width."""
    model_view = views.model_view_tiles(random_attention(6, 12, 8, 8), TOKENS)
    wide = figures.model_view_figure(model_view, tile_size=80)
    phone = figures.model_view_figure(model_view, tile_size=80, narrow=True)
    assert wide.data[0].colorbar.orientation is None and phone.data[0].colorbar.orientation == "h"
    margin = phone.layout.margin
    grid_width = PHONE_FIGURE_WIDTH - margin.l - margin.r
    grid_height = phone.layout.height - margin.t - margin.b
    assert 6 / 12 * grid_width <= grid_height <= 6 / 12 * grid_width + 40, (grid_width, grid_height)  # no gap
    assert margin.b >= 60  # room for the bar and its ticks
    assert wide.layout.height == 80 * 6 + 140  # desktop: as it was


def test_phone_head_view_puts_its_legend_under_the_lines():
    """Beside the lines the legend of 12 heads took a third of a phone's figure and left the lines 80 px."""
    links = select_links(random_attention(12, 8, 8), TOKENS)
    wide = figures.head_view_figure(links)
    phone = figures.head_view_figure(links, narrow=True)
    assert wide.layout.legend.orientation is None and phone.layout.legend.orientation == "h"
    assert (
        phone.layout.legend.yref == "container" and phone.layout.margin.b >= 100
    )  # room for three rows of heads
    assert (
        np.diff(phone.layout.xaxis.range)[0] < np.diff(wide.layout.xaxis.range)[0]
    )  # the lines get the width
    assert [trace.name for trace in phone.data] == [
        trace.name for trace in wide.data
    ]  # the same heads to click
