"""Plotly figure builders: pure functions from the data of a view (bertviz_lite.inspection.views) to a `go.Figure`."""

from bertviz_lite.figures.attention import (
    attention_heatmap,
    head_statistics_figure,
    head_view,
    neuron_view_figure,
    rollout_heatmap,
)
from bertviz_lite.figures.embeddings import (
    component_norms_bar,
    embedding_parts_figure,
    pca_scatter,
    position_similarity_heatmap,
)
from bertviz_lite.figures.mosaic import mosaic_figure
from bertviz_lite.figures.predictions import nsp_bar, topk_bar
from bertviz_lite.figures.tokens import token_chip_html
from bertviz_lite.figures.training import compare_runs, lr_curve, metric_curves, throughput_curve

__all__ = [
    "attention_heatmap",
    "compare_runs",
    "component_norms_bar",
    "embedding_parts_figure",
    "head_statistics_figure",
    "head_view",
    "lr_curve",
    "metric_curves",
    "mosaic_figure",
    "neuron_view_figure",
    "nsp_bar",
    "pca_scatter",
    "position_similarity_heatmap",
    "rollout_heatmap",
    "throughput_curve",
    "token_chip_html",
    "topk_bar",
]

# Beyond attention weights (issue 12).
from bertviz_lite.figures.explain import (  # noqa: E402
    attribution_figure,
    knockout_figure,
    logit_lens_figure,
    norm_heatmap,
    special_share_figure,
)

__all__ += ["attribution_figure", "knockout_figure", "logit_lens_figure", "norm_heatmap", "special_share_figure"]

# Why this word (issue 20): the contrast layer by layer and activation patching.
from bertviz_lite.figures.contrast import contrast_lens_figure, patching_heatmap  # noqa: E402

__all__ += ["contrast_lens_figure", "patching_heatmap"]
