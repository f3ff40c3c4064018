"""Limits on models, JSON, vocabularies and weight files: hostile folders are refused fast, without allocating."""

import json
import resource
import time
import zipfile

import pytest
import torch

from bertviz_lite import limits
from bertviz_lite.loading.checkpoints import save_checkpoint
from bertviz_lite.loading.pretrained import load_folder
from bertviz_lite.model.config import BertConfig
from bertviz_lite.model.modeling import BertForPreTraining
from bertviz_lite.text.tokenization import SPECIAL_TOKENS, BertTokenizer, read_vocab_file

TINY = dict(
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=64,
    max_position_embeddings=64,
)
BERT_BASE = BertConfig()
BERT_LARGE = BertConfig(
    hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096
)


@pytest.fixture(scope="module")
def tiny_files(tmp_path_factory):
    """The bytes of a loadable tiny checkpoint folder: {file name: bytes}."""
    tokenizer = BertTokenizer({token: i for i, token in enumerate([*SPECIAL_TOKENS, *"abcdefghij"])})
    torch.manual_seed(0)
    model = BertForPreTraining(BertConfig(vocab_size=tokenizer.vocab_size, **TINY))
    folder = save_checkpoint(tmp_path_factory.mktemp("tiny") / "tiny", model, tokenizer)
    return {path.name: path.read_bytes() for path in folder.iterdir() if path.is_file()}


@pytest.fixture
def folder(tmp_path, tiny_files):
    """A fresh copy of the tiny checkpoint to spoil."""
    target = tmp_path / "model"
    target.mkdir()
    for name, data in tiny_files.items():
        (target / name).write_bytes(data)
    return target


def edit_config(folder, **changes):
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **changes}))


def refused(action, match):
    """Run `action`, expect a ValueError matching `match`; return (seconds, peak RSS growth in MB, message)."""
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    with pytest.raises(ValueError, match=match) as caught:
        action()
    seconds = time.perf_counter() - start
    growth_mb = (
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before
    ) / 1024  # ru_maxrss is in kB
    return seconds, growth_mb, str(caught.value)


def files_of(folder):
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


# ---- the estimates -------------------------------------------------------------------------------


@pytest.mark.parametrize("position_embedding_type", ["learned", "sinusoidal"])
def test_parameter_count_is_exact(position_embedding_type):
    config = BertConfig(
        vocab_size=97, type_vocab_size=3, position_embedding_type=position_embedding_type, **TINY
    )
    assert limits.parameter_count(config) == BertForPreTraining(config).num_parameters()


def test_bert_base_and_large_fit_the_default_limits_and_twice_large_does_not():
    assert 330e6 < limits.parameter_count(BERT_LARGE) < 340e6
    assert (
        0.6e9 < limits.activation_bytes(BERT_LARGE) < 0.8e9
    )  # 24 x 16 x 512 x 512 attention weights dominate
    for config in (BERT_BASE, BERT_LARGE):
        limits.check_model_size(config)
    with pytest.raises(ValueError, match="BERTVIZ_LITE_MAX_PARAMETERS"):
        limits.check_model_size(BertConfig(hidden_size=1024, num_hidden_layers=48, num_attention_heads=16))


def test_settings_raise_the_limits_and_bad_settings_are_named(monkeypatch):
    big = BertConfig(
        hidden_size=1024, num_hidden_layers=48, num_attention_heads=16, max_position_embeddings=128
    )
    monkeypatch.setenv("BERTVIZ_LITE_MAX_PARAMETERS", "1_000_000_000")
    limits.check_model_size(big)
    monkeypatch.setenv("BERTVIZ_LITE_MAX_ACTIVATION_MB", "1")
    with pytest.raises(ValueError, match="BERTVIZ_LITE_MAX_ACTIVATION_MB"):
        limits.check_model_size(big)
    monkeypatch.setenv("BERTVIZ_LITE_MAX_PARAMETERS", "lots")
    with pytest.raises(ValueError, match="BERTVIZ_LITE_MAX_PARAMETERS must be a number greater than 0"):
        limits.check_model_size(big)


# ---- hostile config.json -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        (
            {"num_hidden_layers": 1_000_000},
            r"1000000 layers.*up to 400 M parameters.*BERTVIZ_LITE_MAX_PARAMETERS",
        ),
        ({"hidden_size": 1_000_000_000, "num_attention_heads": 1}, "BERTVIZ_LITE_MAX_PARAMETERS"),
        ({"vocab_size": 10**12}, "BERTVIZ_LITE_MAX_PARAMETERS"),
        (
            {"max_position_embeddings": 100_000, "position_embedding_type": "sinusoidal"},
            "100000-token inputs.*BERTVIZ_LITE_MAX_ACTIVATION_MB",
        ),
        ({"num_hidden_layers": 10**4000}, r"10\^4000 layers.*about 10\^4003 parameters"),
    ],
)
def test_oversized_models_are_refused_in_well_under_a_second_without_allocating(folder, changes, match):
    edit_config(folder, **changes)
    before = files_of(folder)
    seconds, growth_mb, message = refused(lambda: load_folder(folder), match)
    assert seconds < 1 and growth_mb < 50, (seconds, growth_mb)
    assert files_of(folder) == before and str(folder) not in message


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("hidden_dropout_prob", [0.1], r"hidden_dropout_prob \(\[0.1\]\) must be a finite number"),
        ("layer_norm_eps", None, r"layer_norm_eps \(None\) must be a finite number"),
        ("pad_token_id", "0", r"pad_token_id \('0'\) must be a whole number"),
        ("num_hidden_layers", True, "num_hidden_layers .* must be a whole number"),
        ("num_hidden_layers", 2.0, "num_hidden_layers .* must be a whole number"),
        ("initializer_range", 10**400, "initializer_range .* must be a finite number"),
        ("attention_probs_dropout_prob", {"a": 1}, "attention_probs_dropout_prob .* must be a finite number"),
        ("bertviz_lite_position_embedding_type", ["learned"], "position_embedding_type .* must be text"),
        ("model_type", "x" * 10_000, r"model_type is 'xxx.*…, not 'bert'"),
    ],
)
def test_config_values_of_the_wrong_type_are_value_errors_naming_the_field(folder, field, value, match):
    edit_config(folder, **{field: value})
    _, _, message = refused(lambda: load_folder(folder), match)
    assert len(message) < 300 and str(folder) not in message


