"""Checkpoint management: table, rename, delete, zip round trip, HF export, and hostile uploads refused."""

import hashlib
import io
import json
import os
import pickle
import resource
import stat
import struct
import subprocess
import sys
import time
import zipfile
import zlib

import pytest
import torch

from bertviz_lite import limits
from bertviz_lite.loading import run_folder
from bertviz_lite.loading.checkpoints import save_checkpoint, save_snapshot
from bertviz_lite.loading.pretrained import load_folder
from bertviz_lite.loading.run_folder import MetricsWriter, write_status
from bertviz_lite.model.config import BertConfig
from bertviz_lite.model.modeling import BertForPreTraining
from bertviz_lite.runs import lifecycle, store, upload
from bertviz_lite.server.access import Visitor, new_visitor_id, record_owner
from bertviz_lite.text.pretraining_data import builtin_corpus
from bertviz_lite.text.tokenization import BertTokenizer


@pytest.fixture(scope="module")
def tiny_model():
    texts = [sentence for document in builtin_corpus(num_documents=60) for sentence in document]
    tokenizer = BertTokenizer.train(texts, vocab_size=120)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    return BertForPreTraining(config).eval(), tokenizer


@pytest.fixture
def root(tmp_path, tiny_model):
    """A checkpoints folder with one finished run `tiny` (weights, metrics, status, a snapshot)."""
    model, tokenizer = tiny_model
    folder = tmp_path / "checkpoints" / "tiny"
    save_checkpoint(
        folder, model, tokenizer, train_args={"args": {"steps": 7}, "config": model.config.to_dict()}, step=7
    )
    writer = MetricsWriter(folder)
    writer.write(
        {"split": "train", "step": 5, "mlm_loss": 4.5, "nsp_loss": 0.7, "mlm_acc": 0.1, "nsp_acc": 0.5}
    )
    writer.write({"split": "eval", "step": 7, "eval_mlm_acc": 0.12, "eval_nsp_acc": 0.55})
    writer.write(
        {"split": "train", "step": 7, "mlm_loss": 4.0, "nsp_loss": 0.6, "mlm_acc": 0.2, "nsp_acc": 0.6}
    )
    writer.close()
    write_status(folder, state="finished", message="done", step=7, total_steps=7, checkpoint_step=7)
    save_snapshot(folder, 7, torch.full((2, 4, 3, 3), 1 / 3), ["[CLS]", "a", "[SEP]"])
    return tmp_path / "checkpoints"


