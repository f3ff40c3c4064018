"""The training CLI: a real run, bad arguments, SIGTERM, and SIGKILL while saving."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from bertviz_lite import load
from bertviz_lite.loading.checkpoints import checkpoint_step
from bertviz_lite.loading.pretrained import load_folder
from bertviz_lite.loading.run_folder import read_metrics, read_status, read_train_args
from bertviz_lite.training import optimization
from bertviz_lite.training.cli import build_parser, main
from bertviz_lite.training.training_args import TrainingArguments
from devtools.preloaded import ForkedCommand
from devtools.waiting import wait_until
from tests.app.tiny_checkpoint import save_tiny

REPO = Path(__file__).resolve().parents[2]
# The tiny preset on a smaller corpus and vocabulary, so that a run starts and steps quickly.
TINY = [
    "--preset",
    "tiny",
    "--num-documents",
    "150",
    "--vocab-size",
    "300",
    "--seq-len",
    "32",
    "--batch-size",
    "8",
    "--eval-pairs",
    "32",
    "--threads",
    "1",
    "--quiet",
]
# Smaller still, for the runs that are stopped or killed.
SMALLER = [
    *TINY,
    "--hidden-size",
    "32",
    "--num-attention-heads",
    "4",
    "--intermediate-size",
    "64",
    "--max-position-embeddings",
    "32",
]


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "bertviz_lite.train", *args]


def forked(*args: str) -> list[str]:
    """The same command for the preloaded interpreter (conftest's preloaded_python), which is the `python`."""
    return command(*args)[1:]


def environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}


