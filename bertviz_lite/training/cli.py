"""Pre-train BERT (MLM + NSP) from the command line: `python -m bertviz_lite.train --preset tiny --out checkpoints/NAME`.

The run folder gets metrics.jsonl, status.json, train_args.json, snapshots/ and the checkpoint
(see `bertviz_lite.loading.run_folder` and `bertviz_lite.loading.checkpoints` for the formats). SIGINT, SIGTERM or a
file named STOP in the run folder: finish the step, save, stop. `--resume --out checkpoints/NAME`
continues a stopped, killed or finished run from its checkpoint. Under `torchrun --nproc_per_node=N`
the same command trains with DistributedDataParallel.

Exit codes: 0 finished or stopped, 1 failed or diverged, 2 bad arguments (one line naming the option).
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import shlex
import signal
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any, TextIO

import torch

from bertviz_lite.loading.run_folder import read_train_args
from bertviz_lite.model.config import POSITION_EMBEDDING_TYPES, BertConfig
from bertviz_lite.training import training_args
from bertviz_lite.training.distributed import Distributed, resolve_device
from bertviz_lite.training.optimization import BF16_EMULATED, bf16_emulated
from bertviz_lite.training.preparation import limit_learner_process
from bertviz_lite.training.trainer import Trainer, TrainerCallback, TrainResult, one_line_error
from bertviz_lite.training.training_args import CONFIG_OVERRIDES, OptionError, option_fields

_TYPES = {int: int, float: float, str: str}
RESUME_HELP = (
    "continue the run in --out from its last checkpoint with the options it was started with: the "
    "weights, the step and so the learning-rate schedule, the data order, and AdamW's moments when "
    "optimizer.safetensors belongs to that checkpoint (otherwise they restart from zero, which can "
    "jolt the loss); the masking and dropout draws restart. The metrics after the checkpoint are "
    "dropped and trained again. Only --steps (to train further), --device, --dtype, --compile, --compile-mode, "
    "--threads and --quiet may be given with it"
)
# the training options --resume may change
RESUME_OPTIONS = ("steps", "device", "dtype", "compile", "compile_mode")
MAX_THREADS = 256  # --threads: more than any machine this runs on has cores


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bertviz_lite.train",
        description=__doc__.split("\n\n")[0],
        epilog="Exit codes: 0 finished or stopped, 1 failed or diverged, 2 bad arguments. pad_token_id is "
        "always 0, the id of [PAD] in the trained vocabulary.",
    )
    for spec in option_fields():  # each option's help, choices and default are declared on its field
        default = spec.default
        help_text = spec.metadata["help"] + ("" if default is None else f" (default: {default})")
        if isinstance(default, bool):  # a flag: given means True
            parser.add_argument(_flag(spec.name), action="store_true", help=spec.metadata["help"])
            continue
        parser.add_argument(
            _flag(spec.name),
            type=_option_type(spec),
            choices=spec.metadata["choices"],
            default=default,
            help=help_text,
        )
    group = parser.add_argument_group("model config overrides (default: the preset's)")
    for spec in dataclasses.fields(BertConfig):
        if spec.name in CONFIG_OVERRIDES:
            choices = list(POSITION_EMBEDDING_TYPES) if spec.name == "position_embedding_type" else None
            group.add_argument(
                _flag(spec.name),
                type=_TYPES[type(spec.default)],
                choices=choices,
                default=None,
                help=f"{spec.metadata['help']} (BertConfig.{spec.name})",
            )
    parser.add_argument("--resume", action="store_true", help=RESUME_HELP)
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help=f"CPU threads for PyTorch, 1 to {MAX_THREADS} (default: its own)",
    )
    parser.add_argument(
        "--quiet", action="store_true", help="no progress bar (the final result is still printed)"
    )
    return parser


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _option_type(spec: dataclasses.Field) -> type:
    kind = str(spec.type)
    return int if "int" in kind else float if "float" in kind else str


def arguments_from_namespace(namespace: argparse.Namespace) -> training_args.TrainingArguments:
    """TrainingArguments from parsed options; config overrides left at None keep the preset's value."""
    values = vars(namespace)
    config = {name: values[name] for name in CONFIG_OVERRIDES if values.get(name) is not None}
    return training_args.TrainingArguments(
        **{spec.name: values[spec.name] for spec in option_fields()}, config=config
    )


