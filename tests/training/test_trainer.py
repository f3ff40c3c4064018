"""The Trainer in-process: options, schedule, sharding, overfitting, determinism, run files, stop, divergence."""

from __future__ import annotations

import copy
import json
import math
import os
import re
import threading

import numpy as np
import pytest
import torch
from torch import nn

from bertviz_lite.inspection.evaluation import probe_mask_position, probe_predictions
from bertviz_lite.limits import parameter_count
from bertviz_lite.loading.checkpoints import checkpoint_step, load_snapshot_predictions, snapshot_path
from bertviz_lite.loading.pretrained import MINILM, load_folder
from bertviz_lite.loading.run_folder import (
    OPTIMIZER_FILE,
    read_metrics,
    read_status,
    read_train_args,
    write_status,
)
from bertviz_lite.training.dataset import batch_indices
from bertviz_lite.training.optimization import (
    STAT_NAMES,
    PretrainingStep,
    copy_loss,
    learning_rate,
    make_optimizer,
)
from bertviz_lite.training.prefetch import THREAD_NAME
from bertviz_lite.training.preparation import check_run_dir
from bertviz_lite.training.trainer import Trainer, TrainerCallback
from bertviz_lite.training.training_args import MAX_PARAMETERS, PRESETS, OptionError, TrainingArguments
from tests.attention_samples import load_snapshots

pytestmark = pytest.mark.usefixtures("one_thread")  # torch on one thread (tests/training/conftest.py)

TINY_CONFIG = {
    "hidden_size": 32,
    "num_attention_heads": 4,
    "intermediate_size": 64,
    "max_position_embeddings": 32,
}
TRAIN_FIELDS = {
    "split",
    "step",
    "loss",
    "mlm_loss",
    "nsp_loss",
    "mlm_acc",
    "nsp_acc",
    "lr",
    "grad_norm",
    "tokens_per_s",
    "elapsed_s",
}
EVAL_FIELDS = {
    "split",
    "step",
    "eval_loss",
    "eval_mlm_loss",
    "eval_nsp_loss",
    "eval_mlm_acc",
    "eval_nsp_acc",
    "eval_examples",
    "elapsed_s",
}


def tiny_args(tmp_path, **overrides) -> TrainingArguments:
    values = dict(
        preset="tiny",
        num_documents=60,
        vocab_size=200,
        seq_len=32,
        batch_size=8,
        steps=12,
        lr=2e-3,
        warmup=2,
        log_every=4,
        eval_every=6,
        snapshot_every=6,
        save_every=6,
        eval_pairs=32,
        out=str(tmp_path / "run"),
        config=TINY_CONFIG,
    )
    values.update(overrides)
    return TrainingArguments(**values)


def test_presets_have_the_documented_sizes():
    assert {
        k: PRESETS["tiny"]["config"][k] for k in ("num_hidden_layers", "hidden_size", "num_attention_heads")
    } == {"num_hidden_layers": 2, "hidden_size": 128, "num_attention_heads": 2}
    small = PRESETS["small"]["config"]
    assert (
        small["num_hidden_layers"],
        small["hidden_size"],
        small["num_attention_heads"],
        small["intermediate_size"],
    ) == (4, 256, 4, 1024)
    base = TrainingArguments(preset="base", out="x").bert_config(30522)
    assert (base.num_hidden_layers, base.hidden_size, base.num_attention_heads, base.intermediate_size) == (
        12,
        768,
        12,
        3072,
    )


def test_arguments_take_the_preset_defaults_unless_given():
    args = TrainingArguments(preset="small", steps=7, out="x")
    assert (args.steps, args.batch_size, args.seq_len, args.vocab_size) == (7, 16, 128, 8000)
    assert args.bert_config(123).vocab_size == 123


