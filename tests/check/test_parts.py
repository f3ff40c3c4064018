"""--part checks one piece on its own: their BertEmbedding(ids, seg), BertAttention(x, mask) (or (q, k, v, mask),
returning (output, attention) or not), BertMLP(x), a layer; part files that import each other."""

from __future__ import annotations

from pathlib import Path

import pytest

from bertviz_lite.check import CheckRequest, check_files

LEARNERS = Path(__file__).parent / "learners"
PARTS = LEARNERS / "parts"
TUTORIAL = LEARNERS / "tutorial_style.py"

CASES = {
    "embedding": (CheckRequest(PARTS / "embedding.py", "embedding"), [], 5),
    "attention": (CheckRequest(PARTS / "attention.py", "attention"), [], 2),
    "mlp": (CheckRequest(PARTS / "mlp.py", "mlp"), [], 1),
    "layer": (CheckRequest(PARTS / "layer.py", "layer"), [], 5),
    "nn.MultiheadAttention layer with a padding mask": (CheckRequest(PARTS / "mha_layer.py", "layer"), [], 5),
    "hf attention with residual": (
        CheckRequest(LEARNERS / "hf_style.py", "attention", "BertAttention"),
        [],
        3,
    ),
    "fused attention": (CheckRequest(LEARNERS / "fused_style.py", "attention"), [], 2),
    "Sequential feed-forward": (CheckRequest(LEARNERS / "fused_style.py", "mlp"), [], 1),
    "tutorial q, k, v, mask": (CheckRequest(TUTORIAL, "attention", "MultiHeadedAttention"), [], 2),
    "tutorial embedding": (
        CheckRequest(TUTORIAL, "embedding", "BERTEmbedding"),
        ["learned-vs-sinusoidal", "segment-offset", "no-embedding-layernorm"],
        4,
    ),
    "tutorial block": (
        CheckRequest(TUTORIAL, "layer", "TransformerBlock"),
        ["layernorm-formula", "pre-ln", "gelu-tanh"],
        5,
    ),
}


PLANTED = "attention with a planted scale-dk"


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """Every case, and the part with a planted mistake, checked in one child process."""
    planted = tmp_path_factory.mktemp("planted") / "attention.py"
    planted.write_text((PARTS / "attention.py").read_text().replace("/ math.sqrt(d)", "/ d"))
    requests = {case: request for case, (request, _, _) in CASES.items()}
    requests[PLANTED] = CheckRequest(planted, "attention")
    return dict(zip(requests, check_files(list(requests.values())), strict=True))


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_part_is_checked_on_its_own(reports, case):
    report = reports[case]
    _, codes, stages = CASES[case]
    assert sorted(report.codes) == sorted(codes), report.to_text()
    assert report.verdict == ("differs" if codes else "match"), report.to_text()
    assert len(report.stages) == stages, report.to_text()
    if not codes:
        assert all(s.max_abs_diff < 1e-5 for s in report.stages)


def test_a_planted_mistake_in_a_part_is_named(reports):
    report = reports[PLANTED]
    assert [(f.code, f.stage) for f in report.findings] == [("scale-dk", "layer.0.attention.probs")]
