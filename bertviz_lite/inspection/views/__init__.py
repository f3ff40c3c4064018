"""The data of every explore view: one data function per view, its figure builder is in bertviz_lite.figures.

A data function takes plain arrays and labels (parameters named like PairTrace fields, such as
`attentions` or `tokens`, are filled from a trace by explore.from_trace) and returns the arrays and
labels its figure draws, usually as a small dataclass with a to_frame() for the CSV download.
"""

from bertviz_lite.inspection.views.attention import (
    AttentionMap,
    AttentionMosaic,
    HeadViewLinks,
    NeuronData,
    attention_map,
    attention_mosaic,
    head_view_links,
    head_view_min_weight,
    head_view_top_k,
    model_view_size,
    neuron_data,
    select_links,
)
from bertviz_lite.inspection.views.embeddings import (
    EmbeddingWindow,
    PositionSimilarity,
    TokenProjection,
    embedding_sum_error,
    embedding_window,
    position_similarity,
    position_tables,
    token_projection,
    vector_choices,
    vectors_for,
)
from bertviz_lite.inspection.views.predictions import (
    default_mask_position,
    is_next_probability,
    maskable_positions,
    masked_positions,
    nsp_caption,
    nsp_frame,
    prediction_title,
    top_predictions,
)
from bertviz_lite.inspection.views.tokens import encoding_frame, mask_encoding, masking_frame

__all__ = [
    "AttentionMap",
    "AttentionMosaic",
    "EmbeddingWindow",
    "HeadViewLinks",
    "NeuronData",
    "PositionSimilarity",
    "TokenProjection",
    "attention_map",
    "attention_mosaic",
    "default_mask_position",
    "embedding_sum_error",
    "embedding_window",
    "encoding_frame",
    "head_view_links",
    "head_view_min_weight",
    "head_view_top_k",
    "is_next_probability",
    "mask_encoding",
    "maskable_positions",
    "masked_positions",
    "masking_frame",
    "model_view_size",
    "neuron_data",
    "nsp_caption",
    "nsp_frame",
    "position_similarity",
    "position_tables",
    "prediction_title",
    "select_links",
    "token_projection",
    "top_predictions",
    "vector_choices",
    "vectors_for",
]

# Beyond attention weights (issue 12): norm-weighted attention, attribution, head knock-out, logit lens.
from bertviz_lite.inspection.views.explain import (  # noqa: E402
    Attribution,
    HeadKnockout,
    LogitLens,
    default_choice,
    explain_choices,
    head_knockout,
    logit_lens,
    token_attribution,
)
from bertviz_lite.inspection.views.norms import NormAttention, norm_attention, special_share_by_layer  # noqa: E402

__all__ += [
    "Attribution",
    "HeadKnockout",
    "LogitLens",
    "NormAttention",
    "default_choice",
    "explain_choices",
    "head_knockout",
    "logit_lens",
    "norm_attention",
    "special_share_by_layer",
    "token_attribution",
]

# Why this word (issue 20): contrastive predictions and activation patching between sentence A and sentence B.
from bertviz_lite.inspection.views.contrast import (  # noqa: E402
    EXAMPLES,
    ContrastLens,
    Patching,
    activation_patching,
    contrast_attribution,
    contrast_lens,
    contrast_question,
    default_candidates,
    patching_question,
)

__all__ += [
    "EXAMPLES",
    "ContrastLens",
    "Patching",
    "activation_patching",
    "contrast_attribution",
    "contrast_lens",
    "contrast_question",
    "default_candidates",
    "patching_question",
]
