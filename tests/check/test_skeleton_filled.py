"""The skeleton filled in as a learner did (learners/skeleton_filled/bert.py): no NSP head, no pooler, an MLM head
of plain names (`dense`, `ln`, `bias`). It matches whole and part by part, and so do its variants: the transform in
an nn.Sequential, an untied decoder (a design difference), an NSP head on the pooled [CLS]; a planted mistake is
still named."""

from __future__ import annotations

from pathlib import Path

import pytest

from bertviz_lite.check import CheckRequest, check_files
from bertviz_lite.check.skeleton import check_directory, progress_text

FOLDER = Path(__file__).parent / "learners" / "skeleton_filled"
TEXT = (FOLDER / "bert.py").read_text()
HEAD = (
    "        self.dense = nn.Linear(hidden_size, hidden_size)\n"
    "        self.ln = nn.LayerNorm(hidden_size, eps=1e-12)\n"
)
HEAD_CALL = "        x = self.ln(nn.functional.gelu(self.dense(x)))\n"
DECODE = "        return x @ self.emb.tok.weight.T + self.bias\n"
NSP = (
    "        self.cls_dense = nn.Linear(hidden_size, hidden_size)  # the pooler, named as a head is\n"
    "        self.nsp = nn.Linear(hidden_size, 2)\n"
)
# variant -> [(old, new), …] applied to the filled-in file
VARIANTS = {
    "sequential_transform": [
        (
            HEAD,
            "        self.top = nn.Sequential(nn.Linear(hidden_size, hidden_size), nn.GELU(), "
            "nn.LayerNorm(hidden_size, eps=1e-12))\n",
        ),
        (HEAD_CALL, "        x = self.top(x)\n"),
    ],
    "untied_decoder": [
        (HEAD, HEAD + "        self.decoder = nn.Linear(hidden_size, vocab_size, bias=False)\n"),
        (DECODE, "        return self.decoder(x) + self.bias\n"),
    ],
    "nsp_head": [
        (HEAD, HEAD + NSP),
        (HEAD_CALL, "        nsp_logits = self.nsp(torch.tanh(self.cls_dense(x[:, 0])))\n" + HEAD_CALL),
        (DECODE, "        return x @ self.emb.tok.weight.T + self.bias, nsp_logits\n"),
    ],
    "scale_dk": [("/ math.sqrt(self.hd)", "/ self.hd")],
}
EXPECTED = {
    "bert.py": [],
    "sequential_transform.py": [],
    "untied_decoder.py": ["mlm-head-untied"],
    "nsp_head.py": [],
    "scale_dk.py": [("scale-dk", "layer.0.attention.probs")],
}


def variant(name: str) -> str:
    text = TEXT
    for old, new in VARIANTS[name]:
        assert old in text, f"{name}: {old!r} is not in the filled-in skeleton"
        text = text.replace(old, new)
    return text


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    folder = tmp_path_factory.mktemp("filled")
    paths = [FOLDER / "bert.py"]
    for name in VARIANTS:
        paths.append(folder / f"{name}.py")
        paths[-1].write_text(variant(name))
    found = check_files([CheckRequest(path) for path in paths])
    return {path.name: report for path, report in zip(paths, found, strict=True)}


def test_the_filled_in_skeleton_maps_its_head_as_the_mlm_transform(reports):
    mapping = reports["bert.py"].mapping
    assert mapping["dense.weight"] == "cls.predictions.transform.dense.weight"
    assert mapping["ln.weight"] == "cls.predictions.transform.LayerNorm.weight"
    assert mapping["bias"] == "cls.predictions.bias"
    assert not any("pooler" in ours or "<" in ours for ours in mapping.values())


@pytest.mark.parametrize(
    "name", [n for n, codes in EXPECTED.items() if all(isinstance(c, str) for c in codes)]
)
def test_the_filled_in_skeleton_and_its_variants_match_at_every_stage(reports, name):
    report = reports[name]
    assert (report.verdict, report.exit_code) == ("match", 0), report.to_text()
    assert report.codes == EXPECTED[name], report.to_text()
    assert report.stages[-1].name == ("nsp_logits" if name == "nsp_head.py" else "mlm_logits")
    assert len(report.stages) >= 16 and all(s.ok and s.max_abs_diff < 1e-5 for s in report.stages), (
        report.to_text()
    )
    assert report.unmapped["theirs"] == []
    no_nsp = any(note.startswith("no NSP head") for note in report.notes)
    assert no_nsp == (name != "nsp_head.py"), report.notes
    assert "no-pooler" not in report.to_text()


def test_the_nsp_variant_maps_its_pooler_by_what_it_outputs(reports):
    mapping = reports["nsp_head.py"].mapping
    assert (
        mapping["cls_dense.weight"] == "bert.pooler.dense.weight"
    )  # a (B, H) output from [CLS], whatever its name
    assert mapping["dense.weight"] == "cls.predictions.transform.dense.weight"
    assert mapping["nsp.weight"] == "cls.seq_relationship.weight"
    assert {"pooler", "nsp_logits"} <= {s.name for s in reports["nsp_head.py"].stages}


def test_the_sequential_variant_maps_its_transform(reports):
    mapping = reports["sequential_transform.py"].mapping
    assert mapping["top.0.weight"] == "cls.predictions.transform.dense.weight"
    assert mapping["top.2.weight"] == "cls.predictions.transform.LayerNorm.weight"


def test_an_untied_decoder_is_a_design_difference_said_in_the_verdict(reports):
    text = reports["untied_decoder.py"].to_text()
    assert "Verdict: match (design differences from BERT, not errors: mlm-head-untied)" in text


def test_a_planted_scale_dk_is_named_where_it_first_shows(reports):
    report = reports["scale_dk.py"]
    assert (report.verdict, report.exit_code) == ("differs", 1)
    assert [(f.code, f.stage) for f in report.findings] == EXPECTED["scale_dk.py"], report.to_text()


def test_the_folder_shows_every_part_done():
    statuses = check_directory(FOLDER)
    assert [(s.name, s.status) for s in statuses] == [
        ("BertEmbedding", "done"),
        ("BertAttention", "done"),
        ("BertMLP", "done"),
        ("BertLayer", "done"),
        ("Bert", "done"),
        ("mask_tokens", "done"),
    ], progress_text(statuses)
    assert all(line.startswith("[x]") for line in progress_text(statuses).splitlines())


def test_a_part_whose_only_findings_are_design_differences_is_done_with_a_note(tmp_path):
    (tmp_path / "bert.py").write_text(variant("untied_decoder"))
    statuses = check_directory(tmp_path)
    assert all(s.status == "done" for s in statuses), progress_text(statuses)
    line = progress_text(statuses).splitlines()[4]
    assert line == "[x] Bert           done: design differences from BERT: mlm-head-untied"
