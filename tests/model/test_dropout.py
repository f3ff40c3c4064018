"""The CPU's dropout (model/dropout.py): nn.Dropout's coin with a cheaper mask, and attention written out to use it."""

import math

import pytest
import torch

from bertviz_lite.model.config import BertConfig
from bertviz_lite.model.dropout import COIN_SIDES, BertDropout, drop_threshold, dropped, keep_mask
from bertviz_lite.model.modeling import BertSelfAttention


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_each_element_is_dropped_with_probability_p(p):
    assert abs(drop_threshold(p) / COIN_SIDES - p) <= 0.5 / COIN_SIDES
    torch.manual_seed(0)
    count = 1 << 21
    keep = keep_mask(torch.Size([count]), p)
    q = drop_threshold(p) / COIN_SIDES
    sigma = math.sqrt(q * (1 - q) / count)
    assert abs((~keep).float().mean().item() - q) < 5 * sigma, (p, (~keep).float().mean().item())
    halves = keep.view(-1, 2).float().mean(0)  # the two coins of each draw are each fair
    assert (halves - (1 - q)).abs().max().item() < 5 * sigma * math.sqrt(2), halves


def test_dropped_zeroes_the_masked_elements_scales_the_rest_and_backpropagates_the_same_mask():
    x = torch.randn(4, 7, 9, requires_grad=True)
    torch.manual_seed(3)
    out = dropped(x, 0.3)
    torch.manual_seed(3)
    keep = keep_mask(x.shape, 0.3)
    scale = COIN_SIDES / (COIN_SIDES - drop_threshold(0.3))
    assert torch.equal(out, torch.where(keep, x * scale, 0.0))
    out.backward(torch.ones_like(out))
    assert torch.equal(x.grad, keep.float() * scale)


def test_dropped_keeps_the_expected_value_and_the_edges_are_exact():
    torch.manual_seed(1)
    ones = torch.ones(1 << 20)
    mean = dropped(ones, 0.1).mean().item()
    assert abs(mean - 1) < 5 * math.sqrt(0.1 / 0.9 / ones.numel()), mean
    assert dropped(ones, 0.0) is ones
    assert torch.equal(dropped(ones, 1.0), torch.zeros_like(ones))


def test_bert_dropout_draws_on_the_cpu_in_training_only():
    layer = BertDropout(0.25)
    x = torch.randn(3, 5, 8)
    assert torch.equal(layer.eval()(x), x)
    layer.train()
    torch.manual_seed(7)
    ours = layer(x)
    torch.manual_seed(7)
    assert torch.equal(ours, dropped(x, 0.25))
    assert torch.equal(BertDropout(0.0).train()(x), x)


def test_training_attention_on_the_cpu_is_the_written_out_one_and_matches_eval_on_average():
    """With attention dropout on, a layer's training pass is q/k/v, softmax, keep_mask's dropout, @ v; averaged over
    many draws it approaches the evaluation pass (dropout keeps the expected value)."""
    attention = BertSelfAttention(
        BertConfig(hidden_size=16, num_attention_heads=2, attention_probs_dropout_prob=0.2)
    )
    hidden = torch.randn(2, 6, 16)
    with torch.no_grad():
        expected = attention.eval()(hidden, None)
        attention.train()
        torch.manual_seed(5)
        ours = attention(hidden, None)
        torch.manual_seed(5)
        written_out, inside = attention.forward_with_attention(hidden, None)
        assert torch.equal(ours, written_out)
        assert not torch.allclose(ours, expected)
        draws = 4000  # one pass over 4000 copies of the batch: a mask each
        mean = attention(hidden.repeat(draws, 1, 1), None).view(draws, *hidden.shape).mean(0)
    assert torch.allclose(mean, expected, atol=0.02), (mean - expected).abs().max()
