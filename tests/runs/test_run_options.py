"""The form's view of training options: preset values, the trainer's own checks, parameter count, corpora."""

import re

import pytest
import torch

from bertviz_lite.model.config import BertConfig
from bertviz_lite.model.modeling import BertForPreTraining
from bertviz_lite.runs import run_options
from bertviz_lite.text.corpora import english_corpus, everyday_corpus
from bertviz_lite.text.pretraining_data import builtin_corpus, split_train_eval
from bertviz_lite.training import optimization
from bertviz_lite.training.trainer import Trainer
from bertviz_lite.training.training_args import PRESETS, OptionError


@pytest.mark.parametrize("preset", list(PRESETS))
def test_preset_options_hold_every_option_with_the_presets_values(preset):
    options = run_options.preset_options(preset)
    assert (
        set(options)
        == set(run_options.training_fields()) | set(run_options.MODEL_FIELDS)
        <= set(run_options.labels())
    )
    assert options["steps"] == PRESETS[preset]["steps"]
    assert options["hidden_size"] == PRESETS[preset]["config"]["hidden_size"]
    assert run_options.check_options(options).config["hidden_size"] == options["hidden_size"]


def test_check_options_refuses_what_the_cli_refuses_and_names_the_option():
    options = run_options.preset_options("tiny")
    with pytest.raises(
        OptionError, match=r"hidden_size \(128\) must be divisible by num_attention_heads \(3\)"
    ) as err:
        run_options.check_options({**options, "num_attention_heads": 3})
    assert err.value.option == "hidden_size"
    with pytest.raises(OptionError) as err:
        run_options.check_options({**options, "lr": 0.0})
    assert err.value.option == "lr"
    with pytest.raises(OptionError, match="unknown option"):
        run_options.check_options({**options, "learning_rate": 0.1})


def test_model_size_counts_the_parameters_of_the_model_the_options_build():
    options = {
        **run_options.preset_options("tiny"),
        "hidden_size": 48,
        "num_attention_heads": 3,
        "vocab_size": 150,
    }
    config = BertConfig(**{k: options[k] for k in run_options.MODEL_FIELDS}, vocab_size=150)
    assert run_options.model_size(options) == sum(p.numel() for p in BertForPreTraining(config).parameters())


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


def test_train_pair_count_is_what_split_train_eval_keeps():
    for num_pairs in (2, 3, 19, 20, 21, 1000, 18045):
        for fraction in (0.01, 0.05, 0.5, 0.99):
            train, _ = split_train_eval([("a", "b", 0)] * num_pairs, fraction)
            assert run_options.train_pair_count(num_pairs, fraction) == len(train), (num_pairs, fraction)


def test_the_corpus_counts_the_form_relies_on():
    assert sum(len(document) for document in english_corpus()) == run_options.ENGLISH_SENTENCES
    assert (
        sum(len(document) for document in everyday_corpus()) == run_options.NAMED_CORPUS_SENTENCES["everyday"]
    )
    stories = builtin_corpus(seed=3, num_documents=2000)
    assert min(len(story) for story in stories) == run_options.FEWEST_STORY_SENTENCES
    assert run_options.builtin_sentences(3, 2000) == sum(len(story) for story in stories)


@pytest.mark.parametrize(
    ("options", "corpus", "fragment"),
    [
        (
            {"batch_size": 20_000},
            None,
            "batch_size (20000) is more than the 17143 training pairs of the corpus",
        ),
        ({"batch_size": 17, "num_documents": 3}, None, "batch_size (17) is more than the 16 training pairs"),
        ({"batch_size": 160_000, "corpus": "english"}, None, "more than the 152224 training pairs"),
        ({"batch_size": 9}, (3, 9), "batch_size (9) is more than the 8 training pairs"),
        ({"batch_size": 2}, (1, 30), "The corpus has 1 document: next-sentence pairs need at least 2"),
    ],
)
def test_check_training_pairs_refuses_batches_bigger_than_the_corpus(options, corpus, fragment):
    options = {**run_options.preset_options("tiny"), **options}
    with pytest.raises(OptionError, match=re.escape(fragment)) as err:
        run_options.check_training_pairs(options, corpus)
    assert err.value.option == ("corpus" if "document" in fragment else "batch_size")
    fits = {**options, "batch_size": 1} if corpus is None or corpus[0] > 1 else None
    if fits:
        run_options.check_training_pairs(fits, corpus)


