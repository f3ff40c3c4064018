"""Dive into Deep Learning's BERT (d2l.ai, learners/d2l_style.py), checked as a learner who copied it would check it:
its constructor's names (num_hiddens, ffn_num_hiddens, num_blks), lazy layers, a (1, max_len, H) position parameter,
heads folded into the batch, padding given as `valid_lens` and the MLM head run at `pred_positions`. The checker names
what differs from BERT; the same file made BERT matches; the same file with the padding ignored is named so."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from bertviz_lite.check import CheckRequest, check_files
from bertviz_lite.check.learner_explore import learner_trace, open_learner
from bertviz_lite.check.learner_model import LearnerSpec, load_learner
from bertviz_lite.inspection import explore
from bertviz_lite.inspection.explore import NotExposed
from bertviz_lite.loading.pretrained import DEMO, load
from bertviz_lite.model.config import BertConfig

D2L = Path(__file__).parent / "learners" / "d2l_style.py"
# A learner's three fixes toward BERT: GELU in the feed-forward and in the MLM head, a LayerNorm after the embeddings.
TO_BERT = {
    "self.relu = nn.ReLU()": "self.relu = nn.GELU()",
    "nn.LazyLinear(num_hiddens), nn.ReLU(), nn.LayerNorm": "nn.LazyLinear(num_hiddens), nn.GELU(), nn.LayerNorm",
    "        for blk in self.blks:": "        X = self.ln(X)\n        for blk in self.blks:",
    "        self.pos_embedding = nn.Parameter(": "        self.ln = nn.LayerNorm(num_hiddens)\n"
    "        self.pos_embedding = nn.Parameter(",
}


def _variant(folder: Path, name: str, replacements: dict[str, str]) -> Path:
    text = D2L.read_text()
    for old, new in replacements.items():
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path = folder / f"{name}.py"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    folder = tmp_path_factory.mktemp("d2l")
    files = {
        "as written": D2L,
        "made BERT": _variant(folder, "made_bert", TO_BERT),
        "padding ignored": _variant(
            folder, "padding_ignored", {**TO_BERT, "if valid_lens is None:": "if True:"}
        ),
    }
    requests = [CheckRequest(path) for path in files.values()]  # BERTModel found by its name
    parts = {part: CheckRequest(D2L, part) for part in ("attention", "mlp", "layer", "masking")}
    return dict(zip([*files, *parts], check_files([*requests, *parts.values()]), strict=True))


def test_d2l_as_written_is_built_mapped_and_its_differences_from_bert_named(reports):
    report = reports["as written"]
    assert (report.verdict, report.exit_code, report.subject) == ("differs", 1, "BERTModel in d2l_style.py")
    assert [(f.code, f.stage) for f in report.findings] == [
        ("no-embedding-layernorm", "layer.0.attention.probs"),
        ("relu", "layer.0.feed_forward"),
        ("mlm-head-untied", "mlm_logits"),
        ("relu", "mlm_logits"),
    ], report.to_text()
    assert report.mapping["encoder.pos_embedding"] == "bert.embeddings.position_embeddings.weight"
    assert (
        report.mapping["encoder.blks.1.attention.W_q.weight"]
        == "bert.encoder.layer.1.attention.self.query.weight"
    )
    assert report.mapping["mlm.mlp.0.weight"] == "cls.predictions.transform.dense.weight"
    assert report.mapping["hidden.0.weight"] == "bert.pooler.dense.weight"
    assert report.unmapped["theirs"] == []
    stages = {s.name: s for s in report.stages}
    # Its heads folded into the batch, (B * nh, T, T), are compared per head; the embeddings' sum, which no module
    # of its own gives, is not compared at all (the encoder's output is not the sum).
    assert stages["layer.0.attention.probs"].shape_theirs == stages["layer.0.attention.probs"].shape_ours
    assert len(stages["layer.0.attention.probs"].shape_theirs) == 4
    assert "embeddings.sum" not in stages and stages["embeddings.token"].ok
    assert {"mlm_logits", "nsp_logits", "pooler"} <= set(stages)


@pytest.mark.parametrize(
    ("part", "found", "codes"),
    [
        ("attention", "MultiHeadAttention", []),  # valid_lens given as d2l's attention takes them
        ("mlp", "PositionWiseFFN", ["relu"]),
        ("layer", "TransformerEncoderBlock", ["relu"]),
    ],
)
def test_each_d2l_piece_is_found_and_checked_alone(reports, part, found, codes):
    report = reports[part]
    assert report.subject.startswith(f"{found} in ") and report.codes == codes, report.to_text()
    assert report.stages and report.exit_code == (1 if codes else 0)


def test_d2l_has_no_masking_function_of_token_ids_and_its_masked_softmax_is_not_taken_for_one(reports):
    """d2l masks lists of token strings (`_replace_mlm_tokens`, not in the file); `masked_softmax(X, valid_lens)`,
    whose first parameter is named like token ids, is attention's."""
    report = reports["masking"]
    assert (report.verdict, report.exit_code) == ("error", 2)
    assert report.findings[0].message.startswith("No masking function found"), report.findings[0].message


def test_d2l_made_bert_matches_at_every_stage(reports):
    report = reports["made BERT"]
    assert (report.verdict, report.exit_code) == ("match", 0), report.to_text()
    assert [f.code for f in report.findings] == ["mlm-head-untied"]
    assert all(s.ok for s in report.stages) and len(report.stages) >= 18, report.to_text()


def test_d2l_with_its_valid_lens_ignored_is_named_so(reports):
    report = reports["padding ignored"]
    assert report.verdict == "differs"
    assert [f.code for f in report.findings if f.code != "mlm-head-untied"] == ["mask-ignored"], (
        report.to_text()
    )


def test_d2l_trains_through_the_learner_wrapper_with_its_heads_per_head_attention_and_nsp():
    config = BertConfig(
        vocab_size=60, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=16,
    )  # fmt: skip
    model = load_learner(LearnerSpec(D2L, "BERTModel"), config, sha256="0" * 64)
    ids = torch.tensor([[2, 7, 8, 3, 9, 3, 0, 0], [2, 11, 12, 13, 3, 14, 15, 3]])
    trace = model.trace(ids)
    assert model.has_nsp_head and model.exposes_attention
    assert [tuple(a.shape) for a in trace.attentions] == [(2, 2, 8, 8)] * 2
    assert torch.allclose(
        trace.attentions[0][0, :, :, 6:], torch.zeros(())
    )  # valid_lens: no weight on padding
    assert tuple(trace.mlm_logits.shape) == (2, 8, 60) and tuple(trace.nsp_logits.shape) == (2, 2)


def test_d2l_on_the_explore_pages_draws_each_head_and_names_the_embeddings_it_adds_inline():
    model, tokenizer = load(DEMO)
    theirs = open_learner(LearnerSpec(D2L), DEMO, model, tokenizer)
    encoding = explore.encode(tokenizer, "The cat sat on the mat.", "It slept in the sun.", 128)
    trace = learner_trace(theirs, encoding, (), model)
    ours = explore.trace_encoding(model, tokenizer, encoding, 128, (), batched=False)
    assert trace.attentions.shape == ours.attentions.shape and np.allclose(
        trace.attentions.sum(-1), 1.0, atol=1e-5
    )
    with pytest.raises(NotExposed, match="the position embeddings and the sum \\(a parameter added inline"):
        trace.embeddings  # noqa: B018 - the property raises
