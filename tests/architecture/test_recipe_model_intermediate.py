"""Recipe "a new intermediate of the model": one field of outputs.LayerAttention, declared with its per-layer name,
recorded in BertSelfAttention.forward_with_attention; BertTrace.layer_tensors offers it per layer,
explore.PairTrace.layer_array as one numpy array, and a view's data function reads it from the trace it is given
(here: a temporary one, the attention scores before the softmax)."""

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
RECORDED = BertSelfAttention.forward_with_attention


@dataclass
class WithScores(LayerAttention):
    """The real intermediates plus one declared in one place."""

    scores: Tensor = per_layer(
        "scores", (2, 3)
    )  # (B, nh, T, T): q · k / √d plus the padding mask, before the softmax


def forward_with_scores(self, hidden_states, mask, head_mask=None):
    """BertSelfAttention.forward_with_attention recording the scores too (the one line a real intermediate adds there)."""
    context, inside = RECORDED(self, hidden_states, mask, head_mask)
    scores = (inside.query / math.sqrt(self.attention_head_size)) @ inside.key.transpose(-1, -2)
    scores = scores if mask is None else scores + mask
    return context, WithScores(**vars(inside), scores=scores)


@pytest.fixture
def declared(monkeypatch):
    monkeypatch.setattr(BertSelfAttention, "forward_with_attention", forward_with_scores)


@pytest.fixture(scope="module")
def tiny():
    return build_tiny()


def _trace(tiny) -> explore.PairTrace:
    model, tokenizer = tiny
    return explore.trace_pair(model, tokenizer, *PAIR, max_length=32)


def test_the_intermediate_arrives_in_pair_trace_as_numpy(declared, tiny):
    trace = _trace(tiny)
    layers = tiny[0].config.num_hidden_layers
    heads = tiny[0].config.num_attention_heads
    count = trace.num_tokens
    tensors = trace.output.layer_tensors("scores")
    assert len(tensors) == layers and tensors[0].shape == (1, heads, count, count)
    scores = trace.layer_array("scores")
    assert (
        isinstance(scores, np.ndarray)
        and scores.dtype == np.float32
        and trace.layer_array("scores") is scores
    )
    assert scores.shape == trace.attentions.shape == (layers, heads, count, count)
    np.testing.assert_allclose(torch.from_numpy(scores).softmax(-1).numpy(), trace.attentions, atol=1e-6)


def test_a_data_function_reads_it_from_the_trace(declared, tiny):
    def top_score(trace: explore.PairTrace) -> str:
        return trace.tokens[int(trace.layer_array("scores")[0, 0, 0].argmax())]

    trace = _trace(tiny)
    assert top_score(trace) == trace.tokens[int(trace.attentions[0, 0, 0].argmax())]


def test_without_the_declaration_the_trace_has_no_such_array(tiny):
    trace = _trace(tiny)
    with pytest.raises(KeyError, match="no per-layer 'scores'"):
        trace.layer_array("scores")
    assert "scores" not in trace.output.per_layer()
