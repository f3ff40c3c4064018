"""bf16 on the CPU (`--dtype bf16`): the step runs a bf16 copy of the model without autocast, and the optimizer updates
the float32 model, whose weights the copy then takes (optimization.Bf16Weights)."""

from __future__ import annotations

import copy

import torch
from safetensors.torch import load_file

from bertviz_lite.training.optimization import PretrainingStep, steps_bf16_weights
from bertviz_lite.training.trainer import Trainer
from tests.training.test_trainer import tiny_args


def _grads(trainer: Trainer, batch: dict) -> list[torch.Tensor]:
    """The float32 model's gradients on `batch` under bf16 autocast, the step bf16 took before this change."""
    model = copy.deepcopy(trainer.model).train()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = PretrainingStep(model)(batch)[0]
    loss.backward()
    return [p.grad for p in model.parameters()]


def test_the_step_runs_a_bf16_copy_and_the_optimizer_updates_the_float32_model(tmp_path):
    trainer = Trainer(tiny_args(tmp_path, dtype="bf16"))
    weights = trainer.bf16_weights
    copied = weights.model
    assert trainer._step_module.model is copied
    assert {p.dtype for p in copied.parameters()} == {torch.bfloat16}
    assert {p.dtype for p in trainer.model.parameters()} == {torch.float32}
    assert (
        copied.cls.predictions.decoder.weight is copied.bert.embeddings.word_embeddings.weight
    )  # still tied
    batch = trainer.next_batch()
    reference = _grads(trainer, batch)
    before = [p.detach().clone() for p in trainer.model.parameters()]
    trainer.train_step(batch)
    assert all(p.grad is None for p in copied.parameters())  # handed to the float32 model, then dropped
    changed = [not torch.equal(a, b) for a, b in zip(before, trainer.model.parameters(), strict=True)]
    assert sum(changed) == len(changed), "the optimizer updated every float32 weight"
    for master, param in zip(trainer.model.parameters(), copied.parameters(), strict=True):
        assert torch.equal(param, master.detach().to(torch.bfloat16)), "the copy took the new weights"

    # The copy's gradients, handed to the float32 model, are autocast's within bf16's precision (weights before).
    fresh = Trainer(tiny_args(tmp_path, dtype="bf16"), tokenizer=trainer.tokenizer).bf16_weights
    PretrainingStep(fresh.model)(batch)[0].backward()
    fresh.gradients_to_masters()
    for ours, theirs in zip(fresh.masters, reference, strict=True):
        assert ours.grad.dtype == torch.float32
        if theirs.norm() < 1e-6:  # the key biases: softmax cancels them, their gradient is rounding (1e-8)
            continue
        cosine = torch.nn.functional.cosine_similarity(ours.grad.flatten(), theirs.flatten(), dim=0)
        assert cosine > 0.99, cosine


def test_a_bf16_run_overfits_a_batch_and_saves_float32_weights(tmp_path):
    trainer = Trainer(tiny_args(tmp_path, dtype="bf16", steps=80, lr=3e-3, warmup=5))
    batch = trainer.next_batch()
    losses = [trainer.train_step(batch)[0].item() for _ in range(80)]
    assert min(losses[-5:]) < 0.2 * losses[0], losses[::10]
    (tmp_path / "saved").mkdir()
    run = Trainer(tiny_args(tmp_path / "saved", dtype="bf16", steps=3), tokenizer=trainer.tokenizer)
    assert run.train().state == "finished"
    saved = load_file(tmp_path / "saved" / "run" / "model.safetensors")
    assert {t.dtype for t in saved.values() if t.is_floating_point()} == {torch.float32}


def test_only_our_uncompiled_bf16_step_in_one_cpu_process_takes_the_copy(tmp_path):
    assert Trainer(tiny_args(tmp_path, dtype="fp32")).bf16_weights is None
    cpu, cuda = torch.device("cpu"), torch.device("cuda")  # a name here, nothing runs on it
    assert steps_bf16_weights("bf16", cpu, 1, compiled=False, ours=True)
    assert not steps_bf16_weights("auto", cpu, 1, compiled=False, ours=True)  # float32 on a CPU
    assert not steps_bf16_weights("bf16", cuda, 1, compiled=False, ours=True)  # autocast, unmeasured so
    assert not steps_bf16_weights("bf16", cpu, 2, compiled=False, ours=True)  # torchrun
    assert not steps_bf16_weights("bf16", cpu, 1, compiled=True, ours=True)  # the graph fuses the casts
    assert not steps_bf16_weights("bf16", cpu, 1, compiled=False, ours=False)  # a learner's model