def given_options(argv: Sequence[str]) -> set[str]:
    """The options written on the command line (not those left at their defaults)."""
    parser = build_parser()
    for action in parser._actions:
        action.default = argparse.SUPPRESS
    return set(vars(parser.parse_args(argv)))


def resume_arguments(namespace: argparse.Namespace, given: set[str]) -> training_args.TrainingArguments:
    """The TrainingArguments a run in --out was started with, with the RESUME_OPTIONS given now."""
    extra = sorted(given - {"resume", "out", "threads", "quiet", *RESUME_OPTIONS})
    if extra:
        raise OptionError(
            "resume",
            f"--resume continues a run with its own options: {_flag(extra[0])} cannot be "
            "given with it (only --steps, --device, --dtype, --compile and --compile-mode)",
        )
    if namespace.out is None:
        raise OptionError("out", "--resume needs --out: the folder of the run to continue")
    saved = (read_train_args(namespace.out) or {}).get("args")
    if not isinstance(saved, dict):
        raise OptionError(
            "resume",
            f"out ({namespace.out!r}) holds no run to resume: --resume needs a run folder "
            "with status.json, train_args.json and a checkpoint (model.safetensors)",
        )
    fields = {f.name for f in dataclasses.fields(training_args.TrainingArguments)}
    values = {name: value for name, value in saved.items() if name in fields}
    values.update(
        {name: getattr(namespace, name) for name in RESUME_OPTIONS if name in given}, out=namespace.out
    )
    return training_args.TrainingArguments(**values)


def format_option_error(err: OptionError) -> str:
    """One line for the terminal: field names written as the flags that set them."""
    names = {spec.name for spec in option_fields()} | set(CONFIG_OVERRIDES)
    message = " ".join(str(err).split())
    message = re.sub(r"\b([a-z_]+) \(", lambda m: f"{_flag(m[1])} (" if m[1] in names else m[0], message)
    if not message.startswith("--"):
        message = f"{_flag(err.option)}: {message}"
    return f"error: {message}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(seconds)
    return (
        f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
        if seconds >= 3600
        else f"{seconds // 60}:{seconds % 60:02d}"
    )


def _nsp(record: dict[str, Any], key: str) -> str:
    """The NSP part of the line (" nsp 52%"), or nothing for a model trained without NSP (a learner's without an NSP head)."""
    return f" nsp {record[key]:.0%}" if key in record else ""


class ProgressBar(TrainerCallback):
    """A one-line progress bar with ETA on a terminal; one plain line per metrics line elsewhere."""

    def __init__(self, stream: TextIO = sys.stderr, redraw_s: float = 0.2):
        self.stream = stream
        self.redraw_s = redraw_s
        self.tty = stream.isatty()
        self.train: dict[str, Any] = {}
        self.eval: dict[str, Any] = {}
        self._drawn = 0.0

    def line(self, trainer: Trainer) -> str:
        total = trainer.args.steps
        done = trainer.step / total
        bar = "#" * int(done * 20) + "-" * (20 - int(done * 20))
        text = f"step {trainer.step}/{total} {done:4.0%} |{bar}|"
        if self.train:
            text += (
                f" loss {self.train['loss']:.3f} mlm {self.train['mlm_acc']:.0%}{_nsp(self.train, 'nsp_acc')}"
            )
            text += f" {self.train['tokens_per_s']:.0f} tok/s"
        if self.eval:
            text += f" | eval mlm {self.eval['eval_mlm_acc']:.0%}{_nsp(self.eval, 'eval_nsp_acc')}"
        return text + f" | {_duration(trainer.elapsed_s())} < {_duration(trainer.eta_s())}"

    def on_step(self, trainer: Trainer) -> None:
        now = time.perf_counter()
        if self.tty and (now - self._drawn >= self.redraw_s or trainer.step == trainer.args.steps):
            self._drawn = now
            self.stream.write("\r" + self.line(trainer) + "\x1b[K")
            self.stream.flush()

    def on_record(self, trainer: Trainer, record: dict[str, Any]) -> None:
        if record["split"] == "eval":
            self.eval = record
        else:
            self.train = record
            if not self.tty:
                print(self.line(trainer), file=self.stream, flush=True)

    def on_end(self, trainer: Trainer, result: TrainResult) -> None:
        if self.tty:
            self.stream.write("\n")


