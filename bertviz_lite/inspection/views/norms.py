"""The data behind the norm-weighted attention views (Kobayashi et al., 2020): ‖α f(x)‖ beside the weights α.

Each data function takes a trace (explore.PairTrace) and the view's picks; each view's data has a to_frame() for
its CSV download.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from bertviz_lite.inspection import analysis
from bertviz_lite.inspection.attribution import attention_output_weights, norm_weighted_attention
from bertviz_lite.inspection.explore import PairTrace
from bertviz_lite.inspection.views.attention import SentenceCut

# What `bertviz_lite.inspection.views` offers at its top (its __init__ lists them by name).
__all__ = [
    "NormAttention",
    "SpecialShares",
    "norm_attention",
    "special_share_by_layer",
]

SPECIAL = ("[CLS]", "[SEP]")


def _share(matrix: np.ndarray, keys: Sequence[str], token: str) -> float:
    """Share of the total of matrix [Q, K] that lands on key columns holding token."""
    total = float(matrix.sum())
    columns = np.asarray(keys, dtype=object) == token
    return float(matrix[:, columns].sum()) / total if total > 0 else 0.0


@dataclass(frozen=True)
class NormAttention(SentenceCut):
    """One head (or all heads of a layer) as attention weights and as norms ‖α f(x)‖, cut to a sentence filter."""

    raw: np.ndarray  # [Q, K] attention weights; the heads' mean when head is None
    norm: np.ndarray  # [Q, K] ‖α_ij f(x_j)‖; ‖Σ_h α^h_ij f^h(x_j)‖ when head is None
    query_positions: np.ndarray  # [Q]
    key_positions: np.ndarray  # [K]
    tokens: list[str]  # [T] every token of the input
    layer: int
    head: int | None  # None: every head of the layer
    sentence_filter: str = "All"

    @property
    def where(self) -> str:
        heads = "all heads" if self.head is None else f"head {self.head}"
        return f"Layer {self.layer}, {heads}" + (
            "" if self.sentence_filter == "All" else f" ({self.sentence_filter})"
        )

    def shares(self) -> pd.DataFrame:
        """Share of the shown total on [CLS], on [SEP] and on every other token: weights against norms."""
        rows = {
            token: [_share(m, self.key_tokens, token) for m in (self.raw, self.norm)] for token in SPECIAL
        }
        rows["other tokens"] = [1.0 - rows["[CLS]"][i] - rows["[SEP]"][i] for i in range(2)]
        return pd.DataFrame(
            [{"key": k, "attention weight": v[0], "norm-weighted": v[1]} for k, v in rows.items()]
        )

    def note(self) -> str:
        """One sentence with this input's numbers: how much of the weight, and of the norm, [CLS]/[SEP] get."""
        shares = self.shares().set_index("key")
        raw, norm = (
            float(shares.loc[list(SPECIAL), column].sum()) for column in ("attention weight", "norm-weighted")
        )
        return (
            f"{self.where}: [CLS] and [SEP] receive {raw:.0%} of the attention weight shown but only {norm:.0%} "
            f"of the norm-weighted attention; the other tokens' share goes from {1 - raw:.0%} to {1 - norm:.0%}."
        )

    def to_frame(self) -> pd.DataFrame:
        """Long table: query_index, query, key_index, key, weight, norm_weighted, layer, head ("all" for every head)."""
        frame = analysis.attention_to_csv_frame(self.raw, self.query_tokens, self.key_tokens)
        frame["query_index"] = self.query_positions[frame["query_index"].to_numpy()]
        frame["key_index"] = self.key_positions[frame["key_index"].to_numpy()]
        frame["norm_weighted"] = self.norm.ravel()
        return frame.assign(layer=self.layer, head="all" if self.head is None else self.head)


def norm_attention(
    trace: PairTrace, layer: int, head: int | None = None, sentence_filter: str = "All"
) -> NormAttention:
    """Attention weights and ‖α f(x)‖ of one head (head=None: all heads, summed as vectors), filtered like "A→B"."""
    attentions = trace.attentions
    values = trace.values
    model = trace.model
    per_head, summed = norm_weighted_attention(
        attentions[layer], values[layer], attention_output_weights(model)[layer]
    )
    raw = np.asarray(attentions[layer], dtype=np.float64)
    raw, norm = (raw.mean(axis=0), summed) if head is None else (raw[head], per_head[head])
    mask = analysis.sentence_filter_mask(trace.segments, trace.special, sentence_filter)
    rows = np.flatnonzero(mask.any(axis=1))
    cols = np.flatnonzero(mask.any(axis=0))
    cut = np.ix_(rows, cols)
    return NormAttention(raw[cut], norm[cut], rows, cols, list(trace.tokens), layer, head, sentence_filter)


@dataclass(frozen=True)
class SpecialShares:
    """Per layer and weighting, the share landing on [CLS] and on [SEP]."""

    table: pd.DataFrame  # layer, weighting ("attention weight" / "norm-weighted"), to [CLS], to [SEP]

    def to_frame(self) -> pd.DataFrame:
        return self.table


def special_share_by_layer(trace: PairTrace) -> SpecialShares:
    """Per layer, the share of all attention (heads' mean) and of ‖Σ_h α f(x)‖ landing on [CLS] and on [SEP]."""
    attentions = trace.attentions
    values = trace.values
    tokens = trace.tokens
    weights = attention_output_weights(trace.model)
    rows = []
    for layer in range(len(attentions)):
        raw = np.asarray(attentions[layer], dtype=np.float64).mean(axis=0)
        _, norm = norm_weighted_attention(attentions[layer], values[layer], weights[layer])
        for weighting, matrix in (("attention weight", raw), ("norm-weighted", norm)):
            rows.append(
                {
                    "layer": layer,
                    "weighting": weighting,
                    **{f"to {token}": _share(matrix, tokens, token) for token in SPECIAL},
                }
            )
    return SpecialShares(pd.DataFrame(rows))
