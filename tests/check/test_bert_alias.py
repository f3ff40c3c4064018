"""bertviz_lite.Bert: the exercise's signature, (input_ids, token_type_ids) -> MLM logits (B, T, V)."""

import torch

import bertviz_lite
from bertviz_lite.check.reference import check_config


def test_bert_returns_mlm_logits_of_the_exercise_shape():
    torch.manual_seed(0)
    model = bertviz_lite.Bert(check_config()).eval()
    ids = torch.randint(5, 100, (3, 9))
    logits = model(ids, torch.zeros_like(ids))
    assert logits.shape == (3, 9, 100)
    assert isinstance(model, bertviz_lite.BertForPreTraining)
    trace = model.trace(ids, torch.zeros_like(ids), heads=True)
    assert torch.allclose(logits, trace.mlm_logits, atol=1e-5)


def test_bert_keeps_its_contract_when_the_parent_forward_returns_both_heads(monkeypatch):
    model = bertviz_lite.Bert(check_config()).eval()
    ids = torch.randint(5, 100, (2, 6))
    expected = model(ids, torch.zeros_like(ids))
    monkeypatch.setattr(bertviz_lite.BertForPreTraining, "forward", lambda self, *a, **k: ("mlm", "nsp"))
    assert torch.equal(model(ids, torch.zeros_like(ids)), expected)
