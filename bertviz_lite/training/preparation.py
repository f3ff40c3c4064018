"""Everything a run needs before its first step, checked and built without writing a file.

`prepare_run` checks the run folder (a new run's must be new or empty; `--resume` needs a run of ours),
reads the corpus, builds or loads the model and its vocabulary, and makes the pairs. The Trainer then
only trains.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch

from bertviz_lite.check.learner_model import (
    LearnerError,
    LearnerForPreTraining,
    apply_memory_limit,
    load_learner,
    memory_limit,
    parse_spec,
)
from bertviz_lite.check.learner_run import (
    file_sha256,
    is_learner_run,
    learner_checkpoint_step,
    load_learner_run,
)
from bertviz_lite.loading import checkpoints
from bertviz_lite.loading.pretrained import load, load_folder
from bertviz_lite.loading.run_folder import (
    RunFolder,
    checkpoints_root,
    process_alive,
    read_status,
    read_train_args,
)
from bertviz_lite.model.config import BertConfig
from bertviz_lite.model.modeling import BertForPreTraining
from bertviz_lite.text.tokenization import BertTokenizer
from bertviz_lite.training.dataset import TrainingData, load_documents, prepare_data, train_tokenizer
from bertviz_lite.training.distributed import Distributed, resolve_device
from bertviz_lite.training.training_args import OptionError, TrainingArguments


@dataclass
class PreparedRun:
    """A run's model (in train mode, both heads on; a learner's with the heads it has), its data, and the checkpoint
    step it resumes from."""

    model: BertForPreTraining | LearnerForPreTraining
    data: TrainingData
    resumed_from: int | None = None


def prepare_run(
    args: TrainingArguments,
    distributed: Distributed | None = None,
    tokenizer: BertTokenizer | None = None,
    resume: bool = False,
) -> PreparedRun:
    """Check the run folder, read the corpus, build the model and the pairs (OptionError naming the option)."""
    distributed = distributed or Distributed()
    run_dir = Path(args.out)
    resumed_from = resumable_step(run_dir, args.steps) if resume else None
    if distributed.is_main and not resume:
        check_run_dir(run_dir)
    documents = load_documents(args)
    torch.manual_seed(args.seed)  # the same initial weights in every process
    if resumed_from is not None:
        model, tokenizer = _load_run(run_dir)
    elif args.init:
        model, tokenizer = load_initial_model(args)
    else:
        tokenizer = tokenizer or train_tokenizer(documents, args.vocab_size, distributed)
        config = args.bert_config(tokenizer.vocab_size)
        model = learner_model(args.model_file, config) if args.model_file else BertForPreTraining(config)
    if not isinstance(model, LearnerForPreTraining):
        model.has_mlm_head = model.has_nsp_head = True  # the run trains both
    return PreparedRun(model.train(), prepare_data(args, documents, tokenizer), resumed_from)


def learner_model(model_file: str, config: BertConfig) -> LearnerForPreTraining:
    """A learner's model built at `config`'s sizes from their file (`FILE[:CLASS]`); OptionError with their sentence."""
    spec = parse_spec(model_file)
    try:
        return load_learner(spec, config, file_sha256(spec.file))
    except (LearnerError, OSError) as err:
        raise OptionError("model_file", f"model_file ({model_file!r}): {err}") from None


def limit_learner_process(args: TrainingArguments, distributed: Distributed) -> None:
    """The checker's memory limit (RLIMIT_AS) on this process, which will run a learner's code: for the training
    command's own process (training.cli), never a caller's. On CUDA, whose driver maps far more address space than
    it uses, the limit would refuse the GPU itself, so it is left off there."""
    if resolve_device(args.device, distributed).type == "cpu":
        apply_memory_limit(memory_limit(args.model_config(), args.batch_size, args.seq_len))


def load_initial_model(args: TrainingArguments) -> tuple[BertForPreTraining, BertTokenizer]:
    """The pretrained model and vocabulary a run continues from; heads it lacks start freshly initialised."""
    try:
        model, tokenizer = load(args.init)
    except (OSError, ValueError) as err:
        raise OptionError("init", f"init ({args.init!r}): {err}") from None
    return model, tokenizer  # TrainingArguments checked seq_len against its positions


def _load_run(run_dir: Path) -> tuple[BertForPreTraining | LearnerForPreTraining, BertTokenizer]:
    try:
        return load_learner_run(run_dir) if is_learner_run(run_dir) else load_folder(run_dir)
    except (OSError, ValueError) as err:
        raise OptionError("resume", f"out ({str(run_dir)!r}): its checkpoint does not load: {err}") from None


def check_run_dir(run_dir: Path) -> None:
    """A new run's folder: absent, empty, or holding only what the app wrote there to launch it.

    A folder with anything else in it (a run, a checkpoint, a user's files) is refused, so nothing is overwritten.
    """
    where = f"out ({str(run_dir)!r})"
    if run_dir.exists() and not run_dir.is_dir():
        raise OptionError("out", f"{where} is a file, not a folder")
    if not run_dir.exists():
        if not run_dir.parent.is_dir() and run_dir.parent != checkpoints_root():
            raise OptionError("out", f"{where}: the folder {str(run_dir.parent)!r} does not exist")
        return
    taken = RunFolder(run_dir).run_markers()
    if taken:
        raise OptionError(
            "out",
            f"{where} already holds a run ({taken[0]}): choose another folder, or continue "
            "the run with --resume",
        )
    others = RunFolder(run_dir).foreign_files()
    if others:
        listed = ", ".join(others[:3]) + (", …" if len(others) > 3 else "")
        raise OptionError(
            "out", f"{where} is a folder that holds other files ({listed}): a run needs a new or empty folder"
        )


def resumable_step(run_dir: Path, steps: int) -> int:
    """The checkpoint step of a run of ours that `--resume` can continue to `steps`; OptionError if none."""
    where = f"out ({str(run_dir)!r})"
    status = read_status(run_dir)
    step = (
        learner_checkpoint_step(run_dir) if is_learner_run(run_dir) else checkpoints.checkpoint_step(run_dir)
    )
    if status is None or read_train_args(run_dir) is None or step is None:
        raise OptionError(
            "resume",
            f"{where} holds no run to resume: --resume needs a run folder with status.json, "
            "train_args.json and a checkpoint (model.safetensors)",
        )
    pid = status.get("pid")
    if status.get("state") == "running" and pid != os.getpid() and process_alive(pid):
        raise OptionError("resume", f"{where} is still training (pid {pid}): stop it before resuming")
    if step >= steps:
        raise OptionError(
            "steps",
            f"steps ({steps}) must be more than the {step} steps the run has already "
            "trained, to train it further",
        )
    return step