def test_non_finite_numbers_in_config_json_are_refused(folder):
    text = (folder / "config.json").read_text().replace('"layer_norm_eps": 1e-12', '"layer_norm_eps": NaN')
    (folder / "config.json").write_text(text)
    refused(lambda: load_folder(folder), "layer_norm_eps .* must be a finite number")


@pytest.mark.parametrize("name", ["config.json", "tokenizer_config.json"])
def test_deep_or_large_json_is_refused_before_parsing(folder, name):
    (folder / name).write_text('{"a": ' + "[" * 200_000 + "]" * 200_000 + "}")
    seconds, _, message = refused(lambda: load_folder(folder), f"{name} is nested more than 32 levels deep")
    assert seconds < 1
    (folder / name).write_text('{"a": "' + "x" * (2 << 20) + '"}')
    refused(lambda: load_folder(folder), f"{name} is larger than 1.0 MB")


def test_brackets_inside_json_strings_do_not_count_as_nesting(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"note": "[" * 100 + '\\"{' * 50, "list": [[1]]}))
    assert limits.read_json(path, "c.json")["list"] == [[1]]


def test_a_bad_tokenizer_config_is_refused_and_an_absent_one_means_lower_case(folder):
    (folder / "tokenizer_config.json").unlink(missing_ok=True)
    assert load_folder(folder)[1].do_lower_case is True
    (folder / "tokenizer_config.json").write_text('{"do_lower_case": "no"}')
    refused(lambda: load_folder(folder), "do_lower_case is true or false")


# ---- hostile vocab.txt and weight files ------------------------------------------------------------


def test_a_huge_vocabulary_is_refused_after_reading_at_most_10_mb(folder):
    (folder / "vocab.txt").write_bytes(b"tok\n" * 3_000_000)  # 12 MB
    seconds, growth_mb, _ = refused(lambda: load_folder(folder), "vocab.txt is larger than 10 MB")
    assert seconds < 1 and growth_mb < 50, (seconds, growth_mb)
    (folder / "vocab.txt").write_bytes(b"\n" * 1_500_000)  # 1.5 MB but 1.5 M lines
    refused(lambda: load_folder(folder), "vocab.txt has 1500000 lines; .* at most 1000000")


def test_a_vocabulary_of_another_size_is_refused_before_the_tokenizer_is_built(folder):
    (folder / "vocab.txt").write_bytes(b"\r\n".join(b"t%d" % i for i in range(900_000)) + b"\r\n")
    seconds, _, _ = refused(
        lambda: load_folder(folder), "vocab.txt has 900000 tokens but config.json says vocab_size 15"
    )
    assert seconds < 1


def test_line_counts_match_how_the_vocabulary_is_read(tmp_path):
    path = tmp_path / "vocab.txt"
    for data in (b"", b"a", b"a\n", b"a\n\n", b"a\r\nb\rc", b"a\rb\r", b"a\r\r\nb"):
        path.write_bytes(data)
        assert limits.count_lines(data) == len(read_vocab_file(path)), data


def test_a_weight_file_larger_than_the_config_can_need_is_refused_unread(folder):
    with open(folder / "model.safetensors", "r+b") as handle:
        handle.truncate(3 << 30)  # 3 GB, sparse: nothing is written to the disk
    seconds, growth_mb, message = refused(
        lambda: load_folder(folder),
        r"model.safetensors is 3072 MB, but a model with this config.json needs at most 1.2 MB",
    )
    assert seconds < 1 and growth_mb < 50, (seconds, growth_mb)
    assert str(folder.parent) not in message.replace(str(folder), "")


def test_safetensors_headers_past_1_mb_or_past_the_file_are_refused():
    head = (200 << 20).to_bytes(8, "little") + b"{"
    with pytest.raises(ValueError, match="has a 200 MB header; this server reads at most 1.0 MB"):
        limits.safetensors_header_length(head, 300 << 20, "model.safetensors")
    for bad_head, size in ((head, 1000), (head[:8] + b"[", 300 << 20), (b"{", 300 << 20)):
        with pytest.raises(ValueError, match="damaged or not a weight file"):
            limits.safetensors_header_length(bad_head, size, "model.safetensors")
    assert limits.safetensors_header_length((99).to_bytes(8, "little") + b"{", 1000, "x") == 99


def test_compressed_or_legacy_torch_files_are_refused(folder, tiny_files):
    (folder / "model.safetensors").unlink()
    with zipfile.ZipFile(folder / "pytorch_model.bin", "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("archive/data/0", bytes(1000))
    refused(lambda: load_folder(folder), "holds compressed records")
    torch.save({"w": torch.zeros(3)}, folder / "pytorch_model.bin", _use_new_zipfile_serialization=False)
    refused(lambda: load_folder(folder), "legacy")


def test_clamp_pulls_a_value_into_the_range_and_keeps_one_inside():
    assert [limits.clamp(value, 1, 8) for value in (-5, 0, 1, 5, 8, 9)] == [1, 1, 1, 5, 8, 8]
    assert limits.clamp(3, 0, 0) == 0  # an empty range keeps the top: a 1-token input