@pytest.mark.parametrize(
    ("overrides", "option", "fragment"),
    [
        ({"steps": 0}, "steps", "steps (0)"),
        ({"lr": float("nan")}, "lr", "lr (nan)"),
        ({"mask_prob": 1.0}, "mask_prob", "between 0 and 1"),
        ({"preset": "huge"}, "preset", "tiny, classroom, small, base"),
        (
            {"config": {"hidden_size": 100, "num_attention_heads": 3}},
            "hidden_size",
            "hidden_size (100) must be divisible by num_attention_heads (3)",
        ),
        ({"seq_len": 600}, "seq_len", "max_position_embeddings (128)"),
        ({"config": {"type_vocab_size": 1}}, "type_vocab_size", "at least 2"),
        ({"config": {"colour": 1}}, "config", "colour"),
        ({"out": "../escape"}, "out", "'..'"),
        ({"out": "checkpoints/.hidden"}, "out", "hidden"),
        ({"device": "tpu"}, "device", "auto, cpu, cuda"),
        ({"warmup": -1}, "warmup", "0 or more"),
        ({"config": {"hidden_size": 10**9}}, "hidden_size", "hidden_size (1000000000) must be at most 8,192"),
        (
            {"config": {"hidden_size": 8192}},
            "hidden_size",
            "hidden_size (8192) makes a model of about 697 M parameters",
        ),
        (
            {"config": {"intermediate_size": 10**7}},
            "intermediate_size",
            "intermediate_size (10000000) must be at most 32,768",
        ),
        ({"vocab_size": 3_000_000}, "vocab_size", "vocab_size (3000000) must be at most 250,000"),
        ({"batch_size": 100_000}, "batch_size", "batch_size (100000) × seq_len (64) × 512"),
        (
            {"config": {"num_attention_heads": 128}, "batch_size": 5000},
            "batch_size",
            "× 8192 (attention scores",
        ),
        (
            {"seq_len": 600, "config": {"max_position_embeddings": 1024}},
            "seq_len",
            "seq_len (600) must be at most 512",
        ),
        (
            {"seq_len": 600, "init": "demo-tiny"},
            "seq_len",
            "at most 128, the positions of the pretrained model 'demo-tiny'",
        ),
        ({"init": "no-such-model"}, "init", "No model named 'no-such-model'"),
        ({"vocab_size": 14}, "vocab_size", "at least 15"),
        ({"num_documents": 1}, "num_documents", "at least 2"),
    ],
)
def test_bad_arguments_name_their_option(overrides, option, fragment):
    with pytest.raises(OptionError, match=re.escape(fragment)) as info:
        TrainingArguments(**{"out": "x", **overrides})
    assert info.value.option == option


def test_the_training_budget_allows_bert_base():
    base = TrainingArguments(preset="base", out="x").bert_config(30522)
    assert 100e6 < parameter_count(base) < MAX_PARAMETERS  # BERT-base: about 110 M


def test_seq_len_with_init_is_checked_against_the_pretrained_models_positions():
    args = TrainingArguments(
        init=MINILM, seq_len=256, out="x"
    )  # more than tiny's 128 positions, MiniLM has 512
    assert (args.seq_len, args.config) == (256, {})


def test_learning_rate_warms_up_linearly_then_decays_to_zero():
    rates = [learning_rate(step, 1.0, 4, 12) for step in range(1, 13)]
    assert rates[:4] == [0.25, 0.5, 0.75, 1.0]
    assert rates[-1] == 0.0 and all(a > b for a, b in zip(rates[3:], rates[4:], strict=False))
    assert learning_rate(8, 1.0, 4, 12) == pytest.approx(0.5)


def test_each_rank_gets_its_own_equal_shard_and_epochs_reshuffle():
    ranks = [batch_indices(20, 3, seed=1, rank=r, world_size=2) for r in (0, 1)]
    epoch = [[next(it) for _ in range(3)] for it in ranks]  # 10 items per rank -> 3 full batches
    flat = [set(i for batch in rank for i in batch) for rank in epoch]
    assert all(len(batch) == 3 for rank in epoch for batch in rank)
    assert not flat[0] & flat[1] and len(flat[0]) == len(flat[1]) == 9
    assert [next(ranks[0]) for _ in range(3)] != epoch[0]
    with pytest.raises(OptionError, match="batch_size"):
        batch_indices(5, 3, seed=0, world_size=2)


