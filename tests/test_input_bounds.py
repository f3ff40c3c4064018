"""Issue 30, deliverables 2 and 6: every typed text has a bound checked before any work, "Your sentences" a cap on
lines and occurrences, uploads within what a checkpoint really needs, and a safetensors header within what a BERT of
the allowed size needs, its tensor names checked before any tensor is read."""

from __future__ import annotations

import io
import json
import os
import re
import zipfile
from pathlib import Path

import pytest
import tomllib

from bertviz_lite import limits
from bertviz_lite.inspection import explore
from bertviz_lite.inspection.views import meaning_in_context as meaning
from bertviz_lite.inspection.views import why_this_word
from bertviz_lite.loading import pretrained
from bertviz_lite.loading.run_folder import validate_run_name
from bertviz_lite.model.config import BertConfig
from bertviz_lite.runs import run_options, upload
from bertviz_lite.text.corpora.senses import sense_index
from bertviz_lite.training.training_args import PRESETS
from tests.app.tiny_checkpoint import save_tiny

REPO = Path(__file__).resolve().parents[1]


class Untouchable:
    """A tokenizer that fails the test if anything asks it to tokenize."""

    def __getattr__(self, name):
        pytest.fail(f"the tokenizer was asked for {name} before the text was checked")


def test_a_3_mb_sentence_is_refused_before_it_is_tokenized():
    # Issue 30: a 3 MB sentence took the Tokens page from 0.5 to 2.2 s and held the interpreter meanwhile.
    huge = "bank " * 600_000
    with pytest.raises(
        ValueError, match=r"^Sentence A is 3,000,000 characters long; this server takes at most 20,000\.$"
    ):
        explore.encode(Untouchable(), huge, None, 128)
    with pytest.raises(ValueError, match="^Sentence B is 3,000,000 characters long"):
        explore.encode(Untouchable(), "A cat.", huge, 128)


def test_a_candidate_word_and_a_run_name_are_bounded_before_they_are_read_or_quoted():
    with pytest.raises(
        ValueError, match=r"^A candidate word is 1,000,000 characters long; this server takes at most 50\.$"
    ):
        why_this_word.candidate_id(Untouchable(), "w" * 1_000_000)
    with pytest.raises(ValueError, match=r"^The run name is 1,000,001 characters long; use at most 100$"):
        validate_run_name("/" + "n" * 1_000_000)  # the separator's message would have quoted the whole name


def test_your_sentences_are_capped_in_characters_lines_and_occurrences_before_any_tokenizing():
    # Issue 30: 200 lines of "bank " × 120 (121 kB) made 24,061 occurrences, 21.6 s of CPU and +410 MB.
    text = "\n".join(["bank " * 120] * 200)
    message = r"^The text of your sentences is 120,199 characters long; this server takes at most 20,000\.$"
    with pytest.raises(ValueError, match=message):
        meaning.user_lines(text)
    with pytest.raises(ValueError, match=r"^Your sentences are 101 lines; this server takes at most 100\.$"):
        meaning.user_lines("\n".join(["The bank."] * 101))
    lines = meaning.user_lines("\n".join(["bank " * 30] * 10))  # 300 occurrences in 1,500 characters
    with pytest.raises(ValueError, match=r"occurs more than 200 times in your sentences"):
        meaning.gather_occurrences(sense_index(), "bank", lines, limit=0)
    with pytest.raises(
        ValueError, match="characters long"
    ):  # the package checks again: a caller may skip user_lines
        meaning.gather_occurrences(sense_index(), "bank", ["bank " * 120] * 50, limit=0)
    found = meaning.gather_occurrences(sense_index(), "bank", ["[river] We sat on the bank."], limit=0)
    assert [(o.text, o.sense) for o in found] == [("We sat on the bank.", f"river ({meaning.YOURS})")]


def test_a_pasted_corpus_is_measured_in_characters_before_it_is_encoded():
    with pytest.raises(
        ValueError, match=r"^The pasted corpus is 6,000,000 characters long; this server takes at most"
    ):
        run_options.corpus_summary("é" * 6_000_000)
    assert run_options.corpus_summary("One cat sat. It slept.\n\nA dog ran. It barked.") == (2, 4)


