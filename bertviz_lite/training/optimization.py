"""One pre-training step: BERT's AdamW, the warm-up/decay schedule, bf16 autocast or bf16 weights, clipping, the
step's sums."""

from __future__ import annotations

import copy

import torch
from torch import Tensor, nn

from bertviz_lite.model.loss_rows import IGNORE_INDEX, labelled_positions
from bertviz_lite.model.modeling import BertForPreTraining

ADAM_EPS = 1e-6  # BERT's


def learning_rate(step: int, peak: float, warmup: int, total: int) -> float:
    """Linear warm-up from 0 to `peak` over `warmup` steps, then linear decay to 0 at `total` (step from 1)."""
    if step <= warmup:
        return peak * step / max(1, warmup)
    return peak * max(0.0, (total - step) / max(1, total - warmup))


def _undecorated(method):
    """A torch.optim method without its torch._dynamo wrapper (the function it wraps)."""
    return getattr(method, "__wrapped__", method)


class EagerAdamW(torch.optim.AdamW):
    """torch's AdamW, run eagerly: without the wrappers that keep torch.compile out of its methods, each of which
    imports torch._dynamo on first use (1.5 s of CPU and 70 MB for every training process). Nothing compiles the
    optimizer here (compiled_step.py compiles the forward and backward only), so they have nothing to do. The same
    update as torch's (tests/training/test_trainer.py); bench/train_memory_estimate.py would see dynamo come back."""

    add_param_group = _undecorated(torch.optim.Optimizer.add_param_group)
    zero_grad = _undecorated(torch.optim.Optimizer.zero_grad)
    state_dict = _undecorated(torch.optim.Optimizer.state_dict)
    load_state_dict = _undecorated(torch.optim.Optimizer.load_state_dict)

    @torch.no_grad()
    def step(self, closure=None):
        """AdamW's update, under no_grad as torch's wrapper runs it (differentiable=False)."""
        return _undecorated(torch.optim.AdamW.step)(self, closure)


def make_optimizer(model: nn.Module, lr: float, weight_decay: float) -> torch.optim.AdamW:
    """AdamW, BERT-style: no weight decay on biases and LayerNorm weights."""
    decay = []
    no_decay = []
    for name, param in model.named_parameters():
        if param.requires_grad:
            (no_decay if param.dim() < 2 or "LayerNorm" in name else decay).append(param)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    # fused: one kernel for all tensors; on CPU ~3.5x faster than foreach=True (a few % of a step)
    return EagerAdamW(groups, lr=lr, betas=(0.9, 0.999), eps=ADAM_EPS, fused=True)


class PretrainingStep(nn.Module):
    """Wraps BertForPreTraining so that DistributedDataParallel sees `pretraining_loss` as its forward.

    With `copy_penalty` > 0 the loss adds that weight times `copy_loss` (the batch needs a content_mask). A batch's
    `mlm_positions` (`labelled_positions` made on the host) and `padded` (whether its attention_mask masks anything,
    known on the host) keep the step from waiting for the device; without them the model finds both.
    """

    def __init__(self, model: BertForPreTraining, copy_penalty: float = 0.0):
        super().__init__()
        self.model = model
        self.copy_penalty = copy_penalty

    def forward(self, batch: dict[str, Tensor], padded: bool | None = None) -> tuple[Tensor, ...]:
        out = self.model.pretraining_loss(
            batch["input_ids"],
            batch["token_type_ids"],
            batch["attention_mask"],
            batch["labels"],
            batch["next_sentence_label"],
            mlm_positions=batch.get("mlm_positions"),
            padded=padded,
        )
        loss = out.loss
        if self.copy_penalty:
            loss = loss + self.copy_penalty * copy_loss(out.mlm_logits, batch)
        return loss, out.mlm_loss, out.nsp_loss, out.mlm_logits, out.mlm_labels, out.nsp_logits


