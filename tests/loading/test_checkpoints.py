"""Run-folder files: safe names, atomic checkpoints that transformers loads, snapshots, metrics, status."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

from bertviz_lite.atomic import atomic_write_json, remove_temporary_files
from bertviz_lite.loading.checkpoints import (
    checkpoint_step,
    save_checkpoint,
    save_snapshot,
    snapshot_path,
)
from bertviz_lite.loading.pretrained import load_folder
from bertviz_lite.loading.run_folder import (
    MetricsWriter,
    process_alive,
    read_metrics,
    read_status,
    validate_run_name,
    write_status,
)
from bertviz_lite.model.config import BertConfig
from bertviz_lite.model.modeling import BertForPreTraining
from bertviz_lite.text.tokenization import BertTokenizer
from tests.attention_samples import load_snapshots

SENTENCES = [
    "The cat sat on the mat.",
    "The dog ran to the park.",
    "A bird sang in the tall tree.",
    "The cat and the dog are friends.",
    "Rain fell on the green field.",
    "The sun was warm over the sea.",
]


@pytest.fixture(scope="module")
def tiny():
    tokenizer = BertTokenizer.train(SENTENCES * 5, vocab_size=120)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=32,
    )
    torch.manual_seed(0)
    return BertForPreTraining(config).eval(), tokenizer


@pytest.mark.parametrize("name", ["demo-tiny", "run-20250101-120000", "a", "v1.2_x"])
def test_good_run_names_pass(name):
    assert validate_run_name(name) == name


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("", "empty"),
        ("  ", "empty"),
        ("a/b", "separator"),
        ("a\\b", "separator"),
        ("..", ".."),
        ("x..y", ".."),
        (".hidden", "hidden"),
        ("-rf", "letter or digit"),
        ("a b", "letters, digits"),
        ("x" * 101, "at most"),
    ],
)
def test_unsafe_run_names_are_refused(name, fragment):
    with pytest.raises(ValueError, match=fragment):
        validate_run_name(name)


def test_checkpoint_loads_in_bertviz_lite_and_transformers_with_equal_logits(tiny, tmp_path):
    model, tokenizer = tiny
    save_checkpoint(tmp_path, model, tokenizer, {"args": {"steps": 3}}, step=3)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "config.json",
        "model.safetensors",
        "train_args.json",
        "vocab.txt",
    ]
    assert checkpoint_step(tmp_path) == 3
    loaded, loaded_tokenizer = load_folder(tmp_path)
    assert loaded_tokenizer.vocab == tokenizer.vocab
    from transformers import BertForPreTraining

    hf = BertForPreTraining.from_pretrained(tmp_path).eval()
    inputs = tokenizer.encode_pair("The cat sat.", "The dog ran.", max_length=32).to_tensors()
    with torch.no_grad():
        ours = loaded.mlm_logits(**inputs)
        theirs = hf(**inputs)
        ours_nsp = loaded.next_sentence_logits(**inputs)
        original = model.mlm_logits(**inputs)
    torch.testing.assert_close(ours, original, rtol=0, atol=0)
    torch.testing.assert_close(ours, theirs.prediction_logits, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(ours_nsp, theirs.seq_relationship_logits, rtol=1e-4, atol=1e-4)


def test_atomic_write_leaves_no_temporary_file_and_keeps_old_on_failure(tmp_path, monkeypatch):
    path = tmp_path / "status.json"
    atomic_write_json(path, {"a": 1, "nan": float("nan")})
    assert json.loads(path.read_text()) == {"a": 1, "nan": None}
    assert path.stat().st_mode & 0o044  # readable by others, like any file open() makes

    def failing_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_json(path, {"a": 2})
    assert json.loads(path.read_text()) == {"a": 1, "nan": None}
    assert [p.name for p in tmp_path.iterdir()] == ["status.json"]


def test_leftover_temporary_files_are_removed(tmp_path):
    (tmp_path / ".model.safetensors.abc.tmp").write_bytes(b"half")
    (tmp_path / "model.safetensors").write_bytes(b"keep")
    removed = remove_temporary_files(tmp_path)
    assert [p.name for p in removed] == [".model.safetensors.abc.tmp"]
    assert [p.name for p in tmp_path.iterdir()] == ["model.safetensors"]


def test_snapshots_round_trip_as_float16_sorted_by_step(tmp_path):
    tokens = ["[CLS]", "the", "cat", "[SEP]", "it", "[SEP]"]
    attentions = torch.softmax(torch.randn(2, 4, 6, 6), dim=-1)
    for step in (20, 0, 10):
        save_snapshot(
            tmp_path, step, attentions * 0 + attentions, tokens, [0, 0, 0, 0, 1, 1], ("the cat", "it")
        )
    assert snapshot_path(tmp_path, 10).name == "step_000010.safetensors"
    (tmp_path / "snapshots" / "step_000030.safetensors").write_bytes(b"not a snapshot")  # skipped
    (tmp_path / "snapshots" / "notes.txt").write_text("ignored")
    snapshots = load_snapshots(tmp_path)
    assert [s[0] for s in snapshots] == [0, 10, 20]
    step, maps, loaded_tokens = snapshots[1]
    assert maps.dtype == np.float16 and maps.shape == (2, 4, 6, 6)
    assert loaded_tokens == tokens
    np.testing.assert_allclose(maps.astype(np.float32).sum(-1), 1.0, atol=5e-3)
    np.testing.assert_allclose(maps, attentions.numpy(), atol=1e-3)
    assert load_snapshots(tmp_path / "missing") == []


def test_snapshot_shape_is_checked(tmp_path):
    with pytest.raises(ValueError, match="T = 3"):
        save_snapshot(tmp_path, 1, torch.zeros(2, 4, 5, 5), ["a", "b", "c"])


def test_read_metrics_skips_a_partly_written_last_line(tmp_path):
    writer = MetricsWriter(tmp_path)
    writer.write({"split": "train", "step": 5, "mlm_loss": 3.5, "grad_norm": float("inf")})
    writer.write({"split": "eval", "step": 5, "eval_mlm_acc": 0.25})
    writer.close()
    with open(tmp_path / "metrics.jsonl", "a") as handle:
        handle.write('{"split": "train", "step": 10, "mlm_lo')
    assert [r["step"] for r in read_metrics(tmp_path)] == [5, 5]
    assert read_metrics(tmp_path, split="train") == [
        {"split": "train", "step": 5, "mlm_loss": 3.5, "grad_norm": None}
    ]
    assert read_metrics(tmp_path, split="eval")[0]["eval_mlm_acc"] == 0.25
    assert read_metrics(tmp_path / "nowhere") == []


def test_status_is_written_with_pid_and_time_and_read_back(tmp_path):
    assert read_status(tmp_path) is None
    written = write_status(tmp_path, state="running", message="Training", step=3, total_steps=10)
    status = read_status(tmp_path)
    assert status == written and status["pid"] == os.getpid() and status["state"] == "running"
    assert status["updated_at"] > 1.6e9
    with pytest.raises(ValueError, match="state"):
        write_status(tmp_path, state="sleeping")
    (tmp_path / "status.json").write_text("{broken")
    assert read_status(tmp_path) is None
    assert process_alive(os.getpid()) and not process_alive(None)
