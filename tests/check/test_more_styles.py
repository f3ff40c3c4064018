"""Two more styles a learner writes: attention through F.scaled_dot_product_attention (no probabilities to compare,
said so; everything after them compared) and a "minimal" BERT from nn.TransformerEncoderLayer / nn.TransformerEncoder
(in_proj_weight, linear1/linear2, norm1/norm2; src_key_padding_mask True on padding), whose nn.MultiheadAttention is
asked for every head's weights although the layer calls it with need_weights=False."""

from __future__ import annotations

from pathlib import Path

import pytest

from bertviz_lite.check import CheckRequest, check_files

LEARNERS = Path(__file__).parent / "learners"
SDPA = LEARNERS / "sdpa_style.py"
MINIMAL = LEARNERS / "minimal_style.py"
PADDING = "src_key_padding_mask=input_ids == 0"
# hf_style.py with transformers' third argument required: forward(input_ids, token_type_ids, attention_mask)
TAKES_MASK = {
    "    def forward(self, input_ids, token_type_ids):\n        mask = (input_ids != 0)[:, None, None, :]": (
        "    def forward(self, input_ids, token_type_ids, attention_mask):\n"
        "        mask = attention_mask[:, None, None, :]"
    ),
    "    def forward(self, input_ids, token_type_ids):\n        hidden, pooled = self.bert(input_ids, token_type_ids)": (
        "    def forward(self, input_ids, token_type_ids, attention_mask):\n"
        "        hidden, pooled = self.bert(input_ids, token_type_ids, attention_mask)"
    ),
}


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    inverted = tmp_path_factory.mktemp("minimal") / "inverted.py"
    inverted.write_text(MINIMAL.read_text().replace(PADDING, "src_key_padding_mask=input_ids != 0"))
    takes_mask = inverted.parent / "takes_mask.py"
    text = (LEARNERS / "hf_style.py").read_text()
    for old, new in TAKES_MASK.items():
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    takes_mask.write_text(text)
    requests = {
        "takes attention_mask": CheckRequest(takes_mask),
        "sdpa": CheckRequest(SDPA),
        "sdpa attention": CheckRequest(SDPA, "attention"),
        "minimal": CheckRequest(MINIMAL),
        "inverted": CheckRequest(inverted),
    }
    return dict(zip(requests, check_files(list(requests.values())), strict=True))


@pytest.mark.parametrize("name", ["sdpa", "sdpa attention"])
def test_attention_without_exposed_probabilities_matches_and_says_what_was_not_compared(reports, name):
    report = reports[name]
    assert (report.verdict, report.exit_code, report.findings) == ("match", 0, []), report.to_text()
    names = [s.name for s in report.stages]
    assert not any(n.endswith("attention.probs") for n in names)
    assert "layer.0.attention.output" in names and len(names) >= (1 if name == "sdpa attention" else 14)
    assert all(s.ok and s.max_abs_diff < 1e-5 for s in report.stages), report.to_text()
    note = next(n for n in report.notes if n.startswith("attention probabilities not compared"))
    assert ("layer.0, layer.1" if name != "sdpa attention" else "(layer.0)") in note


def test_the_minimal_styles_encoder_layer_has_each_heads_probabilities_compared(reports):
    report = reports["minimal"]
    assert (report.verdict, report.exit_code, report.findings) == ("match", 0, []), report.to_text()
    stages = {s.name: s for s in report.stages}
    for layer in (0, 1):
        probs = stages[f"layer.{layer}.attention.probs"]
        assert probs.shape_theirs == probs.shape_ours == [4, 4, 12, 12] and probs.max_abs_diff < 1e-5, (
            report.to_text()
        )
    assert not any(n.startswith("attention probabilities not compared") for n in report.notes)


def test_the_minimal_style_maps_pytorchs_encoder_layer(reports):
    mapping = reports["minimal"].mapping
    layer = "bert.encoder.layer.1."
    assert mapping["encoder.layers.1.self_attn.in_proj_weight"] == " + ".join(
        layer + f"attention.self.{n}.weight" for n in ("query", "key", "value")
    )
    assert mapping["encoder.layers.1.self_attn.out_proj.weight"] == layer + "attention.output.dense.weight"
    assert mapping["encoder.layers.1.linear1.weight"] == layer + "intermediate.dense.weight"
    assert mapping["encoder.layers.1.linear2.weight"] == layer + "output.dense.weight"
    assert mapping["encoder.layers.1.norm1.weight"] == layer + "attention.output.LayerNorm.weight"
    assert mapping["encoder.layers.1.norm2.weight"] == layer + "output.LayerNorm.weight"
    assert mapping["head.0.weight"] == "cls.predictions.transform.dense.weight"
    assert reports["minimal"].unmapped["theirs"] == []


def test_a_padding_mask_given_in_the_attention_masks_sense_is_named_inverted(reports):
    """src_key_padding_mask is True where a key is ignored: `input_ids != 0` there hides every real token."""
    report = reports["inverted"]
    assert report.verdict == "differs"
    assert [(f.code, f.stage) for f in report.findings] == [("mask-inverted", "layer.0.attention.probs")], (
        report.to_text()
    )


def test_a_model_whose_forward_requires_transformers_attention_mask_is_given_it(reports):
    """`forward(input_ids, token_type_ids, attention_mask)`: the mask is given as transformers gives it, (B, T) with
    1 where a token may be attended (a TypeError for the missing argument before)."""
    report = reports["takes attention_mask"]
    assert (report.verdict, report.findings) == ("match", []), report.to_text()
    assert all(s.ok for s in report.stages) and len(report.stages) >= 14