class StopSignals:
    """SIGINT/SIGTERM ask the trainer to stop after its step; a second SIGINT interrupts at once."""

    def __init__(self) -> None:
        self.requested = False
        self.trainer: Trainer | None = None
        self._previous: dict[int, Any] = {}

    def install(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def restore(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def attach(self, trainer: Trainer) -> None:
        self.trainer = trainer
        if self.requested:
            trainer.request_stop()

    def _handle(self, signum: int, frame: Any) -> None:
        if self.requested and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.requested = True
        if self.trainer is not None:
            self.trainer.request_stop()


def prepare(argv: Sequence[str], distributed: Distributed, quiet: bool | None = None) -> Trainer:
    """Parse and validate everything, set up the processes, build the Trainer (nothing written yet)."""
    namespace = build_parser().parse_args(argv)
    if namespace.threads is not None:
        if not 1 <= namespace.threads <= MAX_THREADS:
            raise OptionError(
                "threads", f"threads ({namespace.threads}) must be a whole number from 1 to {MAX_THREADS}"
            )
        torch.set_num_threads(namespace.threads)
    if namespace.resume:
        args = resume_arguments(namespace, given_options(argv))
    else:
        args = arguments_from_namespace(namespace)
    distributed.init_process_group(resolve_device(args.device, distributed))
    if args.model_file:  # this process will import a learner's file: the checker's worker's limits first
        limit_learner_process(args, distributed)
    quiet = namespace.quiet if quiet is None else quiet
    callbacks = [] if quiet or not distributed.is_main else [ProgressBar()]
    command = shlex.join(["python", "-m", "bertviz_lite.train", *argv])
    return Trainer(
        args, distributed=distributed, callbacks=callbacks, command=command, resume=namespace.resume
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 finished/stopped, 1 failed/diverged, 2 bad arguments)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    signals = StopSignals().install()
    distributed = Distributed.from_env()
    try:
        trainer = prepare(argv, distributed)
    except (OptionError, SystemExit) as err:  # SystemExit: argparse's own errors (2) and --help (0)
        if isinstance(err, OptionError):
            print(format_option_error(err), file=sys.stderr)
        signals.restore()
        distributed.destroy_process_group(wait_for_all=False)
        return err.code if isinstance(err, SystemExit) else 2
    signals.attach(trainer)
    if distributed.is_main:
        print(f"Run folder: {trainer.run_dir}", file=sys.stderr, flush=True)
        if bf16_emulated(trainer.args.dtype, trainer.device):
            print(f"warning: {BF16_EMULATED}; --dtype auto or fp32 is faster.", file=sys.stderr, flush=True)
    result = None
    try:
        result = trainer.train()
    except (Exception, KeyboardInterrupt) as err:
        print(f"error: training failed: {one_line_error(err)}", file=sys.stderr)
        return 1
    finally:
        signals.restore()
        distributed.destroy_process_group(wait_for_all=result is not None)
    if distributed.is_main:
        print(f"{result.state}: {result.message}", file=sys.stderr, flush=True)
    return 0 if result.state in ("finished", "stopped") else 1


if __name__ == "__main__":
    sys.exit(main())
