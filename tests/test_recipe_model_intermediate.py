"""Recipe "a new intermediate of the model": one field of outputs.LayerAttention, declared with its per-layer name,
recorded in BertSelfAttention.explicit; BertTrace offers it per layer, explore.PairTrace as one numpy array, and a
view's data function gets it by naming it (here: a temporary one, the attention scores before the softmax)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from torch import Tensor

from bertviz_lite.inspection import explore
from bertviz_lite.model.modeling import BertSelfAttention
from bertviz_lite.model.outputs import LayerAttention, per_layer
from tests.app.tiny_checkpoint import build_tiny

PAIR = ("The cat sat on the mat.", "It fell asleep.")
RECORDED = BertSelfAttention.explicit


@dataclass
class WithScores(LayerAttention):
    """The real intermediates plus one declared in one place."""

    scores: Tensor = per_layer("scores", (2, 3))  # (B, nh, T, T): q · k / √d plus the padding mask, before the softmax


def explicit_with_scores(self, hidden_states, mask, head_mask=None):
    """BertSelfAttention.explicit recording the scores too (the one line a real intermediate adds there)."""
    context, inside = RECORDED(self, hidden_states, mask, head_mask)
    scores = (inside.query / math.sqrt(self.attention_head_size)) @ inside.key.transpose(-1, -2)
    scores = scores if mask is None else scores + mask
    return context, WithScores(**vars(inside), scores=scores)


@pytest.fixture
def declared(monkeypatch):
    monkeypatch.setattr(BertSelfAttention, "explicit", explicit_with_scores)


@pytest.fixture(scope="module")
def tiny():
    return build_tiny()


def _trace(tiny) -> explore.PairTrace:
    model, tokenizer = tiny
    return explore.trace_pair(model, tokenizer, *PAIR, max_length=32)


def test_the_intermediate_arrives_in_pair_trace_as_numpy(declared, tiny):
    trace = _trace(tiny)
    layers, heads, count = tiny[0].config.num_hidden_layers, tiny[0].config.num_attention_heads, trace.num_tokens
    assert len(trace.output.scores) == layers and trace.output.scores[0].shape == (1, heads, count, count)
    assert isinstance(trace.scores, np.ndarray) and trace.scores.dtype == np.float32
    assert trace.scores.shape == trace.attentions.shape == (layers, heads, count, count)
    np.testing.assert_allclose(torch.from_numpy(trace.scores).softmax(-1).numpy(), trace.attentions, atol=1e-6)


def test_a_data_function_gets_it_by_naming_it(declared, tiny):
    def top_score(scores, tokens):
        return tokens[int(scores[0, 0, 0].argmax())]

    trace = _trace(tiny)
    assert explore.from_trace(top_score, trace) == trace.tokens[int(trace.attentions[0, 0, 0].argmax())]


def test_without_the_declaration_the_trace_has_no_such_array(tiny):
    trace = _trace(tiny)
    with pytest.raises(AttributeError, match="no attribute 'scores'"):
        trace.scores  # noqa: B018
    assert "scores" not in trace.field_names()
