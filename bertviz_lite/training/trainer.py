"""Pre-train BERT with MLM + NSP: the Trainer's loop, shared by the CLI, the app and tests.

The options are `training_args.TrainingArguments`; `preparation.prepare_run` builds the model and the data;
`optimization` does one step. The Trainer writes nothing until `train()` is called; everything it writes
goes into the run folder (`args.out`), in the formats documented in `bertviz_lite.loading.run_folder` and
`bertviz_lite.loading.checkpoints`. Under `torchrun` (RANK / WORLD_SIZE / LOCAL_RANK in the environment) each process
trains on its own shard of the pairs with DistributedDataParallel, and only rank 0 writes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from bertviz_lite.atomic import atomic_write_json, remove_temporary_files
from bertviz_lite.check.learner_model import LearnerForPreTraining
from bertviz_lite.check.learner_run import record_of, save_learner_checkpoint
from bertviz_lite.inspection.evaluation import probe_predictions
from bertviz_lite.loading import checkpoints
from bertviz_lite.loading.run_folder import (
    MetricsWriter,
    RunFolder,
    checkpoints_root,
    keep_metrics_until,
)
from bertviz_lite.text.tokenization import BertTokenizer
from bertviz_lite.training.compiled_step import (
    RowCapacity,
    check_compile_mode,
    compile_mode,
    compiled,
    host_padded,
    static_batch,
    use_compile,
)
from bertviz_lite.training.dataset import batch_indices, collator
from bertviz_lite.training.distributed import Distributed, resolve_device
from bertviz_lite.training.heartbeat import Heartbeat
from bertviz_lite.training.optimization import (
    STAT_NAMES,
    Bf16Weights,
    PretrainingStep,
    held_out_metrics,
    learning_rate,
    make_optimizer,
    optimizer_step,
    step_stats,
    steps_bf16_weights,
)
from bertviz_lite.training.prefetch import PREFETCH_DEPTH, made_ahead
from bertviz_lite.training.preparation import PreparedRun, prepare_run
from bertviz_lite.training.training_args import TrainingArguments, is_number

NSP_KEYS = (
    "nsp_loss",
    "nsp_acc",
    "eval_nsp_loss",
    "eval_nsp_acc",
)  # left out for a model without an NSP head
DIVERGENCE_FACTOR = (
    10.0  # a logged loss above this many times the first step's loss (at least 1) has diverged
)


@dataclass
class TrainResult:
    """How a run ended: state is finished, stopped or diverged (failures raise)."""

    state: str
    step: int
    message: str


class TrainerCallback:
    """Hooks for code that watches a run in-process (the terminal progress bar, benchmarks)."""

    def on_step(self, trainer: Trainer) -> None:
        """After every optimizer step."""

    def on_record(self, trainer: Trainer, record: dict[str, Any]) -> None:
        """After each metrics record (train or eval line) is computed, on rank 0."""

    def on_end(self, trainer: Trainer, result: TrainResult) -> None:
        """Once, after the final status was written."""


class Trainer:
    """Pre-trains one BERT run: `train()` runs the loop and writes the run folder (the constructor writes nothing).

    Args:
        args: the run's options.
        distributed: this process's rank among torchrun's processes (default: a single process).
        callbacks: TrainerCallback objects, called on rank 0 only.
        command: the command line, recorded in train_args.json.
        tokenizer: use this vocabulary instead of training one on the corpus.
        resume: continue the run in `args.out` from its checkpoint (weights, step, schedule, data order and,
            when optimizer.safetensors belongs to that step, AdamW's moments); its masking restarts.
        prepared: the model and data from `preparation.prepare_run` (by default made here from `args`,
            `tokenizer` and `resume`).
    """

    def __init__(
        self,
        args: TrainingArguments,
        *,
        distributed: Distributed | None = None,
        callbacks: Sequence[TrainerCallback] = (),
        command: str | None = None,
        tokenizer: BertTokenizer | None = None,
        resume: bool = False,
        prepared: PreparedRun | None = None,
    ):
        self.args = args
        self.command = command
        self.callbacks = list(callbacks)
        self.distributed = distributed or Distributed()
        self.device = resolve_device(args.device, self.distributed)
        check_compile_mode(args, self.device, self.distributed.world_size)  # before the data is built
        self.run_dir = Path(args.out)
        prepared = prepared or prepare_run(args, self.distributed, tokenizer, resume)
        self.data = prepared.data
        self.resumed_from = prepared.resumed_from
        self.model = prepared.model.to(self.device)
        self.config = prepared.model.config
        # and so one shape per step (compiled_step.py); a learner's model (--model-file) runs their code as it is
        self.compiled = use_compile(args.compile, self.device) and not isinstance(
            self.model, LearnerForPreTraining
        )
        self.collator = collator(args, self.tokenizer, static=self.compiled)
        self._rows = RowCapacity() if self.compiled else None
        dist = self.distributed
        self._batches = batch_indices(
            len(self.train_pairs), args.batch_size, args.seed, dist.rank, dist.world_size
        )
        self._mask_generator = torch.Generator().manual_seed(args.seed * 1009 + 1 + dist.rank)
        self.optimizer = make_optimizer(self.model, args.lr, args.weight_decay)
        self.bf16_weights, self._step_module = self._step_modules()
        self.prefetch = (
            PREFETCH_DEPTH if self.device.type == "cuda" else 0
        )  # a CPU's spare core is the server's
        torch.manual_seed(args.seed + dist.rank)  # dropout differs between processes
        self.step = 0
        self.checkpoint_step = None
        self.last_record = None
        self.optimizer_restored = False
        if self.resumed_from is not None:
            self._restore()
        self.started_at = self._loop_start = None
        self._stop_requested = False
        self._metrics = None
        self._eval_cache = None
        self._heartbeat = Heartbeat(self.run_dir)  # status.json, renewed while the run trains
        self._lr = 0.0
        self._grad_norm = torch.zeros(())
        self._first_loss = None
        self._elapsed_before = 0.0
        self._reset_window()

    tokenizer = property(lambda self: self.data.tokenizer)
    train_pairs = property(lambda self: self.data.train_pairs)
    eval_pairs = property(lambda self: self.data.eval_pairs)
    probe = property(lambda self: self.data.probe)

    def _restore(self) -> None:
        """Continue after the checkpoint: its step (so the schedule), the data order, AdamW's moments if saved."""
        self.step = self.checkpoint_step = self.resumed_from
        for _ in range(self.step):
            next(self._batches)
        self.optimizer_restored = checkpoints.load_optimizer_state(
            self.run_dir, self.model, self.optimizer, self.step
        )

    def _step_modules(self) -> tuple[Bf16Weights | None, nn.Module]:
        """The bf16 copy of the weights that the step runs, if any (bf16 on the CPU: Bf16Weights; the optimizer updates
        the float32 model), and the step's module: for the processes of a run, compiled with `--compile`."""
        args, processes = self.args, self.distributed.world_size
        ours = not isinstance(self.model, LearnerForPreTraining)
        copied = steps_bf16_weights(args.dtype, self.device, processes, self.compiled, ours)
        weights = Bf16Weights(self.model) if copied else None
        module = self._wrap_for_processes(
            PretrainingStep(weights.model if weights else self.model, args.copy_penalty)
        )
        if self.compiled:
            module = compiled(module, mode=compile_mode(args.compile_mode, self.device, processes))
        return weights, module

    def _wrap_for_processes(self, module: nn.Module) -> nn.Module:
        if not self.distributed.enabled:
            return module
        device_ids = [self.device.index] if self.device.type == "cuda" else None
        return nn.parallel.DistributedDataParallel(module, device_ids=device_ids)

    # ---- one step ------------------------------------------------------------------------------

    def next_batch(self) -> dict[str, Tensor]:
        """The next training batch of this process's shard, freshly masked (with its MLM rows when compiled)."""
        pairs = [self.train_pairs[i] for i in next(self._batches)]
        batch = self.collator(pairs, self._mask_generator)
        return static_batch(batch, self._rows, pin=self.device.type == "cuda")

    def train_step(self, batch: dict[str, Tensor]) -> Tensor:
        """One optimizer step (warm-up/decay lr, clipping, AdamW); returns the STAT_NAMES sums, on the device.

        `batch` comes from the host (next_batch); nothing here waits for the device."""
        self.step += 1
        self._lr = learning_rate(self.step, self.args.lr, self.args.warmup, self.args.steps)
        for group in self.optimizer.param_groups:
            group["lr"] = self._lr
        padded = host_padded(batch)
        batch = {name: tensor.to(self.device, non_blocking=True) for name, tensor in batch.items()}
        self.model.train()
        outputs, self._grad_norm = optimizer_step(
            self._step_module,
            self.optimizer,
            batch,
            self.args.max_grad_norm,
            self.args.dtype,
            padded,
            self.bf16_weights,
        )
        return step_stats(outputs, batch)

    # ---- evaluation and snapshots --------------------------------------------------------------

    def _eval_batches(self) -> list[dict[str, Tensor]]:
        """The held-out pairs, masked once with a fixed seed so that every evaluation compares."""
        if self._eval_cache is None:
            generator = torch.Generator().manual_seed(self.args.seed + 7919)
            size = self.args.batch_size
            chunks = [self.eval_pairs[i : i + size] for i in range(0, len(self.eval_pairs), size)]
            self._eval_cache = [
                {k: v.to(self.device) for k, v in self.collator(chunk, generator).items()} for chunk in chunks
            ]
        return self._eval_cache

    def evaluate(self) -> dict[str, float]:
        """Held-out MLM and NSP loss and accuracy (losses averaged over masked tokens and pairs)."""
        return self._without_nsp(held_out_metrics(self.model, self._eval_batches(), self.args.dtype))

    def _without_nsp(self, record: dict[str, Any]) -> dict[str, Any]:
        """A learner's model without an NSP head trains MLM only: its records leave the NSP numbers out."""
        if self.model.has_nsp_head:
            return record
        return {key: value for key, value in record.items() if key not in NSP_KEYS}

    @torch.no_grad()
    def probe_attentions(self) -> tuple[Tensor | None, list[str], list[int]]:
        """Attention probabilities [L, H, T, T] (on the CPU) of the probe pair now, with its tokens and segment ids;
        None for a learner's model whose attention does not expose them."""
        encoding = self.tokenizer.encode_pair(*self.probe, max_length=self.args.seq_len)
        inputs = {k: v.to(self.device) for k, v in encoding.to_tensors().items()}
        self.model.eval()
        trace = self.model.trace(**inputs)
        self.model.train()
        if not trace.attentions:
            return None, encoding.tokens, encoding.token_type_ids
        attentions = torch.stack([layer[0] for layer in trace.attentions]).float().cpu()
        return attentions, encoding.tokens, encoding.token_type_ids

    def save_snapshot(self) -> Path | None:
        """The probe pair's attention (and the heads' predictions) now; None where the model exposes no attention."""
        attentions, tokens, token_type_ids = self.probe_attentions()
        if attentions is None:
            return None
        predictions = None
        if self.model.has_mlm_head and self.model.has_nsp_head:
            predictions = probe_predictions(
                self.model, self.tokenizer, *self.probe, max_length=self.args.seq_len
            )
        return checkpoints.save_snapshot(
            self.run_dir, self.step, attentions, tokens, token_type_ids, self.probe, predictions
        )

    # ---- saving --------------------------------------------------------------------------------

    def weights_finite(self) -> bool:
        return all(bool(torch.isfinite(p).all()) for p in self.model.parameters())

    def save(self) -> bool:
        """Save the checkpoint (rank 0 writes); False, and nothing written, if the weights are not finite."""
        if not self.weights_finite():
            return False
        if self.distributed.is_main and isinstance(self.model, LearnerForPreTraining):
            save_learner_checkpoint(
                self.run_dir, self.model, self.tokenizer, self.train_args(), step=self.step
            )
        elif self.distributed.is_main:
            checkpoints.save_checkpoint(
                self.run_dir, self.model, self.tokenizer, self.train_args(), step=self.step
            )
            checkpoints.save_optimizer_state(self.run_dir, self.model, self.optimizer, self.step)
        self.checkpoint_step = self.step
        return True

    def train_args(self) -> dict[str, Any]:
        """What train_args.json records: the options, the model config and how the run was started."""
        return {
            "args": self.args.to_dict(),
            "config": self.config.to_dict(),
            "command": self.command,
            "world_size": self.distributed.world_size,
            "device": str(self.device),
            "started_at": self.started_at,
            "num_train_pairs": len(self.train_pairs),
            "num_eval_pairs": len(self.eval_pairs),
            "num_parameters": self.model.num_parameters(),
            "probe": list(self.probe),
            "torch_version": torch.__version__,
            **({"learner": record_of(self.model)} if isinstance(self.model, LearnerForPreTraining) else {}),
            **(
                {"resumed_from_step": self.resumed_from, "optimizer_restored": self.optimizer_restored}
                if self.resumed_from is not None
                else {}
            ),
        }

    # ---- stopping ------------------------------------------------------------------------------

    def request_stop(self) -> None:
        """Finish the current step, save, and end the run as "stopped" (safe from a signal handler)."""
        self._stop_requested = True

    def _should_stop(self) -> bool:
        """A stop asked here or by a STOP file, agreed by all processes."""
        local = self._stop_requested or RunFolder(self.run_dir).stop_requested()
        if not self.distributed.enabled:
            return local
        flag = torch.tensor([float(local)], device=self.device)
        return bool(self.distributed.all_reduce_sum(flag).item() > 0)

    # ---- run files -----------------------------------------------------------------------------

    def eta_s(self) -> float | None:
        done = self.step - (self.resumed_from or 0)
        if done <= 0 or self._loop_start is None:
            return None
        return (time.perf_counter() - self._loop_start) / done * (self.args.steps - self.step)

    def _write_status(self, state: str, message: str) -> None:
        if self.distributed.is_main and self.started_at is not None:
            self._heartbeat.write(
                state=state,
                message=message,
                step=self.step,
                total_steps=self.args.steps,
                checkpoint_step=self.checkpoint_step,
                started_at=self.started_at,
                eta_s=self.eta_s() if state == "running" else None,
                world_size=self.distributed.world_size,
            )

    def _open_run(self) -> None:
        self.run_dir.mkdir(parents=self.run_dir.parent == checkpoints_root(), exist_ok=True)
        remove_temporary_files(self.run_dir)
        self.started_at = time.time()
        if self.resumed_from is None:
            self.tokenizer.save_vocab(RunFolder(self.run_dir).vocab)
        else:
            RunFolder(self.run_dir).clear_stop()  # the stop that ended it before
            kept = keep_metrics_until(self.run_dir, self.resumed_from)  # the steps after it are trained again
            self._elapsed_before = max(
                [r["elapsed_s"] for r in kept if is_number(r.get("elapsed_s"))], default=0.0
            )
        atomic_write_json(RunFolder(self.run_dir).train_args, self.train_args())
        self._metrics = MetricsWriter(self.run_dir)
        self._write_status(
            "running",
            "Starting: saving the initial weights and attention snapshot"
            if self.resumed_from is None
            else f"Resuming from the checkpoint of step {self.step}",
        )

    def _emit(self, record: dict[str, Any]) -> None:
        self.last_record = record
        if self.distributed.is_main:
            self._metrics.write(record)
            for callback in self.callbacks:
                callback.on_record(self, record)

    # ---- the loop ------------------------------------------------------------------------------

    def train(self) -> TrainResult:
        """Run to the end, a stop, or divergence; write status.json on the way. Other errors: "failed", raised."""
        if self.distributed.is_main:
            self._open_run()
        try:
            result = self._loop()
        except BaseException as err:  # KeyboardInterrupt too: a second Ctrl-C does not wait for the step
            kept = (
                f" (the checkpoint of step {self.checkpoint_step} is kept)"
                if self.checkpoint_step is not None
                else ""
            )
            self._write_status("failed", one_line_error(err) + kept)
            raise
        finally:
            if self._metrics is not None:
                self._metrics.close()
        self._write_status(result.state, result.message)
        if self.distributed.is_main:
            for callback in self.callbacks:
                callback.on_end(self, result)
        return result

    def _loop(self) -> TrainResult:
        self._loop_start = time.perf_counter()
        self._reset_window()
        if self.resumed_from is None:  # a resumed run has both for its checkpoint step already
            if self.distributed.is_main:
                self.save_snapshot()
            self.save()
        if self._should_stop():
            return self._stopped()
        with made_ahead(self.next_batch, self.prefetch) as next_batch:  # ahead in a thread on a GPU
            while self.step < self.args.steps:
                self._window += self.train_step(next_batch())
                if self._first_loss is None:
                    self._first_loss = self._window_loss()
                stop = self._should_stop()
                diverged = self._after_step(last=stop or self.step == self.args.steps)
                if diverged is not None:
                    return diverged
                if self.distributed.is_main:
                    for callback in self.callbacks:
                        callback.on_step(self)
                if stop:
                    return self._stopped()
            return TrainResult("finished", self.step, self._summary(f"Finished {self.step} steps"))

    def _due(self, every: int, last: bool) -> bool:
        return last or (every > 0 and self.step % every == 0)

    def _after_step(self, last: bool) -> TrainResult | None:
        """Log, evaluate, snapshot and save when due; a TrainResult if training diverged."""
        args = self.args
        saving = self._due(args.save_every, last)
        events = (args.log_every, args.eval_every, args.snapshot_every, args.save_every)
        if not any(self._due(every, last) for every in events):
            return None
        started = time.perf_counter()
        record = self._log_train()
        if self._exploded(record) or (saving and not self.save()):
            return self._diverged(record)
        if self.distributed.is_main and self._due(args.eval_every, last):
            self._emit({"split": "eval", "step": self.step, **self.evaluate(), "elapsed_s": self.elapsed_s()})
        if self.distributed.is_main and self._due(args.snapshot_every, last):
            self.save_snapshot()
        self._write_status("running", f"Training: step {self.step} of {args.steps}")
        self._overhead += time.perf_counter() - started
        return None

    def _window_loss(self) -> float:
        """The mean loss of the steps in the window, over all processes."""
        loss, steps = self.distributed.all_reduce_sum(self._window[[0, -1]].clone()).tolist()
        return loss / max(steps, 1.0)

    def _exploded(self, record: dict[str, Any]) -> bool:
        """NaN or inf, or a loss above DIVERGENCE_FACTOR times the first step's (taken as at least 1)."""
        if not all(math.isfinite(record[k]) for k in ("loss", "grad_norm")):
            return True
        return record["loss"] > DIVERGENCE_FACTOR * max(self._first_loss or 0.0, 1.0)

    def _reset_window(self) -> None:
        self._window = torch.zeros(len(STAT_NAMES), dtype=torch.float64, device=self.device)
        self._window_start = time.perf_counter()
        self._overhead = 0.0

    def elapsed_s(self) -> float:
        """Wall seconds since training began (0 before)."""
        return self._elapsed_before + (
            time.perf_counter() - self._loop_start if self._loop_start is not None else 0.0
        )

    def _log_train(self) -> dict[str, Any]:
        """The train line for the steps since the last one (summed over processes)."""
        values = dict(
            zip(STAT_NAMES, self.distributed.all_reduce_sum(self._window.clone()).tolist(), strict=True)
        )
        seconds = max(time.perf_counter() - self._window_start - self._overhead, 1e-9)
        steps = max(values["steps"], 1.0)
        record = {
            "split": "train",
            "step": self.step,
            "loss": values["loss"] / steps,
            "mlm_loss": values["mlm_loss"] / steps,
            "nsp_loss": values["nsp_loss"] / steps,
            "mlm_acc": values["mlm_correct"] / max(values["mlm_count"], 1.0),
            "nsp_acc": values["nsp_correct"] / max(values["nsp_count"], 1.0),
            "lr": self._lr,
            "grad_norm": float(self._grad_norm),
            "tokens_per_s": values["tokens"] / seconds,
            "elapsed_s": self.elapsed_s(),
        }
        record = self._without_nsp(record)
        self._reset_window()
        self._emit(record)
        return record

    def _summary(self, text: str) -> str:
        evals = [r for r in [self.last_record] if r and r.get("split") == "eval"]
        if evals:
            text += f"; held-out MLM accuracy {evals[0]['eval_mlm_acc']:.1%}"
            nsp = evals[0].get("eval_nsp_acc")
            text += (
                f", NSP accuracy {nsp:.1%}" if nsp is not None else " (MLM only: the model has no NSP head)"
            )
        return text + f"; checkpoint of step {self.checkpoint_step} saved"

    def _stopped(self) -> TrainResult:
        if self.checkpoint_step != self.step and not self.save():
            return self._diverged(self.last_record or {})
        return TrainResult(
            "stopped", self.step, self._summary(f"Stopped at step {self.step} of {self.args.steps}")
        )

    def _diverged(self, record: dict[str, Any]) -> TrainResult:
        kept = (
            f"the checkpoint of step {self.checkpoint_step} is kept"
            if self.checkpoint_step is not None
            else "no checkpoint had been saved"
        )
        first = f" (first step: {self._first_loss:.4g})" if self._first_loss is not None else ""
        message = (
            f"Diverged at step {self.step}: loss {record.get('loss', float('nan')):.4g}{first}, gradient norm "
            f"{record.get('grad_norm', float('nan')):.4g} at learning rate {self._lr:.3g}; {kept}. "
            "Try a smaller --lr or a longer --warmup."
        )
        return TrainResult("diverged", self.step, message)


def one_line_error(err: BaseException) -> str:
    """An exception as one line for status.json and the terminal: "Type: message"."""
    if isinstance(err, KeyboardInterrupt):
        return "Interrupted by a second Ctrl-C before the step finished"
    text = " ".join(str(err).split())
    return f"{type(err).__name__}: {text}" if text else type(err).__name__
