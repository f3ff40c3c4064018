"""BertForPreTraining against transformers' BERT: same weights, same numbers; plus attention invariants and config errors."""

import pytest
import torch
import transformers

from bertviz_lite.model.config import BertConfig
from bertviz_lite.model.embeddings import sinusoidal_position_table
from bertviz_lite.model.loss_rows import ROW_BUCKET, labelled_positions
from bertviz_lite.model.modeling import BertForPreTraining, meta_model

TINY = dict(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37)


def hf_model(cls=transformers.BertForPreTraining, seed=0, **overrides):
    torch.manual_seed(seed)
    config = transformers.BertConfig(**{**TINY, **overrides}, attn_implementation="eager")
    return cls(config).eval()


def padded_pair_batch(seed=1):
    """Three sentence pairs of different lengths, padded to 11 tokens."""
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, TINY["vocab_size"], (3, 11), generator=gen)
    token_type_ids = torch.zeros_like(ids)
    attention_mask = torch.ones_like(ids)
    for row, (len_a, length) in enumerate([(5, 11), (4, 8), (3, 5)]):
        ids[row, 0] = 2
        ids[row, len_a - 1] = ids[row, length - 1] = 3
        token_type_ids[row, len_a:length] = 1
        attention_mask[row, length:] = 0
        ids[row, length:] = 0
    return ids, token_type_ids, attention_mask


def ours_from(hf):
    model = BertForPreTraining(BertConfig.from_dict(hf.config.to_dict())).eval()
    model.load_hf_state_dict(hf.state_dict())
    return model


def test_trace_matches_transformers_on_padded_pairs():
    hf = hf_model()
    model = ours_from(hf)
    ids, tt, am = padded_pair_batch()
    with torch.no_grad():
        ref = hf(
            input_ids=ids,
            token_type_ids=tt,
            attention_mask=am,
            output_hidden_states=True,
            output_attentions=True,
        )
    trace = model.trace(ids, tt, am)
    valid = am.bool()  # compare at non-padded query positions
    assert (ref.prediction_logits - trace.mlm_logits)[valid].abs().max() < 1e-5
    assert (ref.seq_relationship_logits - trace.nsp_logits).abs().max() < 1e-5
    assert len(trace.hidden_states) == len(ref.hidden_states) == 3
    for theirs, ours in zip(ref.hidden_states, trace.hidden_states, strict=True):
        assert (theirs - ours)[valid].abs().max() < 1e-5
    assert len(trace.attentions) == 2
    for theirs, ours in zip(ref.attentions, trace.attentions, strict=True):
        assert ours.shape == (3, 4, 11, 11)
        assert (theirs - ours).transpose(1, 2)[valid].abs().max() < 1e-5


def test_forward_call_contract_and_padding_default():
    model = ours_from(hf_model())
    ids, tt, am = padded_pair_batch()
    out = model(ids, tt)  # the attention mask defaults to "not padding"
    assert (
        out.prediction_logits.shape == (3, 11, TINY["vocab_size"])
        and out.prediction_logits.dtype == torch.float32
    )
    assert out.seq_relationship_logits.shape == (3, 2)
    explicit = model(ids, tt, attention_mask=am)
    assert torch.equal(out.prediction_logits, explicit.prediction_logits)
    assert torch.equal(out.seq_relationship_logits, explicit.seq_relationship_logits)
    assert torch.equal(model.mlm_logits(ids, tt), out.prediction_logits)


def test_exported_state_dict_loads_strictly_into_transformers_and_agrees():
    model = BertForPreTraining(BertConfig(**TINY)).eval()
    hf = hf_model(seed=5)
    hf.load_state_dict(model.hf_state_dict(), strict=True)
    ids, tt, am = padded_pair_batch()
    with torch.no_grad():
        ref = hf(input_ids=ids, token_type_ids=tt, attention_mask=am)
        ours = model(ids, tt, attention_mask=am)  # both heads, under transformers' names
    assert (ref.prediction_logits - ours.prediction_logits)[am.bool()].abs().max() < 1e-5
    assert (ref.seq_relationship_logits - ours.seq_relationship_logits).abs().max() < 1e-5


