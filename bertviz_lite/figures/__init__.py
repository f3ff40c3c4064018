"""Plotly figure builders: pure functions from the data of a view (bertviz_lite.inspection.views) to a `go.Figure`.

`figures.attention_map_figure(views.attention_map(trace, layer=0, head=1))` and the rest: the names below are listed
by module; a new builder adds its name here and to its module's `__all__`.
"""

from bertviz_lite.figures.attention import (
    attention_map_figure,
    head_statistics_figure,
    head_view_figure,
    neuron_view_figure,
    rollout_figure,
)
from bertviz_lite.figures.beyond_attention import (
    attention_weights_figure,
    head_knockout_figure,
    logit_lens_figure,
    norm_attention_figure,
    special_share_by_layer_figure,
    token_attribution_figure,
)
from bertviz_lite.figures.check import (
    stage_ladder_figure,
    stage_sides_figure,
)
from bertviz_lite.figures.embeddings import (
    embedding_norms_figure,
    embedding_window_figure,
    position_similarity_figure,
    token_projection_figure,
)
from bertviz_lite.figures.live_class import (
    class_answers_figure,
    class_cloze_figure,
)
from bertviz_lite.figures.model_view import (
    model_view_figure,
)
from bertviz_lite.figures.predictions import (
    next_sentence_figure,
    top_predictions_figure,
)
from bertviz_lite.figures.tokens import (
    token_chip_html,
)
from bertviz_lite.figures.training import (
    compare_runs,
    curve_frame,
    lr_curve,
    metric_curves,
    throughput_curve,
)
from bertviz_lite.figures.why_this_word import (
    activation_patching_figure,
    contrast_lens_figure,
    pair_likelihood_figure,
)

__all__ = [
    "activation_patching_figure",
    "attention_map_figure",
    "attention_weights_figure",
    "class_answers_figure",
    "class_cloze_figure",
    "compare_runs",
    "contrast_lens_figure",
    "curve_frame",
    "embedding_norms_figure",
    "embedding_window_figure",
    "head_knockout_figure",
    "head_statistics_figure",
    "head_view_figure",
    "logit_lens_figure",
    "lr_curve",
    "metric_curves",
    "model_view_figure",
    "neuron_view_figure",
    "next_sentence_figure",
    "norm_attention_figure",
    "pair_likelihood_figure",
    "position_similarity_figure",
    "rollout_figure",
    "special_share_by_layer_figure",
    "stage_ladder_figure",
    "stage_sides_figure",
    "throughput_curve",
    "token_attribution_figure",
    "token_chip_html",
    "token_projection_figure",
    "top_predictions_figure",
]
