"""The data behind each embeddings view: the parts of a window of tokens, positions compared, PCA.

Each data function takes a trace (explore.PairTrace) and the view's picks; each view's data has a to_frame() for its
CSV download.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from bertviz_lite.inspection import analysis
from bertviz_lite.inspection.explore import EMBEDDING_NAMES, PairTrace, token_window
from bertviz_lite.model.modeling import BertForPreTraining

# What `bertviz_lite.inspection.views` offers at its top (its __init__ lists them by name).
__all__ = [
    "EmbeddingNorms",
    "EmbeddingWindow",
    "PositionSimilarity",
    "embedding_norms",
    "TokenProjection",
    "embedding_sum_error",
    "embedding_window",
    "position_similarity",
    "position_tables",
    "token_projection",
    "vector_choices",
    "vectors_for",
]


def _long_frame(matrix: np.ndarray, rows: dict, column: str, value: str) -> pd.DataFrame:
    """A [R, C] matrix as one row per cell: the row columns given in `rows` (each [R]), `column`, `value`."""
    count, width = matrix.shape
    frame = pd.DataFrame(
        {name: np.repeat(np.asarray(values, dtype=object), width) for name, values in rows.items()}
    )
    frame[column] = np.tile(np.arange(width), count)
    frame[value] = matrix.ravel()
    return frame


# ---------------------------------------------------------------- the parts


@dataclass(frozen=True)
class EmbeddingWindow:
    """The five embedding stages (EMBEDDING_NAMES) of a window of tokens."""

    parts: tuple[np.ndarray, ...]  # each [W, H]
    tokens: list[str]  # [W]
    start: int  # input position of the first token

    def to_frame(self) -> pd.DataFrame:
        """One row per part, token and dimension: part, position, token, dimension, value."""
        positions = np.arange(self.start, self.start + len(self.tokens))
        frames = [
            _long_frame(
                part,
                {"part": [name] * len(self.tokens), "position": positions, "token": self.tokens},
                "dimension",
                "value",
            )
            for name, part in zip(EMBEDDING_NAMES, self.parts, strict=True)
        ]
        return pd.concat(frames, ignore_index=True)


def embedding_window(trace: PairTrace, start: int = 0, size: int = 64) -> EmbeddingWindow:
    """The parts of tokens [start, start + size), clipped to the input (token_window)."""
    embeddings = trace.embeddings
    tokens = trace.tokens
    window = token_window(len(tokens), start, size)
    return EmbeddingWindow(
        tuple(embeddings[name][window] for name in EMBEDDING_NAMES), list(tokens[window]), window.start
    )


def embedding_sum_error(trace: PairTrace) -> float:
    """Largest |sum - (token + position + segment)| over all tokens and dimensions (float rounding)."""
    parts = [trace.embeddings[name] for name in ("sum", "token", "position", "segment")]
    return float(np.abs(parts[0] - (parts[1] + parts[2] + parts[3])).max())


@dataclass(frozen=True)
class EmbeddingNorms:
    """The L2 norm of each embedding part per token (analysis.embedding_component_norms)."""

    table: pd.DataFrame  # index, token, token_norm, position_norm, segment_norm, sum_norm, layer_norm_norm

    def to_frame(self) -> pd.DataFrame:
        return self.table


def embedding_norms(trace: PairTrace) -> EmbeddingNorms:
    """Each embedding part's size for every token of the trace."""
    parts = (trace.embeddings[name] for name in EMBEDDING_NAMES)
    return EmbeddingNorms(analysis.embedding_component_norms(*parts, tokens=trace.tokens))


# ---------------------------------------------------------------- positions


@dataclass(frozen=True)
class PositionSimilarity:
    """Cosine similarity between the position vectors of one table."""

    matrix: np.ndarray  # [N, N]
    title: str

    def to_frame(self) -> pd.DataFrame:
        """One row per pair of positions: position, other_position, cosine."""
        return _long_frame(self.matrix, {"position": np.arange(len(self.matrix))}, "other_position", "cosine")


def position_tables(model: BertForPreTraining, num_positions: int) -> tuple[np.ndarray, np.ndarray]:
    """(the model's position embeddings, the sinusoidal table), both [N, H], N capped by the model."""
    weight = model.bert.embeddings.position_embeddings.weight.detach()
    count = int(min(num_positions, weight.shape[0]))
    learned = weight[:count].float().numpy()
    return learned, analysis.sinusoidal_position_table(count, weight.shape[1])


def position_similarity(
    model: BertForPreTraining, num_positions: int
) -> tuple[PositionSimilarity, PositionSimilarity]:
    """Similarity of the first positions in the model's table, and in the sinusoidal one for comparison."""
    learned, sinusoidal = position_tables(model, num_positions)
    kind = model.config.position_embedding_type
    return (
        PositionSimilarity(
            analysis.cosine_similarity_matrix(learned), f"This model's position embeddings ({kind})"
        ),
        PositionSimilarity(
            analysis.cosine_similarity_matrix(sinusoidal), "Sinusoidal table (Vaswani et al.), for comparison"
        ),
    )


# ---------------------------------------------------------------- token vectors in 2-D


def vector_choices(num_layers: int) -> list[str]:
    """Names of the token vectors the PCA plot can show."""
    return ["token embedding", "embedding output (after LayerNorm)"] + [
        f"after layer {i}" for i in range(1, num_layers + 1)
    ]


def vectors_for(trace: PairTrace, choice: str) -> np.ndarray:
    """[T, H] vectors of the trace named by vector_choices."""
    if choice == "token embedding":
        return trace.embeddings["token"]
    if choice.startswith("embedding output"):
        return trace.hidden_states[0]
    if choice.startswith("after layer "):
        return trace.hidden_states[int(choice.rsplit(" ", 1)[1])]
    raise ValueError(
        f"unknown vectors {choice!r}: pick one of {', '.join(vector_choices(1))} or 'after layer N'"
    )


@dataclass(frozen=True)
class TokenProjection:
    """Token vectors projected on their first two principal components."""

    points: np.ndarray  # [T, 2]
    tokens: list[str]
    sentence: np.ndarray  # [T] 0 = sentence A, 1 = sentence B
    title: str

    def to_frame(self) -> pd.DataFrame:
        """One row per token: index, token, sentence (A/B), pc1, pc2."""
        return pd.DataFrame(
            {
                "index": np.arange(len(self.tokens)),
                "token": self.tokens,
                "sentence": np.where(self.sentence == 1, "B", "A"),
                "pc1": self.points[:, 0],
                "pc2": self.points[:, 1],
            }
        )


def token_projection(trace: PairTrace, choice: str) -> TokenProjection:
    """analysis.pca_2d of the vectors named by choice, with each token's sentence (analysis.sentence_ids)."""
    points = analysis.pca_2d(vectors_for(trace, choice))
    return TokenProjection(
        points,
        list(trace.tokens),
        analysis.sentence_ids(trace.segments, trace.special),
        f"{choice}: first two principal components",
    )