@pytest.mark.parametrize("cls", [transformers.BertModel, transformers.BertForMaskedLM])
def test_loads_bert_model_and_masked_lm_key_sets(cls):
    hf = hf_model(cls)
    model = BertForPreTraining(BertConfig(**TINY)).eval()
    model.load_hf_state_dict(hf.state_dict())
    ids, tt, am = padded_pair_batch()
    with torch.no_grad():
        out = hf(input_ids=ids, token_type_ids=tt, attention_mask=am, output_hidden_states=True)
    assert (out.hidden_states[-1] - model.trace(ids, tt, am).hidden_states[-1])[am.bool()].abs().max() < 1e-5
    assert model.has_mlm_head == (cls is transformers.BertForMaskedLM)
    assert model.has_nsp_head is False


def test_old_gamma_beta_names_and_position_ids_buffer_are_accepted():
    hf = hf_model()
    state = {
        k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
        for k, v in hf.state_dict().items()
    }
    state["bert.embeddings.position_ids"] = torch.arange(512).unsqueeze(0)
    model = BertForPreTraining(BertConfig(**TINY)).eval()
    model.load_hf_state_dict(state)
    ids, tt, am = padded_pair_batch()
    assert torch.allclose(
        model.mlm_logits(ids, tt, attention_mask=am), ours_from(hf).mlm_logits(ids, tt, attention_mask=am)
    )


def test_missing_unexpected_and_misshaped_keys_are_reported():
    state = hf_model().state_dict()
    model = BertForPreTraining(BertConfig(**TINY))
    broken = dict(state)
    del broken["bert.encoder.layer.1.output.dense.weight"]
    broken["bert.encoder.layer.7.output.dense.weight"] = torch.zeros(1)
    with pytest.raises(ValueError) as err:
        model.load_hf_state_dict(broken)
    assert "missing keys: bert.encoder.layer.1.output.dense.weight" in str(err.value)
    assert "unexpected keys: bert.encoder.layer.7.output.dense.weight" in str(err.value)
    wrong_size = BertForPreTraining(BertConfig(**{**TINY, "hidden_size": 64}))
    with pytest.raises(ValueError, match="has shape .* in the weights but"):
        wrong_size.load_hf_state_dict(state)


def test_attention_rows_sum_to_one_and_padded_keys_get_zero_weight():
    model = BertForPreTraining(BertConfig(**TINY)).eval()
    ids, tt, am = padded_pair_batch()
    for probs in model.trace(ids, tt, am).attentions:
        assert torch.allclose(probs.sum(-1), torch.ones(3, 4, 11), atol=1e-6)
        assert probs.masked_select(~am.bool()[:, None, None, :]).abs().max() == 0


def test_fused_and_explicit_attention_paths_agree():
    model = BertForPreTraining(BertConfig(**TINY)).eval()
    ids, tt, am = padded_pair_batch()
    hidden, pooled = model.encode(ids, tt, am)
    trace = model.trace(ids, tt, am)
    assert (hidden - trace.hidden_states[-1])[am.bool()].abs().max() < 1e-5
    assert (pooled - trace.pooled).abs().max() < 1e-5
    full = torch.ones_like(am)  # no padding: the fused path runs without a mask
    assert (model.encode(ids, tt, full)[0] - model.trace(ids, tt, full).hidden_states[-1]).abs().max() < 1e-5


def test_one_stacked_qkv_product_gives_the_three_projections_and_their_gradients():
    attention = BertForPreTraining(BertConfig(**TINY)).bert.encoder.layer[0].attention.self
    hidden = torch.randn(2, 7, TINY["hidden_size"])
    stacked = attention.project_qkv(hidden)
    three = [attention.split_heads(f(hidden)) for f in (attention.query, attention.key, attention.value)]
    weights = [f.weight for f in (attention.query, attention.key, attention.value)]
    for one, other in zip(stacked, three, strict=True):
        assert one.shape == other.shape == (2, 4, 7, 8)
        assert (one - other).abs().max() < 1e-6
    probe = [torch.randn_like(x) for x in three]
    grads = [
        torch.autograd.grad(sum((x * p).sum() for x, p in zip(outs, probe, strict=True)), weights)
        for outs in (stacked, three)
    ]
    for one, other in zip(*grads, strict=True):
        assert (one - other).abs().max() < 1e-5