def test_weight_decay_skips_biases_and_layer_norms(tmp_path):
    trainer = Trainer(tiny_args(tmp_path))
    decay, no_decay = make_optimizer(trainer.model, 1e-3, 0.01).param_groups
    names = {id(p): n for n, p in trainer.model.named_parameters()}
    assert decay["weight_decay"] == 0.01 and no_decay["weight_decay"] == 0.0
    assert all("LayerNorm" not in names[id(p)] and p.dim() == 2 for p in decay["params"])
    assert any("LayerNorm.weight" in names[id(p)] for p in no_decay["params"])


def test_our_adamw_steps_as_torchs_fused_adamw():
    """make_optimizer's EagerAdamW leaves out only torch's dynamo wrappers: the same weights after the same steps."""
    torch.manual_seed(0)
    ours = nn.Sequential(nn.Linear(8, 8), nn.LayerNorm(8))
    theirs = copy.deepcopy(ours)
    reference = torch.optim.AdamW(
        [
            {"params": [p for p in theirs.parameters() if p.dim() == 2], "weight_decay": 0.01},
            {"params": [p for p in theirs.parameters() if p.dim() < 2], "weight_decay": 0.0},
        ],
        lr=1e-2,
        eps=1e-6,
        fused=True,
    )
    optimizers = [make_optimizer(ours, 1e-2, 0.01), reference]
    x = torch.randn(4, 8)
    for _ in range(3):
        for model, optimizer in zip((ours, theirs), optimizers, strict=True):
            model(x).square().sum().backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
    assert all(torch.equal(a, b) for a, b in zip(ours.parameters(), theirs.parameters(), strict=True))
    assert optimizers[0].state_dict()["state"].keys() == reference.state_dict()["state"].keys()


def test_a_fixed_batch_is_overfit(tmp_path):
    trainer = Trainer(tiny_args(tmp_path, steps=80, lr=3e-3, warmup=5))
    batch = trainer.next_batch()
    losses = [trainer.train_step(batch)[0].item() for _ in range(80)]
    assert losses[0] > 4.5  # ~ln(vocab) + ln(2) at the start
    assert min(losses[-5:]) < 0.2 * losses[0]
    assert not list(tmp_path.iterdir())  # building and stepping the trainer writes nothing


def test_batches_made_ahead_in_a_thread_train_the_same_model(tmp_path):
    """A GPU run makes its batches in a thread (prefetch): the same batches in the same order, so the same run."""

    def trained(name: str, prefetch: int) -> tuple[Trainer, list[dict]]:
        (tmp_path / name).mkdir()
        trainer = Trainer(tiny_args(tmp_path / name))
        trainer.prefetch = prefetch  # what a CUDA device sets; a CPU run makes its batches one by one
        assert trainer.train().state == "finished"
        return trainer, read_metrics(tmp_path / name / "run", "train")

    (plain, plain_log) = trained("plain", 0)
    (ahead, ahead_log) = trained("ahead", 2)
    assert plain.prefetch == 0  # on this CPU
    assert [r["loss"] for r in ahead_log] == [r["loss"] for r in plain_log]
    for ours, theirs in zip(plain.model.parameters(), ahead.model.parameters(), strict=True):
        assert torch.equal(ours, theirs)
    assert not [thread for thread in threading.enumerate() if thread.name == THREAD_NAME]  # stopped