def tree(root):
    """Every path under root (hidden ones too), relative, with a digest of each file."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        for p in sorted(root.rglob("*"))
        if p.name != ".launch.lock"
    }


def make_zip(members: dict[str, bytes], symlink: str | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        if symlink:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, "/etc/passwd")
    return buffer.getvalue()


def valid_members(root) -> dict[str, bytes]:
    return {f"x/{name}": (root / "tiny" / name).read_bytes() for name in store.REQUIRED_FILES}


# ---- table, rename, delete -----------------------------------------------------------------------


def test_table_row_holds_state_steps_final_metrics_and_size(root):
    (row,) = store.checkpoint_table(root)
    assert row["name"] == "tiny" and row["state"] == "finished" and row["steps"] == 7
    assert (row["mlm_loss"], row["nsp_loss"], row["mlm_acc"], row["nsp_acc"]) == (4.0, 0.6, 0.2, 0.6)
    assert (row["eval_mlm_acc"], row["eval_nsp_acc"]) == (0.12, 0.55)
    assert row["size_mb"] == round(store.folder_size(root / "tiny") / 1e6, 2) and row["size_mb"] > 0
    assert row["loadable"] is True and len(row["date"]) == 16


def test_the_table_reads_a_runs_metrics_again_only_when_they_changed(root, monkeypatch):
    reads = []
    monkeypatch.setattr(
        store, "read_metrics", lambda folder: reads.append(folder) or run_folder.read_metrics(folder)
    )
    store.checkpoint_table(root)
    (row,) = store.checkpoint_table(root)  # the same file: not read again
    assert len(reads) == 1 and row["mlm_loss"] == 4.0
    writer = MetricsWriter(root / "tiny")
    writer.write(
        {"split": "train", "step": 9, "mlm_loss": 3.5, "nsp_loss": 0.5, "mlm_acc": 0.3, "nsp_acc": 0.7}
    )
    writer.close()
    (row,) = store.checkpoint_table(root)  # a line more: read again, its numbers in the row
    assert reads[-1] == str(root / "tiny") and (row["mlm_loss"], row["mlm_acc"]) == (3.5, 0.3)
    (root / "tiny" / "metrics.jsonl").unlink()
    (row,) = store.checkpoint_table(root)
    assert "mlm_loss" not in row


def test_rename_moves_the_folder_and_refuses_clashes_and_bad_names(root):
    store.rename_checkpoint("tiny", "renamed", root)
    assert not (root / "tiny").exists() and load_folder(root / "renamed")
    (root / "other").mkdir()
    with pytest.raises(store.CheckpointError, match="already exists"):
        store.rename_checkpoint("renamed", "other", root)
    with pytest.raises(ValueError, match="path separator"):
        store.rename_checkpoint("renamed", "../escape", root)
    with pytest.raises(store.CheckpointError, match="no checkpoint named"):
        store.rename_checkpoint("missing", "x", root)
    assert (root / "renamed" / "model.safetensors").is_file()


def test_demo_tiny_cannot_be_renamed_or_deleted(root):
    (root / "demo-tiny").mkdir()
    (root / "demo-tiny" / "config.json").write_text("{}")
    with pytest.raises(store.CheckpointError, match="ships with bertviz-lite"):
        store.rename_checkpoint("demo-tiny", "mine", root)
    with pytest.raises(store.CheckpointError, match="ships with bertviz-lite"):
        store.delete_checkpoint("demo-tiny", root)
    with pytest.raises(store.CheckpointError, match="already exists"):
        store.rename_checkpoint("tiny", "demo-tiny", root)
    assert (root / "demo-tiny" / "config.json").is_file()


def test_delete_removes_everything(root):
    store.delete_checkpoint("tiny", root)
    assert tree(root) == {}


def test_a_training_run_cannot_be_renamed_or_deleted(root):
    # A live process whose command line names the training module stands in for a real run.
    # It lives until its stdin closes: when the test kills it, or when pytest itself ends.
    process = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()", "bertviz_lite.train"], stdin=subprocess.PIPE
    )
    try:
        write_status(root / "tiny", state="running", pid=process.pid, step=3, total_steps=30)
        with pytest.raises(store.CheckpointError, match="still training"):
            store.delete_checkpoint("tiny", root)
        with pytest.raises(store.CheckpointError, match="still training"):
            store.rename_checkpoint("tiny", "other", root)
    finally:
        process.kill()
        process.wait()
    assert (root / "tiny" / "model.safetensors").is_file()


# ---- download, upload, export --------------------------------------------------------------------


def test_zip_round_trip_gives_the_same_checkpoint(root, tiny_model):
    data = store.checkpoint_zip(root / "tiny")
    names = set(zipfile.ZipFile(io.BytesIO(data)).namelist())
    assert names == {
        "tiny/model.safetensors",
        "tiny/config.json",
        "tiny/vocab.txt",
        "tiny/train_args.json",
        "tiny/metrics.jsonl",
        "tiny/snapshots/step_000007.safetensors",
    }
    assert upload.suggested_name("whatever.zip", data) == "tiny"
    copy = upload.import_zip(data, "copy", root)
    assert copy == root / "copy" and not [p for p in root.iterdir() if p.name.startswith(".upload")]
    model, tokenizer = load_folder(copy)
    original, _ = tiny_model
    for key, value in original.hf_state_dict().items():
        assert torch.equal(model.hf_state_dict()[key], value), key
    assert tokenizer.vocab == tiny_model[1].vocab
    assert (copy / "snapshots" / "step_000007.safetensors").is_file()
    assert store.checkpoint_table(root)[0]["name"] in {"copy", "tiny"}
    assert {row["name"]: row["state"] for row in store.checkpoint_table(root)}["copy"] == "ready"


def test_flat_zip_without_top_folder_is_accepted(root):
    members = {name: (root / "tiny" / name).read_bytes() for name in store.REQUIRED_FILES}
    assert load_folder(upload.import_zip(make_zip(members), "flat", root))


def test_upload_with_a_taken_name_changes_nothing(root):
    before = tree(root)
    with pytest.raises(store.CheckpointError, match="already exists"):
        upload.import_zip(store.checkpoint_zip(root / "tiny"), "tiny", root)
    assert tree(root) == before


def test_hf_export_loads_in_transformers_with_the_same_logits(root, tiny_model, tmp_path):
    transformers = pytest.importorskip("transformers")
    data = store.hf_export_zip(root / "tiny")
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert sorted(archive.namelist()) == [
            "tiny-hf/config.json",
            "tiny-hf/model.safetensors",
            "tiny-hf/vocab.txt",
        ]
        archive.extractall(tmp_path / "export")
    folder = tmp_path / "export" / "tiny-hf"
    theirs = transformers.BertForPreTraining.from_pretrained(str(folder)).eval()
    hf_tokenizer = transformers.BertTokenizerFast.from_pretrained(str(folder))
    model, tokenizer = tiny_model
    enc = tokenizer.encode_pair("The cat sat on the mat.", "It was tired.")
    assert hf_tokenizer("The cat sat on the mat.", "It was tired.")["input_ids"] == enc.input_ids
    ids = torch.tensor([enc.input_ids])
    types = torch.tensor([enc.token_type_ids])
    with torch.no_grad():
        expected = model.mlm_logits(ids, types)
        got = theirs(input_ids=ids, token_type_ids=types).prediction_logits
    assert torch.allclose(expected, got, atol=1e-5)


def test_hf_export_needs_weights(root):
    (root / "tiny" / "model.safetensors").unlink()
    with pytest.raises(store.CheckpointError, match="no saved weights"):
        store.hf_export_zip(root / "tiny")


PICKLED = pickle.dumps({"weights": [1, 2, 3]}, protocol=4)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda m: {**m, "x/pytorch_model.bin": PICKLED}, "pickle-based"),
        (lambda m: {**m, "x/model.safetensors": PICKLED}, "is a Python pickle"),
        (lambda m: {**m, "x/snapshots/step_000001.safetensors": b"PK\x03\x04" + bytes(40)}, "an archive"),
        (lambda m: {**m, "x/model.safetensors": b"\x10" + bytes(30)}, "damaged or not a weight file"),
        (lambda m: {**m, "x/config.json": b"[" * 100_000}, "nested more than 32 levels"),
        (
            lambda m: {**m, "x/config.json": b'{"layer_norm_eps": null}'},
            "layer_norm_eps .* must be a finite number",
        ),
        (lambda m: {**m, "x/../../evil.txt": b"boo"}, "'..'"),
        (lambda m: {**m, "/etc/cron.d/evil": b"boo"}, "absolute"),
        (lambda m: {**m, "x\\..\\evil": b"boo"}, "Windows-style"),
        (lambda m: {**m, "x/notes.txt": b"hi"}, "may only hold"),
        (lambda m: {k: v for k, v in m.items() if not k.endswith("vocab.txt")}, "has no vocab.txt"),
        (lambda m: {**m, "x/config.json": b'{"model_type": "gpt2"}'}, "not a loadable BERT checkpoint"),
        (lambda m: {**m, "x/vocab.txt": b"[PAD]\n[UNK]\n"}, "not a loadable BERT checkpoint"),
    ],
)
def test_hostile_or_broken_uploads_are_refused_and_change_nothing(root, change, message):
    before = tree(root)
    with pytest.raises(store.CheckpointError, match=message):
        upload.import_zip(make_zip(change(valid_members(root))), "upload", root)
    assert tree(root) == before


def test_symlinks_malformed_and_oversized_zips_are_refused(root, monkeypatch):
    before = tree(root)
    with pytest.raises(store.CheckpointError, match="symbolic links"):
        upload.import_zip(make_zip(valid_members(root), symlink="x/snapshots/link.json"), "u", root)
    with pytest.raises(store.CheckpointError, match="not a readable zip"):
        upload.import_zip(b"this is not a zip at all", "u", root)
    truncated = store.checkpoint_zip(root / "tiny")[:-40]
    with pytest.raises(store.CheckpointError, match="not a readable zip|damaged"):
        upload.import_zip(truncated, "u", root)
    monkeypatch.setattr(upload, "MAX_MEMBERS", 2)
    with pytest.raises(store.CheckpointError, match="at most 2 are accepted"):
        upload.import_zip(make_zip(valid_members(root)), "u", root)
    monkeypatch.setattr(upload, "MAX_MEMBERS", 2000)
    limit = sum(len(data) for data in valid_members(root).values()) + 10_000
    monkeypatch.setenv("BERTVIZ_LITE_UPLOAD_MB", str(limit / 2**20))
    bomb = make_zip(
        {**valid_members(root), "x/metrics.jsonl": b"0" * 1_000_000}
    )  # 1 MB of zeros: ~1 kB zipped
    assert len(bomb) < limit
    with pytest.raises(store.CheckpointError, match="would unpack to"):
        upload.import_zip(bomb, "u", root)
    monkeypatch.setattr(upload, "MAX_ZIP_BYTES", 100)
    with pytest.raises(store.CheckpointError, match="the limit is"):
        upload.import_zip(make_zip(valid_members(root)), "u", root)
    assert tree(root) == before


# ---- uploads counted while they are written -------------------------------------------------------

ZEROS = 2_000_000_000


def zeros_header(size: int, header_length: int | None = None) -> bytes:
    """A safetensors file's start: its header's length (or `header_length`), then the header of `size` bytes of
    float32 zeros."""
    header = json.dumps({"w": {"dtype": "F32", "shape": [size // 4], "data_offsets": [0, size]}}).encode()
    return (header_length or len(header)).to_bytes(8, "little") + header


def safetensors_of_zeros(
    archive: zipfile.ZipFile, name: str, size: int, header_length: int | None = None
) -> None:
    """Write member `name`: a valid safetensors header for `size` bytes of float32 zeros, then the zeros."""
    with archive.open(name, "w") as sink:  # streamed: the zeros never sit in memory, and deflate to ~0.4%
        sink.write(zeros_header(size, header_length))
        chunk = bytes(8 << 20)
        for start in range(0, size, len(chunk)):
            sink.write(chunk[: size - start])


def deflated_zeros(head: bytes, size: int) -> tuple[bytes, int]:
    """Raw deflate (a zip member's data) of `head` then `size` zero bytes, and the CRC-32 of those bytes.

    Deflating 2 GB of zeros costs 2 CPU-s; here 8 MB are deflated once and their block repeated: after a full flush the
    compressor starts afresh, so each 8 MB of zeros deflates to the same bytes (checked below)."""
    chunk = bytes(8 << 20)
    whole, rest = divmod(size, len(chunk))
    deflate = zlib.compressobj(1, zlib.DEFLATED, -15)
    start = deflate.compress(head) + deflate.flush(zlib.Z_FULL_FLUSH)
    block = deflate.compress(chunk) + deflate.flush(zlib.Z_FULL_FLUSH)
    assert deflate.compress(chunk) + deflate.flush(zlib.Z_FULL_FLUSH) == block
    end = deflate.compress(bytes(rest)) + deflate.flush()
    crc = zlib.crc32(head)
    for _ in range(whole):
        crc = zlib.crc32(chunk, crc)
    return start + block * whole + end, zlib.crc32(bytes(rest), crc)


def zip_of_deflated(members: dict[str, tuple[bytes, int, int]]) -> bytes:
    """A zip archive (no zip64) of name -> (raw deflate data, CRC-32, unpacked size), written field by field."""
    local, central = io.BytesIO(), io.BytesIO()
    for name, (data, crc, size) in members.items():
        fields = struct.pack("<HHHHHIIIHH", 20, 0, 8, 0, 0x21, crc, len(data), size, len(name.encode()), 0)
        central.write(
            struct.pack("<IH", 0x02014B50, 20) + fields + struct.pack("<HHHII", 0, 0, 0, 0, local.tell())
        )
        central.write(name.encode())
        local.write(struct.pack("<I", 0x04034B50) + fields + name.encode() + data)
    count, offset = len(members), local.tell()
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, count, count, central.tell(), offset, 0)
    return local.getvalue() + central.getvalue() + end


@pytest.fixture(scope="module")
def zeros_bomb(tmp_path_factory, tiny_model):
    """A ~9 MB zip: the tiny checkpoint's config.json and vocab.txt, and a model.safetensors of 2 GB of zeros."""
    folder = save_checkpoint(tmp_path_factory.mktemp("bomb") / "x", *tiny_model)
    head = zeros_header(ZEROS)
    members = {
        "x/model.safetensors": (*deflated_zeros(head, ZEROS), len(head) + ZEROS)
    }  # first: unpacked last
    for name in ("config.json", "vocab.txt"):
        data = (folder / name).read_bytes()
        deflate = zlib.compressobj(1, zlib.DEFLATED, -15)
        members[f"x/{name}"] = (deflate.compress(data) + deflate.flush(), zlib.crc32(data), len(data))
    bomb = zip_of_deflated(members)
    assert len(bomb) < 20_000_000
    return bomb


def timed_refusal(action, match):
    """(seconds, peak RSS growth in MB) of an action that must raise CheckpointError matching `match`."""
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    with pytest.raises(store.CheckpointError, match=match):
        action()
    return time.perf_counter() - start, (
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before
    ) / 1024


def test_two_gb_of_zeros_behind_a_valid_header_is_refused_quickly_and_leaves_nothing(
    root, zeros_bomb, monkeypatch
):
    before = tree(root)
    with pytest.raises(
        store.CheckpointError, match="would unpack to 1907 MB; uploads may unpack to at most 1024 MB"
    ):
        upload.import_zip(zeros_bomb, "bomb", root)  # the zip says so itself
    monkeypatch.setenv("BERTVIZ_LITE_UPLOAD_MB", "4096")  # now only the bytes written can stop it
    seconds, growth_mb = timed_refusal(
        lambda: upload.import_zip(zeros_bomb, "bomb", root),
        r"more than 1.2 MB, the most a model with this config",
    )
    assert seconds < 1 and growth_mb < 300, (seconds, growth_mb)
    assert tree(root) == before


def test_an_upload_writes_at_most_its_budget(tmp_path, zeros_bomb, monkeypatch):
    monkeypatch.setenv("BERTVIZ_LITE_UPLOAD_MB", "4096")
    archive = zipfile.ZipFile(io.BytesIO(zeros_bomb))
    members, _ = upload.plan_members(archive)
    with pytest.raises(store.CheckpointError, match="x/model.safetensors"):
        upload._extract_all(archive, members, tmp_path, claim=ZEROS + 10_000)
    config = BertConfig.from_json_file(tmp_path / "config.json")
    written = (tmp_path / "model.safetensors").stat().st_size
    assert 0 < written <= limits.max_weight_bytes(config) < 2_000_000
    with pytest.raises(store.CheckpointError, match="more bytes than the zip declares"):
        upload._extract_all(archive, members, tmp_path / "lied", claim=100_000)
    assert sum(path.stat().st_size for path in (tmp_path / "lied").iterdir()) <= 100_000


def test_an_oversized_config_is_refused_before_any_weight_is_written(root, zeros_bomb):
    before = tree(root)
    members = valid_members(root)
    config = json.loads(members["x/config.json"])
    hostile = make_zip(
        {**members, "x/config.json": json.dumps({**config, "num_hidden_layers": 1_000_000}).encode()}
    )
    seconds, growth_mb = timed_refusal(lambda: upload.import_zip(hostile, "u", root), "1000000 layers")
    assert seconds < 1 and growth_mb < 300, (seconds, growth_mb)
    assert tree(root) == before


def test_each_file_has_its_own_limit_and_a_huge_header_is_refused(root):
    before = tree(root)
    members = valid_members(root)
    with pytest.raises(
        store.CheckpointError, match="more than 10 MB, the most this server accepts for vocab.txt"
    ):
        upload.import_zip(make_zip({**members, "x/vocab.txt": b"a\n" * 6_000_000}), "u", root)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        safetensors_of_zeros(
            archive, "x/snapshots/step_000001.safetensors", 201 << 20, header_length=200 << 20
        )
    with pytest.raises(store.CheckpointError, match="has a 200 MB header; this server reads at most 1.0 MB"):
        upload.import_zip(buffer.getvalue(), "u", root)
    assert tree(root) == before


def test_uploads_in_progress_count_against_the_disk_budget(root, monkeypatch):
    monkeypatch.setenv("BERTVIZ_LITE_UPLOAD_MB", "1")
    data = make_zip(valid_members(root))
    other = root / f".upload-{os.getpid()}-{1_000_000}-busy"  # another upload, claiming most of 1 MB
    other.mkdir()
    with pytest.raises(
        store.CheckpointError, match="Uploads being unpacked now hold 1.0 MB of the 1.0 MB allowed"
    ):
        upload.import_zip(data, "u", root)
    assert other.is_dir() and not (root / "u").exists()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    other.rename(root / f".upload-{dead.pid}-{1_000_000}-crashed")  # left by a server that died
    assert load_folder(upload.import_zip(data, "u", root))
    assert not [path for path in root.iterdir() if path.name.startswith(".upload")]


def test_refusal_messages_name_files_not_server_paths(root):
    members = valid_members(root)
    vocab = members["x/vocab.txt"].decode().splitlines()
    members["x/vocab.txt"] = "\n".join([*vocab[:-1], vocab[5]]).encode() + b"\n"  # same size, a token twice
    with pytest.raises(store.CheckpointError, match="vocab.txt lists") as caught:
        upload.import_zip(make_zip(members), "u", root)
    assert str(root) not in str(caught.value) and ".upload" not in str(caught.value)


def test_suggested_names_are_safe():
    assert upload.suggested_name("My Model (v2).zip") == "My-Model-v2"
    assert upload.suggested_name("...zip") == "uploaded"
    assert upload.suggested_name("../../etc.zip") == "etc"
    assert json.dumps(upload.suggested_name("a..b.zip")) == '"a.b"'


def test_a_rename_or_delete_that_loses_a_race_says_so_without_server_paths(root, tmp_path, monkeypatch):
    def gone(src, dst):
        raise FileNotFoundError(2, "No such file or directory", str(src))

    monkeypatch.setattr(store.os, "rename", gone)
    for call in (
        lambda: store.delete_checkpoint("tiny", root),
        lambda: store.rename_checkpoint("tiny", "other", root),
    ):
        with pytest.raises(store.CheckpointError) as err:
            call()
        assert "another window" in str(err.value) and str(tmp_path) not in str(err.value)


def test_change_refusal_says_why_a_checkpoint_cannot_be_renamed_or_deleted_now(root, monkeypatch):
    owner = Visitor(new_visitor_id())
    stranger = Visitor(new_visitor_id())
    assert store.change_refusal(store.DEMO, None, root) == store.SHIPPED  # read-only even for the server
    assert store.change_refusal("tiny", None, root) is None  # a terminal run: the server's
    assert store.change_refusal("tiny", owner, root) == store.NOT_YOURS
    record_owner(root / "tiny", owner)
    assert store.change_refusal("tiny", owner, root) is None
    assert store.change_refusal("tiny", stranger, root) == store.NOT_YOURS
    assert store.change_refusal("tiny", Visitor(stranger.id, admin=True), root) is None
    monkeypatch.setattr(lifecycle, "training_process_alive", lambda pid: pid == 4242)  # its stand-in process
    write_status(root / "tiny", state="running", pid=4242, step=1, total_steps=7)
    assert store.change_refusal("tiny", owner, root) == store.TRAINING


def test_hyperparameter_table_sets_runs_side_by_side_with_form_labels(root):
    for name, lr in (("tiny", 0.001), ("other", 0.01)):
        (root / name).mkdir(exist_ok=True)
        args = {"args": {"steps": 7, "lr": lr, "out": f"checkpoints/{name}"}, "config": {"hidden_size": 32}}
        (root / name / "train_args.json").write_text(json.dumps(args))
    table = store.hyperparameter_table(["tiny", "other"], root)
    assert list(table.columns) == ["tiny", "other"] and "out" not in table.index
    assert table.loc["Learning rate"].tolist() == ["0.001", "0.01"]
    assert table.loc["Steps"].tolist() == ["7", "7"]
    assert list(store.differing_rows(table).index) == ["Learning rate"]
    assert store.differing_rows(table[["tiny"]]).shape == (3, 1)  # one run: nothing to compare, every row
    assert store.hyperparameter_table(["missing"], root).empty


def test_a_run_continued_from_a_model_is_not_called_by_its_base_preset(root):
    (root / "continued").mkdir(exist_ok=True)
    args = {"args": {"preset": "tiny", "init": "minilm", "steps": 7}, "config": {"hidden_size": 384}}
    (root / "continued" / "train_args.json").write_text(json.dumps(args))
    table = store.hyperparameter_table(["continued"], root)
    assert table.loc["Preset", "continued"] == "continued from minilm (options based on tiny)"
