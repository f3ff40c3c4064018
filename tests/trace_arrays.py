"""A PairTrace built from plain arrays, for tests of the views without a model: `pair_trace(attentions, tokens)`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from bertviz_lite.inspection.explore import PairTrace
from bertviz_lite.model.outputs import BertTrace, EmbeddingParts, LayerAttention
from bertviz_lite.text.tokenization import Encoding

SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[PAD]")


def _batch(array) -> torch.Tensor:
    """One example as a batch of one, float32."""
    return torch.as_tensor(np.asarray(array, dtype=np.float32))[None]


def encoding_of(tokens: Sequence[str], segments: Sequence[int] | None = None) -> Encoding:
    """An Encoding of these tokens: [CLS]/[SEP] special, sentence B after the first [SEP] unless segments say."""
    tokens = list(tokens)
    special = [int(token in SPECIAL_TOKENS) for token in tokens]
    if segments is None:
        first_sep = tokens.index("[SEP]") if "[SEP]" in tokens else len(tokens)
        segments = [int(i > first_sep) for i in range(len(tokens))]
    sequence = [None if s else int(segment) for s, segment in zip(special, segments, strict=True)]
    count = len(tokens)
    return Encoding(
        tokens=tokens,
        input_ids=list(range(count)),
        token_type_ids=list(segments),
        position_ids=list(range(count)),
        attention_mask=[1] * count,
        special_tokens_mask=special,
        word_ids=list(sequence),
        sequence_ids=sequence,
        offsets=[(0, 0)] * count,
        words=[None] * count,
        truncated=False,
    )


def pair_trace(
    attentions,
    tokens: Sequence[str],
    queries=None,
    keys=None,
    values=None,
    hidden_states=None,
    segments: Sequence[int] | None = None,
    hidden_size: int = 4,
    mlm_logits=None,
    nsp_logits=None,
) -> PairTrace:
    """A PairTrace of [L, nh, T, T] attentions (queries, keys, values [L, nh, T, hd] and hidden states [L + 1, T, H]
    random when not given), without a model: the views that only read arrays run on it."""
    attentions = np.asarray(attentions, dtype=np.float32)
    num_layers, num_heads, count, _ = attentions.shape
    rng = np.random.default_rng(0)
    per_head = [
        rng.normal(size=(num_layers, num_heads, count, 2)) if x is None else x
        for x in (queries, keys, values)
    ]
    if hidden_states is None:
        hidden_states = rng.normal(size=(num_layers + 1, count, hidden_size))
    layers = tuple(
        LayerAttention(
            query=_batch(per_head[0][i]),
            key=_batch(per_head[1][i]),
            value=_batch(per_head[2][i]),
            probs=_batch(attentions[i]),
        )
        for i in range(num_layers)
    )
    first = _batch(hidden_states[0])
    output = BertTrace(
        embeddings=EmbeddingParts(first, first, first, first * 3, first),
        layers=layers,
        hidden_states=tuple(_batch(h) for h in hidden_states),
        pooled=first[:, 0],
        mlm_logits=None if mlm_logits is None else _batch(mlm_logits),
        nsp_logits=None if nsp_logits is None else _batch(nsp_logits),
        attention_mask=torch.ones(1, count),
    )
    encoding = encoding_of(tokens, segments)
    return PairTrace(
        encoding=encoding, input_ids=np.arange(count), tokens=list(tokens), masked_positions=(), output=output
    )