def test_same_seed_gives_the_same_losses_on_cpu(tmp_path):
    tokenizer = Trainer(tiny_args(tmp_path)).tokenizer  # trained once, to save time

    def losses(seed: int) -> list[float]:
        args = tiny_args(tmp_path, seed=seed, config={**TINY_CONFIG, "hidden_dropout_prob": 0.1})
        trainer = Trainer(args, tokenizer=tokenizer)
        return [trainer.train_step(trainer.next_batch())[0].item() for _ in range(4)]

    first = losses(0)
    assert first == losses(0)
    assert first != losses(1)


def test_same_seed_gives_the_same_vocabulary(tmp_path):
    vocabularies = [Trainer(tiny_args(tmp_path)).tokenizer.vocab for _ in range(4)]
    assert all(vocab == vocabularies[0] for vocab in vocabularies)


def test_train_writes_metrics_status_snapshots_and_a_loadable_checkpoint(tmp_path):
    seen = []

    class Recorder(TrainerCallback):
        def on_record(self, trainer, record):
            seen.append(record["split"])

    trainer = Trainer(tiny_args(tmp_path), callbacks=[Recorder()], command="python -m bertviz_lite.train --x")
    result = trainer.train()
    run = tmp_path / "run"
    assert (result.state, result.step) == ("finished", 12)
    status = read_status(run)
    assert status["state"] == "finished" and status["step"] == status["total_steps"] == 12
    assert (
        status["checkpoint_step"] == 12
        and status["eta_s"] is None
        and "Finished 12 steps" in status["message"]
    )
    train = read_metrics(run, "train")
    evals = read_metrics(run, "eval")
    assert [r["step"] for r in train] == [4, 6, 8, 12] and [r["step"] for r in evals] == [6, 12]
    assert all(set(r) == TRAIN_FIELDS for r in train) and all(set(r) == EVAL_FIELDS for r in evals)
    assert all(math.isfinite(r[k]) for r in train for k in TRAIN_FIELDS - {"split"})
    assert (
        0 <= train[-1]["mlm_acc"] <= 1
        and train[-1]["tokens_per_s"] > 0
        and train[0]["lr"] == learning_rate(4, 2e-3, 2, 12)
    )
    assert evals[-1]["eval_examples"] == len(trainer.eval_pairs) == 18
    assert seen == ["train", "train", "eval", "train", "train", "eval"]
    snapshots = load_snapshots(run)
    assert [s[0] for s in snapshots] == [0, 6, 12]
    step, maps, tokens = snapshots[-1]
    assert maps.shape == (2, 4, len(tokens), len(tokens)) and tokens[0] == "[CLS]"
    np.testing.assert_allclose(maps.astype(np.float32).sum(-1), 1.0, atol=5e-3)
    assert not np.allclose(snapshots[0][1], maps, atol=5e-4)  # the heads changed while training (~1e-3 here)
    train_args = json.loads((run / "train_args.json").read_text())
    assert train_args["args"]["steps"] == 12 and train_args["config"]["hidden_size"] == 32
    assert train_args["command"] == "python -m bertviz_lite.train --x" and train_args["probe"] == list(
        trainer.probe
    )
    model, tokenizer = load_folder(run)
    assert checkpoint_step(run) == 12 and tokenizer.vocab == trainer.tokenizer.vocab
    for ours, saved in zip(trainer.model.state_dict().values(), model.state_dict().values(), strict=True):
        assert torch.equal(ours.cpu(), saved)


def test_snapshots_hold_the_heads_predictions_on_the_probe_pair(tmp_path):
    trainer = Trainer(tiny_args(tmp_path))
    trainer.train()
    saved = load_snapshot_predictions(snapshot_path(tmp_path / "run", trainer.step))
    now = probe_predictions(trainer.model, trainer.tokenizer, *trainer.probe, max_length=trainer.args.seq_len)
    assert saved["answer"] == now["answer"] and saved["top_tokens"] == now["top_tokens"]
    np.testing.assert_allclose(saved["top_probs"], now["top_probs"], atol=1e-5)
    assert 0 <= saved["is_next_prob"] <= 1 and saved["top_probs"] == sorted(saved["top_probs"], reverse=True)
    _, _, tokens = load_snapshots(tmp_path / "run")[-1]
    assert tokens[saved["position"]] == saved["answer"] and tokens[saved["position"]].isalpha()
    assert load_snapshot_predictions(tmp_path / "missing.safetensors") is None


