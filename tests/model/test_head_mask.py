"""trace(head_mask=...): the same numbers as zeroing those heads' context by hand, and as transformers with a hook."""

import math

import pytest
import torch
import torch.nn.functional as F
import transformers

from bertviz_lite.inspection.attribution import head_mask
from bertviz_lite.loading.pretrained import ENGLISH, load
from bertviz_lite.loading.run_folder import CHECKPOINTS_DIR
from bertviz_lite.model.config import BertConfig
from bertviz_lite.model.modeling import BertForPreTraining
from tests.reference import zero_heads_hooks

TINY = dict(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37)
KNOCKED = ["L0H1", "L1H3", "L1H0"]


def tiny_model(seed=0) -> BertForPreTraining:
    torch.manual_seed(seed)
    return BertForPreTraining(BertConfig(**TINY)).eval()


def pair(seed=1, length=9):
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, TINY["vocab_size"], (1, length), generator=gen)
    ids[0, 0] = 2
    ids[0, 4] = 3
    ids[0, -1] = 3
    segments = torch.zeros_like(ids)
    segments[0, 5:] = 1
    return ids, segments


def by_hand(model: BertForPreTraining, ids, segments, zeroed: set[tuple[int, int]]):
    """BERT written out from the module weights, each zeroed head's context set to 0: (hidden states, MLM, NSP)."""
    config = model.config
    emb = model.bert.embeddings
    heads = config.num_attention_heads
    size = config.hidden_size // config.num_attention_heads
    x = (
        emb.word_embeddings.weight[ids]
        + emb.position_embeddings.weight[: ids.shape[1]]
        + emb.token_type_embeddings.weight[segments]
    )
    x = F.layer_norm(
        x, (config.hidden_size,), emb.LayerNorm.weight, emb.LayerNorm.bias, config.layer_norm_eps
    )
    states = [x]
    for index, layer in enumerate(model.bert.encoder.layer):
        attn = layer.attention.self
        q, k, v = (
            F.linear(x, m.weight, m.bias).view(1, -1, heads, size).transpose(1, 2)
            for m in (attn.query, attn.key, attn.value)
        )
        context = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(size), dim=-1) @ v  # (1, nh, T, hd)
        for layer_index, head in zeroed:
            if layer_index == index:
                context[:, head] = 0.0
        context = context.transpose(1, 2).reshape(1, -1, config.hidden_size)
        out = layer.attention.output
        x = F.layer_norm(
            F.linear(context, out.dense.weight, out.dense.bias) + x,
            (config.hidden_size,),
            out.LayerNorm.weight,
            out.LayerNorm.bias,
            config.layer_norm_eps,
        )
        ffn = F.linear(
            F.gelu(F.linear(x, layer.intermediate.dense.weight, layer.intermediate.dense.bias)),
            layer.output.dense.weight,
            layer.output.dense.bias,
        )
        x = F.layer_norm(
            ffn + x,
            (config.hidden_size,),
            layer.output.LayerNorm.weight,
            layer.output.LayerNorm.bias,
            config.layer_norm_eps,
        )
        states.append(x)
    return states, model.cls.predictions(x), model.cls.seq_relationship(model.bert.pooler(x))


@torch.no_grad()
def test_head_masked_trace_equals_zeroing_the_heads_context_by_hand():
    model = tiny_model()
    ids, segments = pair()
    trace = model.trace(ids, segments, head_mask=head_mask(KNOCKED, 2, 4))
    states, mlm, nsp = by_hand(model, ids, segments, {(0, 1), (1, 3), (1, 0)})
    for ours, theirs in zip(trace.hidden_states, states, strict=True):
        torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(trace.mlm_logits, mlm, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(trace.nsp_logits, nsp, atol=1e-5, rtol=1e-5)
    assert trace.attentions[0][0, 1].abs().max() == 0 and trace.attentions[1][0, 3].abs().max() == 0
    torch.testing.assert_close(
        trace.attentions[0][0, 0].sum(-1), torch.ones(ids.shape[1])
    )  # kept heads unchanged
    unmasked = model.trace(ids, segments)
    assert (
        unmasked.mlm_logits - trace.mlm_logits
    ).abs().max() > 1e-3  # knocking heads out changes the output


@torch.no_grad()
def test_a_mask_of_ones_changes_nothing_and_a_bad_shape_is_a_sentence():
    model = tiny_model()
    ids, segments = pair()
    plain = model.trace(ids, segments)
    ones = model.trace(ids, segments, head_mask=torch.ones(2, 4))
    assert torch.equal(plain.mlm_logits, ones.mlm_logits) and torch.equal(plain.nsp_logits, ones.nsp_logits)
    with pytest.raises(
        ValueError, match=r"head_mask must have shape \(layers, heads\) = \(2, 4\), got \(4,\)"
    ):
        model.trace(ids, segments, head_mask=torch.ones(4))


def test_head_names_become_a_mask_and_bad_names_are_refused():
    mask = head_mask(["L0H1", "L1H3"], 2, 4)
    assert mask.shape == (2, 4) and mask.sum() == 6 and mask[0, 1] == 0 and mask[1, 3] == 0
    for bad in ["L2H0", "L0H4", "layer 0", "L-1H0"]:
        with pytest.raises(ValueError, match="is not a head of this model: use L0H0 … L1H3"):
            head_mask([bad], 2, 4)


@pytest.mark.skipif(
    not (CHECKPOINTS_DIR / ENGLISH / "config.json").is_file(), reason="minilm-english is not installed"
)
@torch.no_grad()
def test_head_mask_matches_transformers_with_those_heads_zeroed_on_real_weights():
    """transformers 5 dropped head_mask: the reference zeroes the heads' context with a hook on BertSelfAttention."""
    model, tokenizer = load(ENGLISH)
    reference = transformers.BertForPreTraining.from_pretrained(
        str(CHECKPOINTS_DIR / ENGLISH), attn_implementation="eager", dtype=torch.float32
    ).eval()
    knocked = {(0, 3), (2, 7), (5, 0), (5, 11)}
    zero_heads_hooks(reference, knocked)
    inputs = tokenizer.encode_pair(
        "Paris is the [MASK] of France.", "It is famous for the Eiffel Tower."
    ).to_tensors()
    theirs = reference(**inputs)
    names = [f"L{layer}H{head}" for layer, head in knocked]
    ours = model.trace(
        **inputs, head_mask=head_mask(names, model.config.num_hidden_layers, model.config.num_attention_heads)
    )
    torch.testing.assert_close(ours.mlm_logits, theirs.prediction_logits, atol=2e-4, rtol=1e-4)
    torch.testing.assert_close(ours.nsp_logits, theirs.seq_relationship_logits, atol=2e-4, rtol=1e-4)
    assert (model.trace(**inputs).mlm_logits - ours.mlm_logits).abs().max() > 1e-2