def test_the_upload_limit_is_the_largest_checkpoint_zip_a_visitor_really_needs():
    config = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] == limits.MAX_UPLOAD_MB  # was 1024
    assert upload.MAX_ZIP_BYTES == limits.MAX_UPLOAD_MB * limits.MB
    base = BertConfig(**PRESETS["base"]["config"], vocab_size=PRESETS["base"]["vocab_size"])
    weights = 4 * (limits.parameter_count(base) + base.vocab_size * base.hidden_size + base.vocab_size)
    worst = (
        weights
        + limits.MAX_SNAPSHOTS_BYTES
        + limits.MAX_METRICS_BYTES
        + limits.MAX_VOCAB_BYTES
        + 2 * limits.MAX_JSON_BYTES
    )
    assert worst <= upload.MAX_ZIP_BYTES < worst + 16 * limits.MB


def test_at_most_two_uploads_are_unpacked_at_once(tmp_path):
    for claim in (1, 2):
        (tmp_path / f".upload-{os.getpid()}-{claim}-x").mkdir()  # two uploads of this live process, unpacking
    with pytest.raises(
        upload.CheckpointError, match="2 uploads are being unpacked now, the most this server takes"
    ):
        upload.import_zip(zip_of(save_tiny(tmp_path / "m")), "third", tmp_path)
    assert not (tmp_path / "third").exists()


def zip_of(folder: Path, replace: dict[str, bytes] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in folder.iterdir():
            archive.writestr(f"m/{path.name}", (replace or {}).get(path.name, path.read_bytes()))
    return buffer.getvalue()


def empty_tensors(count: int) -> bytes:
    """A safetensors file of `count` empty float32 tensors: a header and no data."""
    entry = json.dumps({"dtype": "F32", "shape": [0], "data_offsets": [0, 0]})
    # json.dumps of the whole dict, written out: 800,000 tensors in 0.3 s instead of 3 s
    header = "{" + ", ".join(f'"t{i}": {entry}' for i in range(count)) + "}"
    return len(header).to_bytes(8, "little") + header.encode()


def test_an_upload_with_800_000_empty_tensors_is_refused_at_its_first_bytes(tmp_path):
    # Issue 30: a 2.1 MB zip whose 47 MB header named 800,000 empty tensors cost 12 s and +698 MB before it was refused.
    data = zip_of(save_tiny(tmp_path / "m"), {"model.safetensors": empty_tensors(800_000)})
    assert len(data) < 4 * limits.MB
    with pytest.raises(
        upload.CheckpointError, match=r"has a [0-9]+ MB header; this server reads at most 1\.0 MB"
    ):
        upload.import_zip(data, "bomb", tmp_path / "checkpoints")
    assert not (tmp_path / "checkpoints" / "bomb").exists()


def test_tensor_names_are_checked_against_the_model_before_any_tensor_is_read(tmp_path, monkeypatch):
    folder = save_tiny(tmp_path / "m")
    (folder / "model.safetensors").write_bytes(empty_tensors(5_000))  # a 0.4 MB header: within the limit
    monkeypatch.setattr(
        pretrained, "load_file", lambda path: pytest.fail("tensors read before the names were checked")
    )
    with pytest.raises(
        ValueError,
        match=re.escape(
            "model.safetensors holds tensors that a BERT with this config.json "
            "does not have: 't0', 't1', 't2' and 4,997 more"
        ),
    ):
        pretrained.load_folder(folder)
    with pytest.raises(
        upload.CheckpointError, match="holds tensors that a BERT with this config.json does not have"
    ):
        upload.import_zip(zip_of(folder), "names", tmp_path / "checkpoints")


def test_a_snapshot_naming_other_tensors_is_refused_from_its_header(tmp_path):
    folder = save_tiny(tmp_path / "m")
    buffer = io.BytesIO(zip_of(folder))
    with zipfile.ZipFile(buffer, "a") as archive:
        archive.writestr("m/snapshots/step_000001.safetensors", empty_tensors(3))
    with pytest.raises(
        upload.CheckpointError, match="a snapshot holds one tensor, 'attentions', not 't0', 't1', 't2'"
    ):
        upload.import_zip(buffer.getvalue(), "snap", tmp_path / "checkpoints")
    assert not (tmp_path / "checkpoints" / "snap").exists()


def test_hugging_face_s_spellings_of_the_names_still_load(tmp_path):
    model, _ = pretrained.load_folder(
        save_tiny(tmp_path / "m")
    )  # our own files: bert.…, cls.…, the tied decoder copy
    assert model.has_mlm_head and model.has_nsp_head
    header = limits.read_safetensors_header(tmp_path / "m" / "model.safetensors", "model.safetensors")
    assert "cls.predictions.decoder.weight" in header