def test_the_probe_masks_the_longest_whole_word_of_sentence_a():
    tokens = ["[CLS]", "the", "kitten", "play", "##ed", ".", "[SEP]", "elephants", "[SEP]"]
    assert (
        probe_mask_position(tokens, [0, 0, 0, 0, 0, 0, 0, 1, 1]) == 2
    )  # not "play" (a piece), not sentence B
    assert probe_mask_position(["[CLS]", ".", "[SEP]"], [0, 0, 0]) is None


def test_probe_pair_is_the_first_story_opening(tmp_path):
    trainer = Trainer(tiny_args(tmp_path))
    first, second = trainer.probe
    assert first.endswith(".") and second.endswith(".") and first != second
    attentions, tokens, segments = trainer.probe_attentions()
    assert attentions.shape == (2, 4, len(tokens), len(tokens)) and segments[-1] == 1
    torch.testing.assert_close(attentions.sum(-1), torch.ones(2, 4, len(tokens)))


@pytest.mark.parametrize("how", ["request", "stop_file"])
def test_a_stop_finishes_the_step_saves_and_reports_stopped(tmp_path, how):
    class StopAtFive(TrainerCallback):
        def on_step(self, trainer):
            if trainer.step == 5:
                if how == "request":
                    trainer.request_stop()
                else:
                    (trainer.run_dir / "STOP").touch()

    result = Trainer(tiny_args(tmp_path, steps=50), callbacks=[StopAtFive()]).train()
    run = tmp_path / "run"
    assert (result.state, result.step) == ("stopped", 6)
    status = read_status(run)
    assert (
        status["state"] == "stopped"
        and status["checkpoint_step"] == 6
        and "Stopped at step 6 of 50" in status["message"]
    )
    assert checkpoint_step(run) == 6 and read_metrics(run, "train")[-1]["step"] == 6
    load_folder(run)


def test_a_huge_learning_rate_diverges_and_keeps_the_last_good_checkpoint(tmp_path):
    result = Trainer(tiny_args(tmp_path, lr=1e30, warmup=4, steps=20, log_every=1, save_every=1)).train()
    run = tmp_path / "run"
    assert result.state == "diverged" and "Diverged at step" in result.message and "--lr" in result.message
    status = read_status(run)
    assert status["state"] == "diverged" and status["checkpoint_step"] < status["step"] <= 20
    assert f"checkpoint of step {status['checkpoint_step']} is kept" in status["message"]
    assert read_metrics(run, "train")[-1]["loss"] is None  # NaN is written as null
    model, _ = load_folder(run)
    assert checkpoint_step(run) == status["checkpoint_step"]
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_the_run_folder_may_exist_but_not_hold_a_run(tmp_path):
    (tmp_path / "launched").mkdir()
    check_run_dir(tmp_path / "launched")  # empty
    for name in (
        "launch.json",
        "train.log",
        "corpus.txt",
        ".launch.json.x1.tmp",
    ):  # what the app writes first
        (tmp_path / "launched" / name).write_text("{}")
    check_run_dir(tmp_path / "launched")
    (tmp_path / "launched" / "config.json").write_text("{}")
    with pytest.raises(OptionError, match=r"already holds a run \(config.json\).*--resume"):
        check_run_dir(tmp_path / "launched")
    with pytest.raises(OptionError, match="does not exist"):
        check_run_dir(tmp_path / "no" / "run")


