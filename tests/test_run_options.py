"""The form's view of training options: preset values, the trainer's own checks, parameter count, corpora."""

import pytest

from bertviz_lite import run_options
from bertviz_lite.config import BertConfig
from bertviz_lite.model import Bert
from bertviz_lite.trainer import PRESETS, OptionError


@pytest.mark.parametrize("preset", list(PRESETS))
def test_preset_options_hold_every_option_with_the_presets_values(preset):
    options = run_options.preset_options(preset)
    assert set(options) == set(run_options.TRAINING_FIELDS) | set(run_options.MODEL_FIELDS) <= set(run_options.LABELS)
    assert options["steps"] == PRESETS[preset]["steps"]
    assert options["hidden_size"] == PRESETS[preset]["config"]["hidden_size"]
    assert run_options.check_options(options).config["hidden_size"] == options["hidden_size"]


def test_check_options_refuses_what_the_cli_refuses_and_names_the_option():
    options = run_options.preset_options("tiny")
    with pytest.raises(OptionError, match=r"hidden_size \(128\) must be divisible by num_attention_heads \(3\)") as err:
        run_options.check_options({**options, "num_attention_heads": 3})
    assert err.value.option == "hidden_size"
    with pytest.raises(OptionError) as err:
        run_options.check_options({**options, "lr": 0.0})
    assert err.value.option == "lr"
    with pytest.raises(OptionError, match="unknown option"):
        run_options.check_options({**options, "learning_rate": 0.1})


def test_model_size_counts_the_parameters_of_the_model_the_options_build():
    options = {**run_options.preset_options("tiny"), "hidden_size": 48, "num_attention_heads": 3, "vocab_size": 150}
    config = BertConfig(**{k: options[k] for k in run_options.MODEL_FIELDS}, vocab_size=150)
    assert run_options.model_size(options) == sum(p.numel() for p in Bert(config).parameters())


def test_corpus_summary_reads_text_as_the_trainer_does():
    assert run_options.corpus_summary(b"One. Two!\n\nThree? Four.") == (2, 4)
    assert run_options.corpus_summary("\ufeffA cat. A dog.".encode(), "notes.txt") == (1, 2)
    with pytest.raises(ValueError, match="notes.txt is not UTF-8 text"):
        run_options.corpus_summary("Café. Olé.".encode("latin-1"), "notes.txt")
    with pytest.raises(ValueError, match="binary file"):
        run_options.corpus_summary(b"A.\x00 B.", "x.txt")
    with pytest.raises(ValueError, match="fewer than 2 sentences"):
        run_options.corpus_summary(b"Just one sentence")
    with pytest.raises(ValueError, match="the limit is 5 MB"):
        run_options.corpus_summary(b"A. " * 2_000_000)


def test_the_help_texts_come_from_the_cli():
    assert "peak learning rate" in run_options.option_help()["lr"]
