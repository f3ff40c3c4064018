"""Offline loading: the packaged all-MiniLM-L6-v2 against transformers, Hugging Face folders, bad files."""

import shutil

import pytest
import torch
import transformers

from bertviz_lite.loading import pretrained
from bertviz_lite.loading.pretrained import load, load_folder, load_tokenizer, minilm_dir
from bertviz_lite.model.modeling import BertForPreTraining

PAIRS = [
    ("The cat sat on the mat.", "It was warm and happy."),
    (
        "Paris is the capital of France, and it is famous for the Eiffel Tower.",
        "Many tourists visit every year.",
    ),
    ("A [MASK] barked at the mailman.", None),
]


@pytest.fixture(scope="module")
def reference():
    return transformers.BertModel.from_pretrained(str(minilm_dir()), attn_implementation="eager").eval()


def padded_batch(tokenizer, pairs):
    encodings = [tokenizer.encode_pair(a, b) for a, b in pairs]
    length = max(len(e.input_ids) for e in encodings)
    rows = {"input_ids": [], "token_type_ids": [], "attention_mask": []}
    for enc in encodings:
        pad = length - len(enc.input_ids)
        rows["input_ids"].append(enc.input_ids + [tokenizer.pad_token_id] * pad)
        rows["token_type_ids"].append(enc.token_type_ids + [0] * pad)
        rows["attention_mask"].append(enc.attention_mask + [0] * pad)
    return {k: torch.tensor(v) for k, v in rows.items()}


def test_minilm_matches_transformers_on_real_sentence_pairs(minilm, reference):
    model, tokenizer = minilm
    assert (model.config.num_hidden_layers, model.config.num_attention_heads, model.config.hidden_size) == (
        6,
        12,
        384,
    )
    batch = padded_batch(tokenizer, PAIRS)
    with torch.no_grad():
        ref = reference(**batch, output_attentions=True)
    trace = model.trace(**batch)
    valid = batch["attention_mask"].bool()
    assert (ref.last_hidden_state - trace.hidden_states[-1])[valid].abs().max() < 1e-4
    assert (ref.pooler_output - trace.pooled).abs().max() < 1e-4
    for theirs, ours in zip(ref.attentions, trace.attentions, strict=True):
        assert (theirs - ours).transpose(1, 2)[valid].abs().max() < 1e-5


def test_minilm_says_it_has_no_pretraining_heads(minilm):
    model, tokenizer = minilm
    assert model.has_mlm_head is False and model.has_nsp_head is False
    assert model.source == "all-MiniLM-L6-v2"
    trace = model.trace(**tokenizer.encode_pair("Hello there.").to_tensors())
    assert trace.mlm_logits is None and trace.nsp_logits is None
    assert tokenizer.vocab_size == 30522


def copy_minilm(tmp_path, weights=True):
    folder = tmp_path / "bert"
    folder.mkdir()
    for name in ("config.json", "vocab.txt", "tokenizer_config.json") + (
        ("model.safetensors",) if weights else ()
    ):
        shutil.copy(minilm_dir() / name, folder / name)
    return folder


def test_a_hugging_face_folder_loads_from_safetensors_and_from_pytorch_bin(tmp_path, minilm):
    folder = copy_minilm(tmp_path)
    model, tokenizer = load(folder)
    inputs = tokenizer.encode_pair("Folders load too.").to_tensors()
    expected = minilm[0].trace(**inputs).hidden_states[-1]
    assert torch.equal(model.trace(**inputs).hidden_states[-1], expected)
    state = pretrained.read_weights(folder)
    (folder / "model.safetensors").unlink()
    torch.save(state, folder / "pytorch_model.bin")
    model_bin, _ = load_folder(folder)
    assert torch.equal(model_bin.trace(**inputs).hidden_states[-1], expected)


class NotWeights:
    def __reduce__(self):
        return (print, ("this must never run",))


def test_a_pickle_with_code_is_refused(tmp_path):
    folder = copy_minilm(tmp_path, weights=False)
    torch.save({"x": NotWeights()}, folder / "pytorch_model.bin")
    with pytest.raises(ValueError, match="damaged or not a weight file"):
        load_folder(folder)


def test_corrupt_and_missing_files_give_clear_errors(tmp_path):
    folder = copy_minilm(tmp_path, weights=False)
    with pytest.raises(FileNotFoundError, match="No model.safetensors or pytorch_model.bin"):
        load_folder(folder)
    (folder / "model.safetensors").write_bytes(b"\x00\x01 definitely not safetensors")
    with pytest.raises(ValueError, match="damaged or not a weight file"):
        load_folder(folder)
    (folder / "vocab.txt").unlink()
    with pytest.raises(FileNotFoundError):
        load_folder(folder)
    with pytest.raises(FileNotFoundError, match="No model named 'no-such-model'"):
        load("no-such-model")