@pytest.mark.parametrize(
    "names", [["vocab.txt"], ["notes.md", "snapshots/"], [".git/"], ["a", "b", "c", "d"]]
)
def test_a_folder_with_other_files_is_refused(tmp_path, names):
    folder = tmp_path / "mine"
    folder.mkdir()
    for name in names:
        (folder / name.rstrip("/")).mkdir() if name.endswith("/") else (folder / name).write_text("mine")
    with pytest.raises(OptionError, match="is a folder that holds other files") as info:
        check_run_dir(folder)
    assert info.value.option == "out" and names[0].rstrip("/") in str(info.value)


def test_a_loss_ten_times_its_first_step_ends_as_diverged(tmp_path):
    # lr 10 keeps the loss finite (the gradient is clipped) but drives it far above where it started.
    args = tiny_args(
        tmp_path, lr=10.0, steps=60, warmup=30, log_every=5, eval_every=30, snapshot_every=30, save_every=5
    )
    result = Trainer(args).train()
    status = read_status(tmp_path / "run")
    train = read_metrics(tmp_path / "run", "train")
    assert (result.state, status["state"]) == ("diverged", "diverged") and result.step < 60
    assert (
        math.isfinite(train[-1]["loss"]) and train[-1]["loss"] > 10 * 5.0
    )  # ~ln(200) + ln(2) = 6 at the start
    assert all(r["loss"] <= 10 * train[0]["loss"] for r in train[:-1])
    assert (
        re.search(r"loss [\d.]+ \(first step: [56]\.\d+\)", result.message)
        and "Try a smaller --lr" in result.message
    )
    assert status["checkpoint_step"] == checkpoint_step(tmp_path / "run") < result.step
    assert f"the checkpoint of step {status['checkpoint_step']} is kept" in result.message


def test_resume_continues_the_step_schedule_data_order_and_optimizer_state(tmp_path):
    first = Trainer(tiny_args(tmp_path, steps=10, save_every=5))
    assert first.train().state == "finished"
    run = tmp_path / "run"
    write_status(
        run, state="running", pid=999_999_999, step=13, total_steps=10, checkpoint_step=10
    )  # killed at 13
    with open(run / "metrics.jsonl", "a") as metrics:
        metrics.write('{"split": "train", "step": 12, "loss": 1.0, "elapsed_s": 9.0}\n')
    resumed = Trainer(tiny_args(tmp_path, steps=20, save_every=5), resume=True)
    assert (resumed.step, resumed.checkpoint_step, resumed.optimizer_restored) == (10, 10, True)
    for ours, theirs in zip(first.model.parameters(), resumed.model.parameters(), strict=True):
        assert torch.equal(ours, theirs)
    moments = [
        {name: trainer.optimizer.state[param] for name, param in trainer.model.named_parameters()}
        for trainer in (first, resumed)
    ]
    for name, ours in moments[0].items():
        theirs = moments[1][name]
        assert torch.equal(ours["exp_avg"], theirs["exp_avg"]) and torch.equal(
            ours["exp_avg_sq"], theirs["exp_avg_sq"]
        )
        assert float(theirs["step"]) == 10
    assert next(resumed._batches) == next(first._batches)  # batch 11 of the same data order
    assert resumed.train().state == "finished"
    train = read_metrics(run, "train")
    assert [r["step"] for r in train] == [4, 5, 6, 8, 10, 12, 15, 16, 18, 20]  # logged, saved or evaluated
    step_12 = train[5]
    assert step_12["loss"] != 1.0 and step_12["lr"] == learning_rate(
        12, 2e-3, 2, 20
    )  # trained again, on schedule
    assert step_12["elapsed_s"] > train[4]["elapsed_s"]  # the clock goes on
    assert read_status(run)["state"] == "finished" and checkpoint_step(run) == 20
    assert read_train_args(run)["resumed_from_step"] == 10 and (run / OPTIMIZER_FILE).is_file()