def test_the_form_and_the_trainer_agree_on_the_largest_batch(tmp_path):
    options = {
        **run_options.preset_options("tiny"),
        "num_documents": 12,
        "vocab_size": 100,
        "seq_len": 32,
        "hidden_size": 32,
        "num_attention_heads": 4,
        "intermediate_size": 64,
        "max_position_embeddings": 32,
    }
    largest = run_options.train_pair_count(run_options.builtin_sentences(0, 12), options["eval_fraction"])
    run_options.check_training_pairs({**options, "batch_size": largest})
    with pytest.raises(OptionError) as form:
        run_options.check_training_pairs({**options, "batch_size": largest + 1})
    Trainer(run_options.check_options({**options, "batch_size": largest}, out=str(tmp_path / "run")))
    with pytest.raises(OptionError) as trainer:
        Trainer(run_options.check_options({**options, "batch_size": largest + 1}, out=str(tmp_path / "run")))
    assert str(form.value) == str(trainer.value) and not (tmp_path / "run").exists()


def test_plan_summary_gives_size_and_steps_and_advises_on_what_usually_disappoints():
    options = run_options.preset_options("tiny")
    line = run_options.plan_summary(options, has_cuda=False)
    size = run_options.model_size(options) / 1e6
    steps = options["steps"]
    batch = options["batch_size"]
    assert line == f"About {size:.2f} M parameters; {steps} steps of {batch} sentence pairs."
    continued = {**options, "init": "all-MiniLM-L6-v2", "lr": run_options.CONTINUED_PRETRAINING_MAX_LR * 2}
    assert run_options.plan_summary(continued, has_cuda=True).startswith("all-MiniLM-L6-v2's sizes;")
    assert "small learning rate" in run_options.plan_summary(continued, has_cuda=True)
    gentle = {**continued, "lr": run_options.CONTINUED_PRETRAINING_MAX_LR}
    assert run_options.training_advice(gentle, has_cuda=True) == []
    base = run_options.preset_options("base")
    assert run_options.training_advice(base, has_cuda=False) == [
        "The base preset takes hours on a CPU: try tiny or small first."
    ]
    assert run_options.training_advice(base, has_cuda=True) == []
    bf16 = {**options, "dtype": "bf16"}
    assert run_options.training_advice(bf16, has_cuda=False, cpu_bf16=False) == [
        "This CPU has no bf16 instructions (AVX512-BF16 or AMX), so bf16 is emulated here and runs many times slower "
        "than float32 (21x on a CPU with AVX2 only): choose auto or float32."
    ]
    assert run_options.training_advice(bf16, has_cuda=False, cpu_bf16=True) == []
    assert (
        run_options.training_advice({**bf16, "device": "auto"}, has_cuda=True, cpu_bf16=False) == []
    )  # on the GPU
    assert optimization.cpu_has_bf16() == bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


def test_device_problem_only_for_cuda_without_a_gpu(monkeypatch):
    monkeypatch.setattr(run_options, "cuda_unavailable_reason", lambda: "no GPU here")
    assert run_options.device_problem("cuda") == "CUDA cannot be used: no GPU here. Choose auto or CPU."
    assert run_options.device_problem("cpu") is None and run_options.device_problem("auto") is None
    monkeypatch.setattr(run_options, "cuda_unavailable_reason", lambda: None)
    assert run_options.device_problem("cuda") is None


def test_check_form_leads_a_refusal_with_the_options_label_and_sends_sizes_only_for_random_weights():
    options = run_options.preset_options("tiny")
    assert run_options.check_form(options).steps == options["steps"]
    with pytest.raises(OptionError, match=rf"^{run_options.labels()['batch_size']}: ") as refused:
        run_options.check_form({**options, "batch_size": 10**6}, corpus=(3, 12))
    assert refused.value.option == "batch_size"
    if not torch.cuda.is_available():  # CUDA graphs on a CPU server: refused on the form, before Start
        with pytest.raises(
            OptionError, match=rf"^{run_options.labels()['compile_mode']}: .*needs a CUDA GPU"
        ):
            run_options.check_form({**options, "compile_mode": "reduce-overhead"})
    assert set(run_options.MODEL_FIELDS) <= set(run_options.form_option_names(from_model=False))
    assert not set(run_options.MODEL_FIELDS) & set(run_options.form_option_names(from_model=True))
    assert "steps" in run_options.form_option_names(from_model=True)