def test_eval_mode_is_deterministic_and_train_mode_uses_dropout():
    model = BertForPreTraining(BertConfig(**TINY, hidden_dropout_prob=0.5)).eval()
    ids, tt, am = padded_pair_batch()
    assert torch.equal(model.mlm_logits(ids, tt), model.mlm_logits(ids, tt))
    model.train()
    assert not torch.equal(model.mlm_logits(ids, tt), model.mlm_logits(ids, tt))


def test_trace_embedding_parts_add_up():
    model = BertForPreTraining(BertConfig(**TINY)).eval()
    ids, tt, am = padded_pair_batch()
    parts = model.trace(ids, tt, am).embeddings
    assert torch.allclose(parts.sum, parts.token + parts.position + parts.segment)
    assert torch.equal(parts.token[0, 0], model.bert.embeddings.word_embeddings.weight[ids[0, 0]])
    assert torch.equal(parts.layer_norm, model.trace(ids, tt, am).hidden_states[0])


def test_sinusoidal_positions_are_fixed_and_export_to_transformers():
    model = BertForPreTraining(BertConfig(**TINY, position_embedding_type="sinusoidal")).eval()
    table = model.bert.embeddings.position_embeddings.weight
    assert not table.requires_grad
    assert torch.allclose(table, sinusoidal_position_table(512, 32))
    assert torch.allclose(
        table[1, :2], torch.tensor([torch.sin(torch.tensor(1.0)), torch.cos(torch.tensor(1.0))])
    )
    hf = hf_model()
    hf.load_state_dict(model.hf_state_dict(), strict=True)
    ids, tt, am = padded_pair_batch()
    with torch.no_grad():
        assert (
            hf(input_ids=ids, token_type_ids=tt, attention_mask=am).prediction_logits
            - model.mlm_logits(ids, tt, attention_mask=am)
        )[am.bool()].abs().max() < 1e-5


def test_the_meta_model_has_the_real_ones_names_and_shapes_and_no_storage():
    config = BertConfig(**TINY, position_embedding_type="sinusoidal")
    real = BertForPreTraining(config).state_dict()
    meta = meta_model(config).state_dict()
    assert {name: tuple(t.shape) for name, t in meta.items()} == {
        name: tuple(t.shape) for name, t in real.items()
    }
    assert {t.device.type for t in meta.values()} == {"meta"}


def test_mlm_decoder_is_tied_to_word_embeddings():
    model = BertForPreTraining(BertConfig(**TINY))
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight


def test_pretraining_loss_uses_only_masked_positions():
    model = BertForPreTraining(BertConfig(**TINY)).eval()
    ids, tt, am = padded_pair_batch()
    labels = torch.full_like(ids, -100)
    labels[0, 2] = 17
    labels[1, 1] = 42
    out = model.pretraining_loss(ids, tt, am, labels, torch.tensor([0, 1, 0]))
    full = model.mlm_logits(ids, tt, attention_mask=am)
    expected_mlm = torch.nn.functional.cross_entropy(full[labels != -100], labels[labels != -100])
    assert out.mlm_logits.shape == (2, TINY["vocab_size"])  # in float32 on the CPU: the labelled rows alone
    assert out.mlm_labels.tolist() == [17, 42]
    torch.testing.assert_close(out.mlm_logits[:2], full[labels != -100], atol=1e-5, rtol=1e-5)
    assert torch.allclose(out.mlm_loss, expected_mlm, atol=1e-6)
    assert torch.allclose(out.loss, out.mlm_loss + out.nsp_loss)
    nothing = model.pretraining_loss(ids, tt, am, torch.full_like(ids, -100), torch.tensor([0, 1, 0]))
    assert nothing.mlm_loss.item() == 0.0 and torch.isfinite(nothing.loss)
    lone = model.pretraining_loss(ids, tt, am, labels, torch.tensor([0, -100, -100]))  # -100: no NSP question
    assert torch.allclose(
        lone.nsp_loss, torch.nn.functional.cross_entropy(lone.nsp_logits[:1], torch.tensor([0]))
    )
    no_question = model.pretraining_loss(ids, tt, am, labels, torch.full((3,), -100))
    assert no_question.nsp_loss.item() == 0.0 and torch.allclose(no_question.loss, out.mlm_loss)


