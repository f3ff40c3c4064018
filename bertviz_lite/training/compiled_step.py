"""The training step made for a GPU (`--compile`): one shape per run, nothing that waits for the device, one graph.

A GPU step is fast only if the host never waits for it and `torch.compile` sees the same shapes every time (issue 34:
on an H100 BERT-base's step left the GPU idle 40% of the time). So, with `--compile`:
- every batch is `seq_len` tokens long (the collator pads after masking: the same batches as without it);
- the MLM head runs on a fixed number of rows (`RowCapacity`): the labelled positions, found on the host before the
  batch moves, then unlabelled ones (label -100) up to the capacity, instead of `hidden[labels != -100]`, whose
  size the host must read from the device and which changes every batch;
- whether the batch has padding is read on the host too (`host_padded`), so the attention mask goes to SDPA's fused
  kernels as it is or not at all (no padding: the flash kernel, which takes no mask);
- losses and statistics stay on the device until a logging step (the trainer's window of sums).
Without `--compile` the step is the same code with shapes that follow the batch (shorter batches cost less on a CPU).
"""

from __future__ import annotations

import math
import warnings

import torch
from torch import Tensor, nn

from bertviz_lite.model.loss_rows import IGNORE_INDEX, ROW_BUCKET, labelled_positions
from bertviz_lite.training.training_args import OptionError, TrainingArguments


def use_compile(choice: str, device: torch.device) -> bool:
    """Whether `--compile` (auto, on, off) compiles the step: auto means on CUDA only.

    On an H100 the compiled step was faster at every size measured (issue 34's table); on 2 CPU cores compiling takes
    longer than a classroom run lasts (bench/RESULTS.md, "Compiled step on the CPU").
    """
    return choice == "on" or (choice == "auto" and device.type == "cuda")


def compiled(
    module: nn.Module, backend: str = "inductor", fullgraph: bool = False, mode: str = "default"
) -> nn.Module:
    """`module` compiled for the shapes it is first called with (a new shape compiles again: dynamo counts it).

    fullgraph stays off for the trainer: DistributedDataParallel's compiled form breaks the graph at its gradient
    buckets on purpose; the tests turn it on (and a cheap backend) to show that the step itself has no break.
    mode: torch.compile's (`--compile-mode`; "reduce-overhead": CUDA graphs, for launch-bound steps)."""
    # inductor's note that it split a softmax's reduction, printed twice for BERT's MLM loss: a kernel choice that
    # asks nothing of a user, noise on their terminal (seen on an H200, torch 2.11; its text starts with a newline)
    warnings.filterwarnings("ignore", message=r"\s*Online softmax is disabled", category=UserWarning)
    return torch.compile(module, dynamic=False, backend=backend, fullgraph=fullgraph, mode=mode)


def compile_mode(choice: str, device: torch.device, processes: int) -> str:
    """torch.compile's mode for `--compile-mode` (auto, default, reduce-overhead): auto is reduce-overhead on one
    CUDA GPU and default elsewhere.

    On an H200 the small preset trained 100 steps to the same held-out loss in both modes (5.34772 and 5.34771),
    and BERT-base's step at 64 x 128 ran 1.9x faster with CUDA graphs (bench/RESULTS.md, 2026-11-28)."""
    if choice != "auto":
        return choice
    return "reduce-overhead" if device.type == "cuda" and processes == 1 else "default"


def check_compile_mode(args: TrainingArguments, device: torch.device, processes: int) -> None:
    """OptionError unless `--compile-mode` fits the run: reduce-overhead only for a step compiled on one CUDA GPU.

    CUDA graphs replay a whole step from one launch (on an H200, BERT-base's compiled step at 64 x 128 went from
    launch-bound to GPU-bound: 1.5x, bench/RESULTS.md); a CPU has nothing to capture, and under torchrun
    DistributedDataParallel breaks the step's graph at its gradient buckets."""
    mode = args.compile_mode
    if mode in ("auto", "default"):
        return
    if device.type != "cuda":
        raise OptionError(
            "compile_mode",
            f"compile_mode ({mode!r}) replays the step as CUDA graphs: it needs a CUDA GPU, not the CPU",
        )
    if args.compile == "off" or args.model_file:
        why = (
            "compile ('off') turns it off"
            if args.compile == "off"
            else "a model from model_file runs uncompiled"
        )
        raise OptionError("compile_mode", f"compile_mode ({mode!r}) needs the compiled step, and {why}")
    if processes > 1:
        raise OptionError(
            "compile_mode",
            f"compile_mode ({mode!r}) is for one process: under torchrun ({processes} processes) use 'default'",
        )


class RowCapacity:
    """How many rows the MLM head takes in a compiled step: the first batch's labelled count with a margin of six
    standard deviations (masking is a coin per token), rounded up to ROW_BUCKET; grown, never shrunk, in the rare
    batch with more, which costs one recompilation."""

    def __init__(self) -> None:
        self.capacity: int | None = None

    def positions(self, labels: Tensor) -> Tensor:
        """`labelled_positions(labels, capacity)` (K,), on the host batch before it moves."""
        count = int((labels != IGNORE_INDEX).sum())
        if self.capacity is None or count > self.capacity:
            margin = count + 6 * math.sqrt(count) + 1
            self.capacity = min(math.ceil(margin / ROW_BUCKET) * ROW_BUCKET, labels.numel())
        return labelled_positions(labels, self.capacity)


def host_padded(batch: dict[str, Tensor]) -> bool:
    """Whether any position of the batch is padding, read while the batch is on the host (no wait for a GPU)."""
    return not bool(batch["attention_mask"].all())


def static_batch(batch: dict[str, Tensor], rows: RowCapacity | None, pin: bool) -> dict[str, Tensor]:
    """The host batch with its `mlm_positions` when `rows` is given, in pinned memory when `pin` (for a copy to a GPU
    that does not block)."""
    if rows is not None:
        batch = {**batch, "mlm_positions": rows.positions(batch["labels"])}
    return {name: tensor.pin_memory() for name, tensor in batch.items()} if pin else batch