def copy_loss(mlm_logits: Tensor, batch: dict[str, Tensor]) -> Tensor:
    """Unlikelihood of copying: the mean over masked positions of -sum log(1 - p(w)) over the content words w
    visible in the same pair (other than the answer), so a guess taken from the sentence costs.

    mlm_logits (K, V) are the rows of `batch["mlm_positions"]` (default: the first K of `labelled_positions`); rows
    labelled -100 cost nothing. Nothing here waits for the device.
    """
    labels = batch["labels"]  # (B, T)
    input_ids = batch["input_ids"]
    positions = batch.get("mlm_positions")
    if positions is None:
        positions = labelled_positions(labels, mlm_logits.shape[0]).to(labels.device)
    visible = batch["content_mask"].bool() & (
        labels == IGNORE_INDEX
    )  # (B, T) content words the model can see
    seen = torch.zeros(labels.shape[0], mlm_logits.shape[-1], dtype=torch.uint8, device=labels.device)
    seen.scatter_reduce_(
        1, input_ids, visible.to(torch.uint8), reduce="amax"
    )  # (B, V) 1 where the pair shows it
    row_labels = labels.reshape(-1)[positions]  # (K,)
    answered = row_labels != IGNORE_INDEX
    penalised = seen[positions // labels.shape[1]].bool()  # (K, V): the words of each row's pair
    penalised.scatter_(1, row_labels.clamp(min=0)[:, None], False)  # the answer is no copy
    penalised &= answered[:, None]
    probs = mlm_logits.float().softmax(dim=-1)
    per_row = -(torch.log1p(-probs.clamp(max=1 - 1e-6)) * penalised).sum(dim=-1)  # (K,)
    return per_row.sum() / answered.sum().clamp(min=1)


def use_bf16(dtype: str, device: torch.device) -> bool:
    """Whether to run forward passes in bf16 autocast: "auto" means on CUDA only."""
    return dtype == "bf16" or (dtype == "auto" and device.type == "cuda")


# Measured on a 2-core AMD EPYC with AVX2 only (2026-11-28, bench/bf16_speed.py): the small preset's step in bf16 took
# 21x as long as in float32 (137 against 2,900 tokens/s).
BF16_EMULATED = (
    "This CPU has no bf16 instructions (AVX512-BF16 or AMX), so bf16 is emulated here and runs many times slower "
    "than float32 (21x on a CPU with AVX2 only)"
)


def cpu_has_bf16() -> bool:
    """Whether this CPU multiplies bf16 natively (AVX512-BF16 or AMX, as oneDNN reads it): without, bf16 is emulated
    and many times slower than float32."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a torch built without oneDNN
        return False


def bf16_emulated(dtype: str, device: torch.device, native: bool | None = None) -> bool:
    """Whether a run in this dtype on this device would compute in bf16 on a CPU that only emulates it (native: whether
    the CPU has bf16 instructions; None: ask torch)."""
    if not use_bf16(dtype, device) or device.type != "cpu":
        return False
    return not (cpu_has_bf16() if native is None else native)


class Bf16Weights:
    """A bf16 copy of a model for the training step's forward and backward, the float32 model its master weights
    (`--dtype bf16` on the CPU, one process, our model uncompiled: the trainer's `bf16_weights`).

    Autocast casts each weight to bf16 at every forward and its gradient back, and keeps LayerNorm's output, the
    residual stream and the softmaxes in float32, so that the input of every matrix product is cast too: 404 copies
    in a step of the small preset, 11% of its time on 2 cores. Here the step runs on the copy without autocast (the
    losses are still taken in float32: `mlm_loss`'s `logits.float()`); its gradients become the float32 parameters'
    (`gradients_to_masters`), which the optimizer updates, clipped, as before; then the copy takes their new values
    (`refresh`). Checkpoints, evaluation, snapshots and the optimizer's state read the float32 model, as without it.
    """

    def __init__(self, model: nn.Module):
        self.model = copy.deepcopy(model).to(torch.bfloat16).train()  # tied weights stay tied; only for steps
        self.masters = list(model.parameters())
        self.params = list(self.model.parameters())

    def gradients_to_masters(self) -> None:
        """Each float32 parameter's gradient is its copy's, in float32; the copy's are dropped."""
        for master, param in zip(self.masters, self.params, strict=True):
            master.grad = None if param.grad is None else param.grad.float()
            param.grad = None

    @torch.no_grad()
    def refresh(self) -> None:
        """The copy takes the float32 weights (after an optimizer step, or weights loaded into the model)."""
        torch._foreach_copy_(self.params, self.masters)


def steps_bf16_weights(dtype: str, device: torch.device, processes: int, compiled: bool, ours: bool) -> bool:
    """Whether a run steps a bf16 copy of its weights (Bf16Weights): bf16 on a CPU, in one process, our model
    uncompiled. Elsewhere bf16 is autocast: inductor's graph fuses its casts, DistributedDataParallel and a learner's
    model are left as they are, and on a GPU the copy has not been measured yet (docs/benchmarks.md)."""
    return dtype == "bf16" and device.type == "cpu" and processes == 1 and not compiled and ours


def optimizer_step(
    step_module: nn.Module,
    optimizer: torch.optim.Optimizer,
    batch: dict[str, Tensor],
    max_grad_norm: float,
    dtype: str = "auto",
    padded: bool | None = None,
    bf16_weights: Bf16Weights | None = None,
) -> tuple[tuple[Tensor, ...], Tensor]:
    """Forward (bf16 autocast as `dtype` says), backward, clip, update: (the module's outputs, gradient norm).

    `step_module(batch)` returns a tuple whose first element is the loss; `padded`, when the caller knows it, is
    passed on (`step_module(batch, padded=…)`, as PretrainingStep takes it). With `bf16_weights` the module runs
    its bf16 copy, without autocast, and the optimizer updates the float32 model. Nothing here waits for the device.
    """
    device = batch["input_ids"].device
    autocast = use_bf16(dtype, device) and bf16_weights is None
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
        outputs = step_module(batch) if padded is None else step_module(batch, padded=padded)
    outputs[0].backward()
    if bf16_weights is not None:
        bf16_weights.gradients_to_masters()
    params = [p for group in optimizer.param_groups for p in group["params"]]
    grad_norm = nn.utils.clip_grad_norm_(params, max_grad_norm, foreach=True)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    if bf16_weights is not None:
        bf16_weights.refresh()
    return outputs, grad_norm


# Sums kept per logging window (and all-reduced across processes), in this order.
STAT_NAMES = (
    "loss",
    "mlm_loss",
    "nsp_loss",
    "mlm_correct",
    "mlm_count",
    "nsp_correct",
    "nsp_count",
    "tokens",
    "steps",
)


def step_stats(outputs: tuple[Tensor, ...], batch: dict[str, Tensor]) -> Tensor:
    """STAT_NAMES sums for one step, as one float64 tensor on the model's device (nothing waits for it)."""
    loss, mlm_loss, nsp_loss, mlm_logits, mlm_labels, nsp_logits = outputs
    mlm_correct = (mlm_logits.detach().argmax(-1) == mlm_labels).sum()
    nsp_correct = (nsp_logits.detach().argmax(-1) == batch["next_sentence_label"]).sum()
    values = [
        loss.detach(),
        mlm_loss.detach(),
        nsp_loss.detach(),
        mlm_correct,
        (mlm_labels != IGNORE_INDEX).sum(),
        nsp_correct,
        (batch["next_sentence_label"] != IGNORE_INDEX).sum(),
        batch["attention_mask"].sum(),
        loss.new_ones(()),
    ]
    return torch.stack([v.double() for v in values])


@torch.no_grad()
def held_out_metrics(
    model: BertForPreTraining, batches: list[dict[str, Tensor]], dtype: str = "auto"
) -> dict[str, float]:
    """Held-out MLM and NSP loss and accuracy over masked batches (losses averaged over masked tokens and pairs)."""
    was_training = model.training
    device = batches[0]["input_ids"].device
    model.eval()
    sums = torch.zeros(4, dtype=torch.float64, device=device)  # mlm loss, nsp loss, then weights
    totals = torch.zeros(len(STAT_NAMES), dtype=torch.float64, device=device)
    for batch in batches:
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_bf16(dtype, device)):
            stats = step_stats(PretrainingStep(model)(batch), batch)
        sums += torch.stack([stats[1] * stats[4], stats[2] * stats[6], stats[4], stats[6]])
        totals += stats
    model.train(was_training)
    mlm_loss, nsp_loss, mlm_count, nsp_count = sums.tolist()
    values = dict(zip(STAT_NAMES, totals.tolist(), strict=True))
    return {
        "eval_loss": mlm_loss / max(mlm_count, 1) + nsp_loss / max(nsp_count, 1),
        "eval_mlm_loss": mlm_loss / max(mlm_count, 1),
        "eval_nsp_loss": nsp_loss / max(nsp_count, 1),
        "eval_mlm_acc": values["mlm_correct"] / max(mlm_count, 1),
        "eval_nsp_acc": values["nsp_correct"] / max(nsp_count, 1),
        "eval_examples": int(nsp_count),
    }