def test_the_last_layer_computes_only_the_rows_the_losses_read_with_the_same_losses_and_gradients():
    """pretraining_loss runs the last layer's output projection and feed-forward block on the labelled rows and [CLS]
    alone: its losses and every gradient are those of the whole pass read at those rows."""
    model = BertForPreTraining(BertConfig(**TINY)).eval()
    ids, tt, am = padded_pair_batch()
    labels = torch.full_like(ids, -100)
    labels[0, 2], labels[1, 1], labels[2, 3] = 17, 42, 5
    nsp = torch.tensor([0, 1, 0])
    out = model.pretraining_loss(ids, tt, am, labels, nsp)
    out.loss.backward()
    ours = {name: p.grad.clone() for name, p in model.named_parameters()}
    model.zero_grad()
    hidden, pooled = model.encode(ids, tt, am)  # the whole pass, every row of the last layer
    mlm = torch.nn.functional.cross_entropy(
        model.cls.predictions(hidden[labels != -100]), labels[labels != -100]
    )
    whole = mlm + torch.nn.functional.cross_entropy(model.cls.seq_relationship(pooled), nsp)
    whole.backward()
    torch.testing.assert_close(out.loss, whole, atol=1e-6, rtol=1e-6)
    for name, p in model.named_parameters():
        torch.testing.assert_close(ours[name], p.grad, atol=1e-6, rtol=1e-5, msg=name)
    embedded = model.bert.embeddings(ids, tt, torch.arange(11)[None])
    rows = torch.tensor([2, 11, 12, 25])  # flat b * T + t
    last = model.bert.encoder(embedded, None, rows=rows)
    assert last.shape == (4, TINY["hidden_size"])
    torch.testing.assert_close(
        last, model.bert.encoder(embedded, None).reshape(-1, TINY["hidden_size"])[rows]
    )


def test_labelled_positions_come_first_and_fill_a_bucket_with_unlabelled_ones():
    labels = torch.full((3, 100), -100)
    labels[0, 5] = 1
    labels[2, 1] = 2
    labels[1, 99] = 3
    positions = labelled_positions(labels)
    assert positions.shape == (ROW_BUCKET,) and positions[:3].tolist() == [5, 199, 201]
    assert (labels.reshape(-1)[positions[3:]] == -100).all() and positions.unique().numel() == ROW_BUCKET
    assert labelled_positions(labels, 3).tolist() == [5, 199, 201]
    assert labelled_positions(labels[:, :10]).shape == (30,)  # never more rows than positions
    with pytest.raises(ValueError, match=r"capacity \(2\) must hold the 3 labelled positions"):
        labelled_positions(labels, 2)


