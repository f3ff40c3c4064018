"""The compiled, sync-free step (`--compile`, training/compiled_step.py): the same losses as the step before it, one
graph for every batch of a run, the MLM rows found on the host."""

from __future__ import annotations

import functools
import re
import warnings

import pytest
import torch
import torch._dynamo
import torch.nn.functional as F
from torch._dynamo.utils import counters

from bertviz_lite.model.loss_rows import IGNORE_INDEX, ROW_BUCKET
from bertviz_lite.runs import run_options
from bertviz_lite.training import trainer as trainer_module
from bertviz_lite.training.cli import build_parser
from bertviz_lite.training.compiled_step import (
    RowCapacity,
    check_compile_mode,
    compile_mode,
    compiled,
    host_padded,
    use_compile,
)
from bertviz_lite.training.optimization import PretrainingStep
from bertviz_lite.training.trainer import Trainer
from bertviz_lite.training.training_args import OptionError
from tests.training.test_trainer import TINY_CONFIG, tiny_args

pytestmark = pytest.mark.usefixtures("one_thread")  # torch on one thread (tests/training/conftest.py)

LONGER = {
    **TINY_CONFIG,
    "max_position_embeddings": 64,
}  # pairs shorter than seq_len: padding to a static shape


def _old_step_loss(model, batch) -> torch.Tensor:
    """The step before issue 34, spelt out: the labelled rows gathered by a boolean mask, means by cross_entropy."""
    hidden, pooled = model.encode(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"])
    chosen = batch["labels"] != IGNORE_INDEX
    mlm = F.cross_entropy(model.cls.predictions(hidden[chosen]).float(), batch["labels"][chosen])
    nsp = F.cross_entropy(model.cls.seq_relationship(pooled).float(), batch["next_sentence_label"])
    return mlm + nsp


def _gradients(model) -> dict[str, torch.Tensor]:
    grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    return grads


def test_the_static_step_gives_the_old_steps_loss_and_gradients_on_the_same_batch(tmp_path):
    trainer = Trainer(
        tiny_args(tmp_path, compile="on", seq_len=64, config=LONGER)
    )  # built, not run: nothing compiles yet
    batch = trainer.next_batch()
    assert batch["input_ids"].shape == (8, 64) and host_padded(batch)  # padded to seq_len
    assert batch["mlm_positions"].shape == (trainer._rows.capacity,)
    model = trainer.model.train()  # the tiny preset has no dropout
    new = PretrainingStep(model)(batch, padded=True)[0]
    new.backward()
    new_grads = _gradients(model)
    length = int(batch["attention_mask"].sum(1).max())  # the old step saw the batch cut to its longest pair
    old = _old_step_loss(model, {name: t[:, :length] if t.dim() == 2 else t for name, t in batch.items()})
    old.backward()
    old_grads = _gradients(model)
    torch.testing.assert_close(new, old, atol=1e-5, rtol=1e-5)
    assert new_grads.keys() == old_grads.keys()
    for name, grad in new_grads.items():
        torch.testing.assert_close(grad, old_grads[name], atol=1e-5, rtol=1e-4, msg=name)


def test_a_compiled_run_traces_one_graph_without_a_break_and_never_recompiles(tmp_path, monkeypatch):
    """dynamo alone (backend "eager"), whole graph required: the shapes and the graph are what this checks; inductor's
    code generation, a minute on 2 cores, is the bench's (bench/train_throughput.py --ours compiled)."""
    monkeypatch.setattr(
        trainer_module, "compiled", functools.partial(compiled, backend="eager", fullgraph=True)
    )
    torch._dynamo.reset()
    counters.clear()
    args = tiny_args(
        tmp_path, compile="on", steps=5, whole_word_mask=True, mask_repeats=True, copy_penalty=1.0
    )
    trainer = Trainer(args)
    assert trainer.train().state == "finished"
    assert counters["stats"]["unique_graphs"] == 1 and not counters["recompiles"]
    assert counters["stats"]["calls_captured"] > 0


def test_inductors_note_on_a_split_softmax_stays_off_the_terminal():
    """Inductor (torch 2.11) warns that it split BERT's MLM softmax, a message that starts with a newline; the trainer
    leaves it out (seen on an H200 run's terminal before the filter matched that newline), and nothing else."""
    note = (
        "\nOnline softmax is disabled on the fly since Inductor decides to\nsplit the reduction. Cut an issue to "
        "PyTorch if this is an\nimportant use case and you want to speed it up with online\nsoftmax.\n"
    )
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        compiled(torch.nn.Linear(2, 2), backend="eager")
        warnings.warn(note, UserWarning, stacklevel=1)
        warnings.warn("another note", UserWarning, stacklevel=1)
    assert [str(w.message) for w in seen] == ["another note"]


def test_row_capacity_holds_every_batch_and_grows_only_when_one_needs_more():
    rows = RowCapacity()
    labels = torch.full((4, 128), IGNORE_INDEX)
    labels[:, :15] = 1  # 60 labelled
    assert rows.positions(labels).shape == (ROW_BUCKET,) and rows.capacity == ROW_BUCKET  # 60 + 6·√60 < 128
    labels[:, 15:30] = 1  # 120: still fits
    assert rows.positions(labels).shape == (ROW_BUCKET,)
    labels[:, 30:40] = 1  # 160: one more bucket (and one recompilation)
    assert rows.positions(labels).shape == (2 * ROW_BUCKET,)
    labels[:, 20:] = IGNORE_INDEX
    assert rows.capacity == 2 * ROW_BUCKET and rows.positions(labels).shape == (2 * ROW_BUCKET,)
    assert RowCapacity().positions(labels[:1, :30]).shape == (30,)  # never more rows than positions


def test_compile_is_an_option_on_by_default_on_cuda_only():
    assert "compile" in run_options.form_fields("Optimisation") and run_options.choices("compile") == (
        "auto",
        "on",
        "off",
    )
    assert run_options.preset_options("tiny")["compile"] == "auto"
    text = " ".join(build_parser().format_help().split())
    assert "--compile {auto,on,off} compile the training step with torch.compile" in text
    assert "(default: auto)" in text.split("--compile", 1)[1]
    cpu = torch.device("cpu")
    cuda = torch.device("cuda")
    assert [use_compile(c, cpu) for c in ("auto", "on", "off")] == [False, True, False]
    assert [use_compile(c, cuda) for c in ("auto", "on", "off")] == [True, True, False]


def test_the_compile_mode_reaches_torch_compile_as_its_mode(tmp_path):
    """Read back from the compiled modules (built, not run: nothing compiles): inductor's CUDA graphs are on for
    reduce-overhead only. The trainer refuses reduce-overhead on this CPU (below), and auto, the default, means the
    default mode here."""
    trainer = Trainer(tiny_args(tmp_path, compile="on"))
    assert trainer.args.compile_mode == "auto"
    assert trainer._step_module.get_compiler_config()["triton.cudagraphs"] is False
    graphs = compiled(PretrainingStep(trainer.model), mode="reduce-overhead")
    assert graphs.get_compiler_config()["triton.cudagraphs"] is True
    assert run_options.form_fields("Optimisation")[-1] == "compile_mode"  # beside --compile on the Train form
    assert run_options.choices("compile_mode") == ("auto", "default", "reduce-overhead")
    text = " ".join(build_parser().format_help().split())
    assert "--compile-mode {auto,default,reduce-overhead} torch.compile's mode" in text


def test_auto_compile_mode_is_cuda_graphs_on_one_gpu_and_the_default_mode_elsewhere():
    """Auto is reduce-overhead where check_compile_mode accepts it (one CUDA process); a mode named is kept."""
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert compile_mode("auto", cuda, 1) == "reduce-overhead"
    assert [compile_mode("auto", device, n) for device, n in ((cpu, 1), (cuda, 2), (cpu, 2))] == [
        "default"
    ] * 3
    assert compile_mode("default", cuda, 1) == "default"
    assert compile_mode("reduce-overhead", cuda, 1) == "reduce-overhead"


def test_reduce_overhead_is_refused_where_there_are_no_cuda_graphs_to_replay(tmp_path):
    """The check itself, for devices and process counts this machine does not have (the CLI's refusal on a CPU:
    tests/training/test_train.py); torch.device("cuda") is only a name here, nothing runs on it."""
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    learner = tmp_path / "my_bert.py"
    learner.write_text("")  # only its path is checked before the training process imports it
    graphs = {"compile": "on", "compile_mode": "reduce-overhead"}
    check_compile_mode(tiny_args(tmp_path, **graphs), cuda, 1)  # a step compiled on one GPU: accepted
    refused = (
        ({}, cpu, 1, "replays the step as CUDA graphs: it needs a CUDA GPU, not the CPU"),
        ({"compile": "off"}, cuda, 1, "needs the compiled step, and compile ('off') turns it off"),
        (
            {"model_file": str(learner)},
            cuda,
            1,
            "needs the compiled step, and a model from model_file runs uncompiled",
        ),
        ({}, cuda, 2, "is for one process: under torchrun (2 processes) use 'default'"),
    )
    for changes, device, processes, refusal in refused:
        args = tiny_args(tmp_path, **{**graphs, **changes})
        with pytest.raises(
            OptionError, match=re.escape(f"compile_mode ('reduce-overhead') {refusal}")
        ) as err:
            check_compile_mode(args, device, processes)
        assert err.value.option == "compile_mode", refusal
        check_compile_mode(tiny_args(tmp_path, **changes), device, processes)  # the default mode: anywhere