def test_a_folder_that_is_not_bert_is_refused(tmp_path):
    folder = copy_minilm(tmp_path)
    (folder / "config.json").write_text('{"model_type": "gpt2", "vocab_size": 50257}')
    with pytest.raises(ValueError, match="not a BERT model"):
        load_folder(folder)
    (folder / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_folder(folder)


def test_messages_name_the_file_not_its_path(tmp_path):
    folder = copy_minilm(tmp_path)
    lines = (folder / "vocab.txt").read_text(encoding="utf-8").splitlines()
    (folder / "vocab.txt").write_text("\n".join([*lines[:-1], lines[1000]]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="Vocabulary file vocab.txt lists") as caught:
        load_folder(folder)
    (folder / "config.json").write_text('{"vocab_size": "30522"}')
    with pytest.raises(ValueError, match=r"vocab_size \('30522'\) must be a whole number") as caught_config:
        load_folder(folder)
    for message in (str(caught.value), str(caught_config.value)):
        assert str(tmp_path) not in message


@pytest.mark.parametrize("source", ["demo-tiny", "all-MiniLM-L6-v2"])
def test_the_tokenizer_alone_is_the_one_load_returns(source):
    text = "Unbelievable tokenizers split [MASK] words."
    expected = load(source)[1].encode_pair(text, "Ok.")
    assert load_tokenizer(source).encode_pair(text, "Ok.").input_ids == expected.input_ids


def test_the_tokenizer_alone_refuses_a_vocabulary_its_config_does_not_match(tmp_path):
    folder = copy_minilm(tmp_path)
    (folder / "vocab.txt").write_text("[PAD]\n[UNK]\n", encoding="utf-8")
    with pytest.raises(ValueError, match="vocab.txt"):
        load_tokenizer(folder)


def test_minilm_weights_with_another_checksum_are_refused(monkeypatch):
    monkeypatch.setattr(pretrained, "MINILM_SHA256", "0" * 64)
    with pytest.raises(ValueError, match="sha256 differs"):
        pretrained.load_minilm()


def test_hugging_face_cache_discovery_finds_bert_snapshots(tmp_path):
    snapshot = tmp_path / "hub" / "models--someone--tiny-bert" / "snapshots" / "abc123"
    snapshot.parent.mkdir(parents=True)
    shutil.copytree(copy_minilm(tmp_path), snapshot)
    other = tmp_path / "hub" / "models--someone--gpt" / "snapshots" / "def"
    other.mkdir(parents=True)
    (other / "config.json").write_text('{"model_type": "gpt2"}')
    assert pretrained.huggingface_cache_models(tmp_path / "hub") == [snapshot]


def test_hugging_face_snapshot_folders_name_their_repo_and_the_picker_lists_them_after_checkpoints(tmp_path):
    snapshot = tmp_path / "hub" / "models--someone--tiny-bert" / "snapshots" / "abc123"
    assert pretrained.huggingface_repo_id(snapshot) == "someone/tiny-bert"
    assert pretrained.huggingface_repo_id(tmp_path / "my-run") is None
    assert pretrained.huggingface_repo_id(tmp_path / "snapshots" / "abc") is None  # a run's snapshots/
    assert pretrained.source_label(str(snapshot)) == "someone/tiny-bert (Hugging Face cache)"
    assert pretrained.source_label("my-run") == "checkpoint: my-run"
    assert pretrained.source_label(pretrained.DEFAULT_MODEL) == pretrained.DEFAULT_MODEL
    shutil.copytree(copy_minilm(tmp_path), snapshot)
    (tmp_path / "ckpt" / "mine").mkdir(parents=True)
    (tmp_path / "ckpt" / "mine" / "config.json").write_text("{}")
    (tmp_path / "ckpt" / pretrained.DEMO).mkdir()
    (tmp_path / "ckpt" / pretrained.DEMO / "config.json").write_text("{}")
    sources = pretrained.model_sources(tmp_path / "ckpt", tmp_path / "hub")
    assert sources == [*pretrained.BUILT_IN, "mine", str(snapshot)]
    assert pretrained.BUILT_IN[0] == pretrained.DEFAULT_MODEL


def test_a_complete_checkpoint_loads_exactly_and_a_headless_one_gets_the_seeded_fresh_heads(tmp_path):
    """load_folder skips BERT's random initialisation only when the file fills every weight."""
    from safetensors.torch import load_file, save_file

    from tests.app.tiny_checkpoint import save_tiny

    folder = save_tiny(tmp_path / "tiny")
    saved = load_file(str(folder / "model.safetensors"))
    model, _ = load_folder(folder)
    assert model.has_mlm_head and model.has_nsp_head
    for key, value in model.hf_state_dict().items():
        torch.testing.assert_close(value, saved[key], rtol=0, atol=0, msg=key)
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight  # still tied

    headless = {k: v for k, v in saved.items() if not k.startswith(("cls.", "bert.pooler."))}
    save_file(headless, str(folder / "model.safetensors"))
    torch.manual_seed(3)
    model, _ = load_folder(folder)
    torch.manual_seed(3)
    fresh = BertForPreTraining(model.config)  # what a seeded training run starting from this file always had
    assert not model.has_mlm_head and not model.has_nsp_head
    for name in (
        "cls.seq_relationship.weight",
        "cls.predictions.transform.dense.weight",
        "bert.pooler.dense.weight",
    ):
        torch.testing.assert_close(
            model.state_dict()[name], fresh.state_dict()[name], rtol=0, atol=0, msg=name
        )