def test_cpu_bf16_projects_masked_rows_in_buckets_and_keeps_the_same_loss():
    """oneDNN caches a packed decoder per row count in bf16: the rows go in as a multiple of ROW_BUCKET (the unlabelled
    ones labelled -100), their loss is the loss of the labelled rows alone, and it still backpropagates."""
    model = BertForPreTraining(BertConfig(**TINY)).eval()
    ids, tt, am = [x.repeat(20, 1) for x in padded_pair_batch()]  # 60 pairs: more positions than a bucket
    labels = torch.full_like(ids, -100)
    labels[0, 2] = 17
    labels[1, 1] = 42
    labels[2, 3] = 5
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model.pretraining_loss(ids, tt, am, labels, torch.tensor([0, 1, 0] * 20))
        hidden, _ = model.encode(ids, tt, am)
        plain = model.cls.predictions(hidden[labels != -100])
    assert out.mlm_logits.shape == (ROW_BUCKET, TINY["vocab_size"])
    torch.testing.assert_close(
        out.mlm_logits[:3].float(), plain.float(), atol=2e-2, rtol=2e-2
    )  # bf16 rounding
    expected = torch.nn.functional.cross_entropy(plain.float(), labels[labels != -100])
    torch.testing.assert_close(out.mlm_loss, expected, atol=1e-2, rtol=1e-2)
    out.loss.backward()
    assert torch.isfinite(model.cls.predictions.decoder.weight.grad).all()


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("hidden_size", 100, "hidden_size (100) must be divisible by num_attention_heads (3)"),
        ("num_hidden_layers", 0, "num_hidden_layers (0) must be a whole number greater than 0"),
        ("vocab_size", -5, "vocab_size (-5)"),
        ("hidden_dropout_prob", 1.0, "hidden_dropout_prob (1.0) must be in [0, 1)"),
        ("attention_probs_dropout_prob", -0.1, "attention_probs_dropout_prob (-0.1)"),
        ("position_embedding_type", "rotary", "position_embedding_type ('rotary')"),
    ],
)
def test_bad_config_values_name_the_field(field, value, words):
    values = {**TINY, "num_attention_heads": 3 if field == "hidden_size" else 4, field: value}
    with pytest.raises(ValueError) as err:
        BertConfig(**values)
    assert words in str(err.value)


def test_config_round_trips_through_transformers_config():
    config = BertConfig(**TINY, position_embedding_type="sinusoidal")
    hf_config = transformers.BertConfig(**config.to_hf_dict())
    assert hf_config.hidden_size == 32 and hf_config.position_embedding_type == "absolute"
    assert BertConfig.from_dict(config.to_hf_dict()) == config
    with pytest.raises(ValueError, match="not a BERT model"):
        BertConfig.from_dict({**TINY, "model_type": "gpt2"})


def test_too_long_input_is_a_clear_error():
    model = BertForPreTraining(BertConfig(**TINY, max_position_embeddings=16))
    with pytest.raises(ValueError, match="17 tokens is more than max_position_embeddings"):
        model(torch.ones(1, 17, dtype=torch.long))


def test_every_container_module_has_a_forward_like_transformers():
    hf = hf_model()
    model = ours_from(hf)
    ids, tt, am = padded_pair_batch()
    valid = am.bool()
    with torch.no_grad():
        ref = hf(input_ids=ids, token_type_ids=tt, attention_mask=am, output_hidden_states=True)
        out = model.bert(ids, tt, am)  # BertModel, as model.bert(...) in transformers
        assert (out.last_hidden_state - ref.hidden_states[-1])[valid].abs().max() < 1e-5
        scores, relationship = model.cls(out.last_hidden_state, out.pooler_output)  # BertPreTrainingHeads
        assert (scores - ref.prediction_logits)[valid].abs().max() < 1e-5
        assert (relationship - ref.seq_relationship_logits).abs().max() < 1e-5
        layer = model.bert.encoder.layer[0]
        embedded = ref.hidden_states[0]
        mask = (1.0 - am[:, None, None, :].float()) * torch.finfo(torch.float32).min
        attention_output = layer.attention(embedded, mask)  # BertAttention: self-attention + output block
        hf_attention = hf.bert.encoder.layer[0].attention(embedded, attention_mask=mask)[0]
        assert (attention_output - hf_attention)[valid].abs().max() < 1e-5
        assert (layer(embedded, mask) - ref.hidden_states[1])[valid].abs().max() < 1e-5


def test_the_trace_keeps_one_record_per_layer():
    model = ours_from(hf_model())
    ids, tt, am = padded_pair_batch()
    trace = model.trace(ids, tt, am)
    assert len(trace.layers) == 2 and all(layer.probs.shape == (3, 4, 11, 11) for layer in trace.layers)
    assert trace.attentions[1] is trace.layers[1].probs and trace.values[0] is trace.layers[0].value
    assert BertForPreTraining is BertForPreTraining