@pytest.mark.parametrize(
    ("setup", "option", "fragment"),
    [
        ("user_files", "resume", "holds no run to resume"),
        ("finished", "steps", "more than the 10 steps"),
        ("live", "resume", "is still training"),
    ],
)
def test_resume_refuses_what_it_cannot_continue(tmp_path, setup, option, fragment):
    run = tmp_path / "run"
    if setup == "user_files":
        run.mkdir()
        (run / "vocab.txt").write_text("mine")
    else:
        Trainer(tiny_args(tmp_path, steps=10)).train()
    if setup == "live":
        write_status(run, state="running", pid=os.getppid(), step=3, total_steps=10)  # a live process
    with pytest.raises(OptionError, match=fragment) as info:
        Trainer(tiny_args(tmp_path, steps=10 if setup == "finished" else 20), resume=True)
    assert info.value.option == option


@pytest.mark.parametrize(
    ("content", "fragment"), [(None, "not found"), (b"", "empty"), (b"\x00\x01\x02binary", "binary")]
)
def test_unusable_corpus_files_are_option_errors(tmp_path, content, fragment):
    corpus = tmp_path / "corpus.txt"
    if content is not None:
        corpus.write_bytes(content)
    with pytest.raises(OptionError, match=fragment) as info:
        Trainer(tiny_args(tmp_path, corpus=str(corpus)))
    assert info.value.option == "corpus"


def test_stat_names_cover_the_logged_sums():
    assert STAT_NAMES[:3] == ("loss", "mlm_loss", "nsp_loss") and STAT_NAMES[-1] == "steps"


def test_copy_loss_charges_a_guess_taken_from_the_pair_and_nothing_else():
    # one pair: [CLS] 5 6 [MASK] 7 [SEP]; the answer at position 3 is 8; 5 and 6 are visible content words, 7 is not
    batch = {
        "input_ids": torch.tensor([[1, 5, 6, 4, 7, 2]]),
        "labels": torch.tensor([[-100, -100, -100, 8, -100, -100]]),
        "content_mask": torch.tensor([[0, 1, 1, 0, 0, 0]], dtype=torch.bool),
    }

    def loss_when_sure_of(token: int) -> float:
        logits = torch.full((1, 10), -20.0)
        logits[0, token] = 20.0
        return copy_loss(logits, batch).item()

    assert loss_when_sure_of(5) > 10 and loss_when_sure_of(6) > 10  # copying a visible content word
    assert loss_when_sure_of(8) < 1e-6 and loss_when_sure_of(7) < 1e-6  # the answer; a visible function word
    batch["input_ids"][0, 1] = 8  # the answer itself is visible: predicting it is not a copy to punish
    assert loss_when_sure_of(8) < 1e-6


def test_copy_penalty_needs_masked_repeats():
    with pytest.raises(OptionError, match="copy_penalty"):
        TrainingArguments(copy_penalty=0.5, out="/tmp/unused-run")
    assert TrainingArguments(copy_penalty=0.5, mask_repeats=True, out="/tmp/unused-run").copy_penalty == 0.5


def test_a_run_with_masked_repeats_a_copy_penalty_and_lone_sentences_trains(tmp_path):
    trainer = Trainer(
        tiny_args(
            tmp_path, whole_word_mask=True, mask_repeats=True, steps=4, copy_penalty=1.0, single_sentences=0.5
        )
    )
    batch = trainer.next_batch()
    assert "content_mask" in batch and (batch["next_sentence_label"] == -100).any()
    trainer.model.eval()
    with torch.no_grad():
        plain, penalised = (PretrainingStep(trainer.model, weight)(batch) for weight in (0.0, 1.0))
    assert penalised[0].item() - plain[0].item() == pytest.approx(copy_loss(plain[3], batch).item(), rel=1e-5)
    assert copy_loss(plain[3], batch).item() > 0
    result = trainer.train()
    assert (result.state, result.step) == ("finished", 4)
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert all(math.isfinite(r["loss"]) and 0 <= r["nsp_acc"] <= 1 for r in records if r["split"] == "train")