@pytest.mark.slow
def test_cli_trains_the_tiny_preset_and_transformers_loads_the_checkpoint(tmp_path):
    args = [
        *TINY,
        "--steps",
        "20",
        "--log-every",
        "5",
        "--eval-every",
        "10",
        "--snapshot-every",
        "10",
        "--out",
        "run",
    ]
    done = subprocess.run(
        command(*args), cwd=tmp_path, env=environment(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1].startswith("finished: Finished 20 steps")
    assert [p.name for p in tmp_path.iterdir()] == ["run"]  # nothing written outside the run folder
    run = tmp_path / "run"
    status = read_status(run)
    assert (status["state"], status["step"], status["total_steps"], status["checkpoint_step"]) == (
        "finished",
        20,
        20,
        20,
    )
    train = read_metrics(run, "train")
    assert [r["step"] for r in train] == [5, 10, 15, 20]
    for name in (
        "mlm_loss",
        "nsp_loss",
        "mlm_acc",
        "nsp_acc",
        "lr",
        "grad_norm",
        "tokens_per_s",
        "elapsed_s",
    ):
        assert all(isinstance(r[name], float) for r in train), name
    assert train[-1]["mlm_loss"] < train[0]["mlm_loss"]
    assert [r["step"] for r in read_metrics(run, "eval")] == [10, 20]
    train_args = json.loads((run / "train_args.json").read_text())
    assert train_args["args"]["steps"] == 20 and train_args["config"]["num_hidden_layers"] == 2
    assert train_args["command"].startswith("python -m bertviz_lite.train --preset tiny")
    assert sorted(p.name for p in (run / "snapshots").iterdir()) == [
        "step_000000.safetensors",
        "step_000010.safetensors",
        "step_000020.safetensors",
    ]

    model, tokenizer = load(str(run))
    from transformers import BertForPreTraining

    hf = BertForPreTraining.from_pretrained(run).eval()
    inputs = tokenizer.encode_pair(
        "Tom went to the barn with his bucket.", "There he saw a cow.", 32
    ).to_tensors()
    with torch.no_grad():
        theirs = hf(**inputs)
        torch.testing.assert_close(model.mlm_logits(**inputs), theirs.prediction_logits, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(
            model.next_sentence_logits(**inputs), theirs.seq_relationship_logits, rtol=1e-4, atol=1e-4
        )


def _corpus(tmp_path: Path, name: str, content: bytes | None) -> str:
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    return str(path)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--steps", "0"], "error: --steps (0) must be a whole number greater than 0"),
        (
            ["--hidden-size", "100", "--num-attention-heads", "3"],
            "error: --hidden-size (100) must be divisible by --num-attention-heads (3)",
        ),
        (["--corpus", "missing.txt"], "error: --corpus ('{tmp}/missing.txt'): Corpus file not found"),
        (["--corpus", "empty.txt"], "error: --corpus ('{tmp}/empty.txt'): empty.txt: The text is empty"),
        (
            ["--corpus", "binary.bin"],
            "error: --corpus ('{tmp}/binary.bin'): binary.bin looks like a binary file",
        ),
        (["--out", "{tmp}/../escape"], "error: --out ('{tmp}/../escape') must not contain '..'"),
        (
            ["--out", "{tmp}/.hidden"],
            "error: --out ('{tmp}/.hidden'): The run name '.hidden' must not start with '.'",
        ),
        (["--out", "{tmp}/a b"], "error: --out ('{tmp}/a b'): The run name 'a b' may only use"),
        (["--out", ""], "error: --out (''): The run name is empty"),
        (
            ["--out", "{tmp}/missing/run"],
            "error: --out ('{tmp}/missing/run'): the folder '{tmp}/missing' does not exist",
        ),
        (["--lr", "-1"], "error: --lr (-1.0) must be a number greater than 0"),
        (["--seq-len", "4096"], "error: --seq-len (4096) must be at most --max-position-embeddings (128)"),
        (["--hidden-size", "1000000000"], "error: --hidden-size (1000000000) must be at most 8,192"),
        (
            ["--hidden-size", "8192"],
            "error: --hidden-size (8192) makes a model of about 697 M parameters; training allows "
            "at most 350 M",
        ),
        (
            ["--seq-len", "600", "--max-position-embeddings", "1024"],
            "error: --seq-len (600) must be at most 512, the longest sentence pair the tokenizer builds",
        ),
        (
            ["--init", "all-MiniLM-L6-v2", "--seq-len", "600"],
            "error: --seq-len (600) must be at most 512, the positions",
        ),
        (
            ["--batch-size", "100000"],
            "error: --batch-size (100000) × --seq-len (64) × 512 (attention scores or",
        ),
        (
            ["--batch-size", "20000"],
            "error: --batch-size (20000) is more than the 17143 training pairs of the corpus",
        ),
        (["--vocab-size", "5"], "error: --vocab-size (5) must be at least 15"),
        (
            ["--device", "cpu", "--compile", "on", "--compile-mode", "reduce-overhead"],
            "error: --compile-mode ('reduce-overhead') replays the step as CUDA graphs: it needs a CUDA GPU, not the CPU",
        ),
        (
            ["--resume", "--lr", "0.1", "--out", "{tmp}/run"],
            "error: --resume continues a run with its own options: --lr",
        ),
        (
            ["--resume", "--out", "{tmp}/missing"],
            "error: --out ('{tmp}/missing') holds no run to resume: --resume needs",
        ),
    ],
)
def test_bad_arguments_exit_2_with_one_line_and_write_nothing(tmp_path, capsys, args, message):
    corpora = {"empty.txt": b"", "binary.bin": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"}
    for name, content in corpora.items():
        _corpus(tmp_path, name, content)
    before = sorted(tmp_path.iterdir())
    args = [a.format(tmp=tmp_path) if "{tmp}" in a else a for a in args]
    args = [str(tmp_path / a) if a in (*corpora, "missing.txt") else a for a in args]
    if "--out" not in args:
        args += ["--out", str(tmp_path / "run")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(message.format(tmp=tmp_path)), err
    assert sorted(tmp_path.iterdir()) == before


def test_an_existing_run_is_not_overwritten(tmp_path, capsys):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.json").write_text("{}")
    assert main(["--out", str(tmp_path / "run")]) == 2
    assert "already holds a run (config.json)" in capsys.readouterr().err


def _files(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under folder: its bytes and modification time."""
    return {
        str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in folder.rglob("*")
        if p.is_file()
    }


@pytest.mark.parametrize("resume", [False, True])
def test_out_to_a_users_folder_exits_2_with_one_line_and_touches_nothing(tmp_path, capsys, resume):
    folder = tmp_path / "mine"
    (folder / "snapshots").mkdir(parents=True)
    (folder / "vocab.txt").write_text("my own words\n")
    (folder / "train_args.json").write_text('{"mine": true}')
    (folder / "snapshots" / "holiday.safetensors").write_bytes(b"\x00photo")
    before = _files(folder)
    args = [*TINY, "--steps", "2", "--out", str(folder)] if not resume else ["--resume", "--out", str(folder)]
    assert main(args) == 2
    err = capsys.readouterr().err
    expected = (
        f"error: --out ('{folder}') holds no run to resume: --resume needs a run folder"
        if resume
        else f"error: --out ('{folder}') is a folder that holds other files (snapshots, train_args.json, vocab.txt)"
    )
    assert err.count("\n") == 1 and err.startswith(expected), err
    assert _files(folder) == before and sorted(p.name for p in folder.iterdir()) == [
        "snapshots",
        "train_args.json",
        "vocab.txt",
    ]


def test_an_existing_empty_folder_is_used(tmp_path, capsys):
    (tmp_path / "run").mkdir()  # as the app makes it before launching
    assert main([*SMALLER, "--steps", "2", "--log-every", "1", "--out", str(tmp_path / "run")]) == 0
    assert read_status(tmp_path / "run")["state"] == "finished"
    assert "warning" not in capsys.readouterr().err  # float32 on the CPU: nothing to warn about


@pytest.mark.parametrize("native", [False, True])
def test_bf16_on_a_cpu_that_only_emulates_it_is_warned_about_in_one_line(
    tmp_path, capsys, monkeypatch, native
):
    monkeypatch.setattr(optimization, "cpu_has_bf16", lambda: native)
    run = ["--steps", "1", "--dtype", "bf16", "--device", "cpu", "--quiet", "--out", str(tmp_path / "run")]
    assert main([*SMALLER, *run]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert warnings == (
        [] if native else [f"warning: {optimization.BF16_EMULATED}; --dtype auto or fp32 is faster."]
    )


def test_resume_continues_a_stopped_run_from_its_checkpoint(tmp_path, capsys):
    run = tmp_path / "run"
    common = ["--log-every", "2", "--eval-every", "4", "--snapshot-every", "4", "--save-every", "4"]
    assert main([*SMALLER, *common, "--steps", "8", "--out", str(run)]) == 0
    (run / "STOP").touch()  # left behind by a stop: a resumed run must not stop at once
    capsys.readouterr()
    assert main(["--resume", "--steps", "12", "--quiet", "--threads", "1", "--out", str(run)]) == 0
    assert capsys.readouterr().err.splitlines()[-1].startswith("finished: Finished 12 steps")
    assert [r["step"] for r in read_metrics(run, "train")] == [2, 4, 6, 8, 10, 12]
    assert [r["step"] for r in read_metrics(run, "eval")] == [4, 8, 12]
    status = read_status(run)
    train_args = read_train_args(run)
    assert (status["state"], status["step"], status["checkpoint_step"], checkpoint_step(run)) == (
        "finished",
        12,
        12,
        12,
    )
    assert train_args["args"]["steps"] == 12 and train_args["args"]["seq_len"] == 32
    assert (train_args["resumed_from_step"], train_args["optimizer_restored"]) == (8, True)
    assert (
        main(["--resume", "--out", str(run)]) == 2
    )  # finished: nothing more to train without a larger --steps
    assert (
        "--steps (12) must be more than the 12 steps the run has already trained" in capsys.readouterr().err
    )


def test_a_learning_rate_of_10_diverges_and_exits_1(tmp_path, capsys):
    run = tmp_path / "run"
    args = [
        *SMALLER,
        "--lr",
        "10",
        "--steps",
        "60",
        "--log-every",
        "5",
        "--save-every",
        "5",
        "--out",
        str(run),
    ]
    assert main(args) == 1
    assert capsys.readouterr().err.splitlines()[-1].startswith("diverged: Diverged at step")
    status = read_status(run)
    assert (
        status["state"] == "diverged" and status["step"] < 60 and status["checkpoint_step"] < status["step"]
    )


def test_argparse_errors_exit_2_and_help_lists_every_option(capsys):
    assert main(["--steps", "many"]) == 2
    assert "invalid int value" in capsys.readouterr().err
    assert main(["--help"]) == 0
    help_text = capsys.readouterr().out
    for name in [*TrainingArguments.__dataclass_fields__, "hidden_size", "position_embedding_type"]:
        if name != "config":
            assert f"--{name.replace('_', '-')}" in help_text, name
    assert build_parser().parse_args(["--preset", "small"]).steps is None  # None: the preset decides


@pytest.mark.slow
def test_sigterm_finishes_the_step_saves_and_stops(tmp_path, preloaded_python):
    run = tmp_path / "run"
    args = [*SMALLER, "--steps", "100000", "--log-every", "2", "--save-every", "1000", "--out", str(run)]
    process = preloaded_python.start(forked(*args), cwd=tmp_path, env=environment())
    try:
        wait_until(lambda: len(read_metrics(run, "train")) >= 2, what="two logged steps")
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    finally:
        process.kill()
        process.wait()
    status = read_status(run)
    assert status["state"] == "stopped" and status["step"] >= 4
    assert checkpoint_step(run) == status["checkpoint_step"] == status["step"]
    assert "stopped: Stopped at step" in process.stderr
    load_folder(run)


def _kill_during_a_write(run: Path, process: ForkedCommand, rng: random.Random) -> None:
    """SIGKILL as soon as a temporary weights file appears, i.e. while model.safetensors is being rewritten."""
    time.sleep(rng.uniform(0.0, 0.3))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not any(
        n.startswith(".model.safetensors.") for n in os.listdir(run)
    ):
        pass  # spin: a write lasts milliseconds
    process.kill()


MAX_ATTEMPTS = 8  # a loaded machine can let a write finish between seeing its temporary file and the kill


@pytest.mark.slow
def test_sigkill_while_saving_leaves_the_previous_checkpoint_loadable(tmp_path, preloaded_python):
    rng = random.Random(0)
    killed_mid_write = 0
    moments = [
        "write",
        "random",
        "write",
    ]  # and more kills mid-write, up to MAX_ATTEMPTS, until one lands inside a write
    for attempt in range(MAX_ATTEMPTS):
        if attempt >= len(moments) and killed_mid_write:
            break
        moment = moments[attempt] if attempt < len(moments) else "write"
        run = tmp_path / f"run{attempt}"
        args = [*SMALLER, "--steps", "100000", "--save-every", "1", "--log-every", "1000", "--out", str(run)]
        process = preloaded_python.start(forked(*args), cwd=tmp_path, env=environment())
        try:
            wait_until(lambda run=run: checkpoint_step(run) is not None, what="a first checkpoint")
            if moment == "write":
                _kill_during_a_write(run, process, rng)
            else:
                time.sleep(rng.uniform(0.0, 0.5))
        finally:
            process.kill()
            process.wait()
        killed_mid_write += any(name.endswith(".tmp") for name in os.listdir(run))  # the half-written file
        model, tokenizer = load_folder(run)
        assert checkpoint_step(run) >= 0 and tokenizer.vocab_size == model.config.vocab_size
    assert killed_mid_write >= 1  # at least one kill landed inside a write of the weights


@pytest.mark.slow
def test_two_runs_with_the_same_seed_give_the_same_vocabulary_losses_and_weights(tmp_path, preloaded_python):
    args = [
        *TINY,
        "--hidden-size",
        "32",
        "--num-attention-heads",
        "4",
        "--intermediate-size",
        "64",
        "--hidden-dropout-prob",
        "0.1",
        "--steps",
        "20",
        "--log-every",
        "10",
        "--eval-every",
        "20",
        "--snapshot-every",
        "20",
    ]
    runs = [tmp_path / "first", tmp_path / "second"]
    # Separate processes, nothing shared but the command: the first a fork of the preloaded interpreter, the second
    # a fresh one (its own hash seed and imports; one torch import fewer than two fresh ones, 1.8 CPU-s).
    first = preloaded_python.run_command(
        forked(*args, "--out", str(runs[0])), cwd=REPO, env=environment(), timeout=120
    )
    assert first.returncode == 0, first.stderr
    second = subprocess.run(
        command(*args, "--out", str(runs[1])), env=environment(), capture_output=True, text=True, timeout=120
    )
    assert second.returncode == 0, second.stderr
    assert (runs[0] / "vocab.txt").read_bytes() == (runs[1] / "vocab.txt").read_bytes()
    losses = [[r["loss"] for r in read_metrics(run, "train") if r["step"] == 20] for run in runs]
    assert losses[0] == losses[1] and len(losses[0]) == 1
    first, second = (load_file(str(run / "model.safetensors")) for run in runs)
    assert all(torch.equal(first[key], second[key]) for key in first)


@pytest.mark.slow
def test_init_continues_from_pretrained_weights_with_fresh_heads(tmp_path, preloaded_python):
    folder = save_tiny(tmp_path / "encoder", max_positions=64)
    weights = load_file(str(folder / "model.safetensors"))
    encoder_only = {k: v for k, v in weights.items() if not k.startswith("cls.")}
    save_file(encoder_only, str(folder / "model.safetensors"))  # like MiniLM: no MLM/NSP heads
    args = [
        "--init",
        str(folder),
        "--corpus",  # the built-in stories, few: the English corpus's 80,000 pairs took a second to build for 4 steps
        "builtin",
        "--num-documents",
        "150",
        "--seq-len",
        "32",
        "--batch-size",
        "8",
        "--steps",
        "4",
        "--log-every",
        "2",
        "--eval-every",
        "4",
        "--snapshot-every",
        "4",
        "--eval-pairs",
        "16",
        "--threads",
        "1",
        "--quiet",
        "--out",
        str(tmp_path / "run"),
    ]
    done = preloaded_python.run_command(forked(*args), cwd=REPO, env=environment(), timeout=120)
    assert done.returncode == 0, done.stderr
    model, tokenizer = load(tmp_path / "run")
    assert model.has_mlm_head and model.has_nsp_head
    assert (tmp_path / "run" / "vocab.txt").read_text() == (folder / "vocab.txt").read_text()
    assert model.config.hidden_size == 32 and model.config.max_position_embeddings == 64
    trained = load_file(str(tmp_path / "run" / "model.safetensors"))
    assert not torch.equal(
        trained["bert.encoder.layer.0.attention.self.query.weight"],
        encoder_only["bert.encoder.layer.0.attention.self.query.weight"],
    )
    assert read_train_args(tmp_path / "run")["args"]["init"] == str(folder)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--init", "no-such-model"], "--init ('no-such-model'): No model named"),
        (["--init", "demo-tiny", "--hidden-size", "64"], "cannot be used with init"),
    ],
)
def test_bad_init_exits_2_with_one_line(tmp_path, capsys, args, message):
    assert main([*args, "--corpus", "english", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err
    assert not (tmp_path / "run").exists()
