"""Pre-train BERT with MLM + NSP: presets, TrainingArguments, and the Trainer the CLI, the app and tests share.

The Trainer writes nothing until `train()` is called; everything it writes goes into the run folder
(`args.out`), in the formats documented in `bertviz_lite.run_folder` and `bertviz_lite.checkpoints`.
Under `torchrun` (RANK / WORLD_SIZE / LOCAL_RANK in the environment) each process trains on its own
shard of the pairs with DistributedDataParallel, and only rank 0 writes.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.distributed as torch_dist
from torch import Tensor, nn

from bertviz_lite import checkpoints
from bertviz_lite.config import BertConfig
from bertviz_lite.corpora import english_corpus
from bertviz_lite.data import (
    PretrainingCollator,
    builtin_corpus,
    make_nsp_pairs,
    read_corpus,
    split_train_eval,
)
from bertviz_lite.evaluation import probe_predictions
from bertviz_lite.limits import amount, parameter_count
from bertviz_lite.model import Bert
from bertviz_lite.pretrained import MINILM, load, load_folder, minilm_dir, resolve_source
from bertviz_lite.run_folder import (
    MetricsWriter,
    RunFolder,
    atomic_write_json,
    checkpoints_root,
    keep_metrics_until,
    new_run_folder,
    process_alive,
    read_status,
    read_train_args,
    remove_temporary_files,
    validate_run_name,
    write_status,
)
from bertviz_lite.tokenization import MAX_POSITIONS, MIN_TRAIN_VOCAB_SIZE, BertTokenizer

PRESETS: dict[str, dict[str, Any]] = {
    "tiny": {
        "config": {"hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 512,
                   "max_position_embeddings": 128, "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0},
        "vocab_size": 1000, "seq_len": 64, "batch_size": 32, "steps": 1000, "lr": 2e-3, "warmup": 30,
        "log_every": 5, "eval_every": 50, "snapshot_every": 25, "save_every": 100,
    },
    "classroom": {  # the tiny model, sized to finish within 2 minutes on 2 CPU cores: start it, teach, show it
        "config": {"hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 512,
                   "max_position_embeddings": 128, "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0},
        "vocab_size": 1000, "seq_len": 64, "batch_size": 32, "steps": 800, "lr": 2e-3, "warmup": 30,
        "log_every": 5, "eval_every": 25, "snapshot_every": 20, "save_every": 100,
    },
    "small": {
        "config": {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 1024,
                   "max_position_embeddings": 512},
        "vocab_size": 8000, "seq_len": 128, "batch_size": 16, "steps": 2000, "lr": 5e-4, "warmup": 200,
        "log_every": 10, "eval_every": 200, "snapshot_every": 100, "save_every": 500,
    },
    "base": {
        "config": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072,
                   "max_position_embeddings": 512},
        "vocab_size": 30522, "seq_len": 128, "batch_size": 32, "steps": 10000, "lr": 1e-4, "warmup": 1000,
        "log_every": 20, "eval_every": 500, "snapshot_every": 500, "save_every": 1000,
    },
}  # fmt: skip
CONFIG_OVERRIDES = tuple(f.name for f in dataclasses.fields(BertConfig) if f.name not in ("vocab_size", "pad_token_id"))
DEVICES = ("auto", "cpu", "cuda")
DTYPES = ("auto", "fp32", "bf16")  # auto: bf16 autocast on CUDA, float32 on CPU
ADAM_EPS = 1e-6  # BERT's
MAX_PARAMETERS = 350_000_000  # the largest model a run may train (loading allows limits.max_parameters())
MAX_TENSOR_ELEMENTS = 2**31  # the largest activation of one layer in one step (8 GiB in float32)
DIVERGENCE_FACTOR = 10.0  # a logged loss above this many times the first step's loss (at least 1) has diverged


class OptionError(ValueError):
    """A bad training option; `option` is the TrainingArguments field (the CLI flag without dashes)."""

    def __init__(self, option: str, message: str):
        super().__init__(message)
        self.option = option


# ---- arguments ---------------------------------------------------------------------------------


@dataclass
class TrainingArguments:
    """Every option of a run; None means "the preset's value". Validated on creation (OptionError)."""

    preset: str = "tiny"
    corpus: str = "builtin"
    num_documents: int = 3000  # stories in the built-in corpus
    init: str | None = None  # start from these pretrained weights (a name load() knows, or a folder)
    vocab_size: int | None = None
    seq_len: int | None = None
    batch_size: int | None = None  # per process
    steps: int | None = None
    lr: float | None = None
    warmup: int | None = None
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    mask_prob: float = 0.15
    eval_fraction: float = 0.05
    eval_pairs: int = 512  # at most this many held-out pairs are evaluated
    seed: int = 0
    device: str = "auto"
    dtype: str = "auto"
    log_every: int | None = None
    eval_every: int | None = None
    snapshot_every: int | None = None
    save_every: int | None = None  # 0: save only at the end (and at a stop)
    out: str | None = None
    config: dict[str, Any] = field(default_factory=dict)  # BertConfig overrides, e.g. {"hidden_size": 64}

    def __post_init__(self) -> None:
        if self.preset not in PRESETS:
            raise OptionError("preset", f"preset ({self.preset!r}) must be one of {', '.join(PRESETS)}")
        for name, value in PRESETS[self.preset].items():
            if name != "config" and getattr(self, name) is None:
                setattr(self, name, value)
        if self.out is None:
            self.out = str(new_run_folder().path)
        self.config = dict(self.config)
        _validate_arguments(self)
        if self.init:
            _check_init_positions(self.init, self.seq_len)
        else:
            self.bert_config(self.vocab_size)  # sizes that cannot build a model fail now, not after the data

    def bert_config(self, vocab_size: int) -> BertConfig:
        """The model's config: the preset's sizes, then the overrides, with this vocabulary size."""
        unknown = sorted(set(self.config) - set(CONFIG_OVERRIDES))
        if unknown:
            raise OptionError("config", f"config has unknown field(s) {', '.join(unknown)}")
        values = {**PRESETS[self.preset]["config"], **self.config, "vocab_size": vocab_size, "pad_token_id": 0}
        try:
            config = BertConfig(**values)
        except (TypeError, ValueError) as err:
            raise OptionError(_field_named_in(str(err)), str(err)) from None
        if config.max_position_embeddings < self.seq_len:
            raise OptionError("seq_len", f"seq_len ({self.seq_len}) must be at most max_position_embeddings "
                                         f"({config.max_position_embeddings})")  # fmt: skip
        _check_seq_len_limit(self.seq_len)
        if config.type_vocab_size < 2:
            raise OptionError("type_vocab_size", f"type_vocab_size ({config.type_vocab_size}) must be at least 2: "
                                                 "sentence pairs use segments 0 and 1")  # fmt: skip
        _check_model_size(config, self)
        return config

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _field_named_in(message: str) -> str:
    """The config field a BertConfig error message starts with."""
    return message.split(" ", 1)[0]


def _check(condition: bool, option: str, message: str) -> None:
    if not condition:
        raise OptionError(option, message)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _validate_arguments(args: TrainingArguments) -> None:
    """Raise OptionError naming the first option whose value cannot start a run."""
    for name in ("steps", "batch_size", "seq_len", "vocab_size", "num_documents", "eval_pairs",
                 "log_every", "eval_every", "snapshot_every"):  # fmt: skip
        value = getattr(args, name)
        _check(_is_int(value) and value > 0, name, f"{name} ({value!r}) must be a whole number greater than 0")
    for name in ("warmup", "save_every", "seed"):
        value = getattr(args, name)
        _check(_is_int(value) and value >= 0, name, f"{name} ({value!r}) must be a whole number, 0 or more")
    _check(args.seq_len >= 8, "seq_len", f"seq_len ({args.seq_len}) must be at least 8 tokens")
    _check(_is_number(args.lr) and args.lr > 0, "lr", f"lr ({args.lr!r}) must be a number greater than 0")
    _check(_is_number(args.weight_decay) and args.weight_decay >= 0, "weight_decay",
           f"weight_decay ({args.weight_decay!r}) must be a number, 0 or more")  # fmt: skip
    _check(_is_number(args.max_grad_norm) and args.max_grad_norm > 0, "max_grad_norm",
           f"max_grad_norm ({args.max_grad_norm!r}) must be a number greater than 0")  # fmt: skip
    for name in ("mask_prob", "eval_fraction"):
        value = getattr(args, name)
        _check(_is_number(value) and 0 < value < 1, name, f"{name} ({value!r}) must be between 0 and 1 (exclusive)")
    _check(args.device in DEVICES, "device", f"device ({args.device!r}) must be one of {', '.join(DEVICES)}")
    _check(args.dtype in DTYPES, "dtype", f"dtype ({args.dtype!r}) must be one of {', '.join(DTYPES)}")
    _check(isinstance(args.corpus, str) and bool(args.corpus.strip()), "corpus",
           "corpus is empty: give 'builtin', 'english' or the path of a UTF-8 text file")  # fmt: skip
    _check(args.init is None or (isinstance(args.init, str) and bool(args.init.strip())), "init",
           "init is empty: give a model name such as 'all-MiniLM-L6-v2' or a model folder")  # fmt: skip
    _check(args.init is None or not args.config, "config",
           f"config overrides ({', '.join(sorted(args.config))}) cannot be used with init: the pretrained "
           "model fixes its sizes")  # fmt: skip
    _validate_sizes(args)
    _validate_out(args.out)


def _validate_sizes(args: TrainingArguments) -> None:
    """Checks of sizes the data and the tokenizer need, made before anything is built."""
    _check(args.vocab_size >= MIN_TRAIN_VOCAB_SIZE, "vocab_size",
           f"vocab_size ({args.vocab_size}) must be at least {MIN_TRAIN_VOCAB_SIZE}")  # fmt: skip
    _check(args.num_documents >= 2, "num_documents",
           f"num_documents ({args.num_documents}) must be at least 2: next-sentence pairs need 2 stories")  # fmt: skip


def _check_seq_len_limit(seq_len: int) -> None:
    _check(seq_len <= MAX_POSITIONS, "seq_len", f"seq_len ({seq_len}) must be at most {MAX_POSITIONS}, "
                                                "the longest sentence pair the tokenizer builds")  # fmt: skip


def _check_init_positions(init: str, seq_len: int) -> None:
    """seq_len must fit the positions of the pretrained model a run starts from (read from its config.json)."""
    positions = pretrained_config(init).max_position_embeddings
    _check(seq_len <= positions, "seq_len",
           f"seq_len ({seq_len}) must be at most {positions}, the positions of the pretrained model {init!r}")  # fmt: skip
    _check_seq_len_limit(seq_len)


def pretrained_config(source: str) -> BertConfig:
    """The config of the model `--init` names, read from its config.json without loading the weights."""
    try:
        folder = minilm_dir() if source == MINILM else resolve_source(source)
        return BertConfig.from_json_file(RunFolder(folder).config)
    except (OSError, ValueError) as err:
        raise OptionError("init", f"init ({source!r}): {err}") from None


def _check_model_size(config: BertConfig, args: TrainingArguments) -> None:
    """Refuse a model above MAX_PARAMETERS, or a step whose largest activation could not be allocated."""
    count = parameter_count(config)
    if count > MAX_PARAMETERS:
        preset = {**PRESETS[args.preset]["config"], "vocab_size": PRESETS[args.preset]["vocab_size"]}
        option = max(("hidden_size", "intermediate_size", "num_hidden_layers", "max_position_embeddings",
                      "vocab_size"), key=lambda name: getattr(config, name) / preset[name])  # fmt: skip
        raise OptionError(option, f"{option} ({getattr(config, option)}) makes a model of about {amount(count)} "
                                  f"parameters; training allows at most {amount(MAX_PARAMETERS)} (BERT-large has 340 M)")  # fmt: skip
    widest = max(config.num_attention_heads * args.seq_len, config.intermediate_size)
    elements = args.batch_size * args.seq_len * widest
    _check(elements <= MAX_TENSOR_ELEMENTS, "batch_size",
           f"batch_size ({args.batch_size}) × seq_len ({args.seq_len}) × {widest} (attention scores or feed-forward "
           f"width) is {elements:,} numbers in one layer's activations, more than {MAX_TENSOR_ELEMENTS:,}: use a "
           "smaller batch size or sequence length")  # fmt: skip


def _validate_out(out: str) -> None:
    """The run folder's name must be safe, and the path may not climb out with '..'."""
    path = Path(out)
    _check(".." not in path.parts, "out", f"out ({out!r}) must not contain '..'")
    try:
        validate_run_name(path.name)
    except ValueError as err:
        raise OptionError("out", f"out ({out!r}): {err}") from None


# ---- processes and devices ---------------------------------------------------------------------


@dataclass
class Distributed:
    """Where this process stands among the training processes (one, unless started by torchrun)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @classmethod
    def from_env(cls) -> Distributed:
        """Read torchrun's RANK / WORLD_SIZE / LOCAL_RANK; a single process when they are absent."""
        if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
            return cls()
        return cls(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ.get("LOCAL_RANK", 0)))

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def init_process_group(self, device: torch.device) -> None:
        """gloo on CPU, nccl on CUDA; a no-op for a single process."""
        if self.enabled and not torch_dist.is_initialized():
            torch_dist.init_process_group("nccl" if device.type == "cuda" else "gloo")

    def destroy_process_group(self, wait_for_all: bool = True) -> None:
        """Leave the group; by default first wait until rank 0 has written its last files."""
        if self.enabled and torch_dist.is_initialized():
            if wait_for_all:
                torch_dist.barrier()
            torch_dist.destroy_process_group()

    def all_reduce_sum(self, tensor: Tensor) -> Tensor:
        if self.enabled:
            torch_dist.all_reduce(tensor)
        return tensor


def resolve_device(name: str, distributed: Distributed | None = None) -> torch.device:
    """"auto" -> CUDA when available, else CPU; each torchrun process takes GPU LOCAL_RANK."""
    if name == "cuda" and not torch.cuda.is_available():
        raise OptionError("device", "device ('cuda') is not available: this machine has no usable CUDA GPU")
    if name == "cpu" or (name == "auto" and not torch.cuda.is_available()):
        return torch.device("cpu")
    return torch.device("cuda", (distributed or Distributed()).local_rank)


# ---- data --------------------------------------------------------------------------------------


def load_documents(args: TrainingArguments) -> list[list[str]]:
    """The built-in stories, or the documents of the corpus file; OptionError("corpus") if unusable."""
    try:
        if args.corpus == "builtin":
            return builtin_corpus(seed=args.seed, num_documents=args.num_documents)
        if args.corpus == "english":
            return english_corpus()
        return read_corpus(args.corpus)
    except (OSError, ValueError) as err:
        raise OptionError("corpus", f"corpus ({args.corpus!r}): {err}") from None


def probe_pair(documents: Sequence[Sequence[str]]) -> tuple[str, str]:
    """The fixed sentence pair whose attention is snapshotted: the first two sentences of the first story."""
    return next((doc[0], doc[1]) for doc in documents if len(doc) >= 2)


def batch_indices(num_items: int, batch_size: int, seed: int, rank: int = 0, world_size: int = 1) -> Iterator[list[int]]:
    """Endless batches of indices: a new shuffle each epoch, each rank its own equal shard, no partial batch."""
    check_batch_size(batch_size, num_items, world_size)
    return _epochs(num_items, batch_size, seed, rank, world_size)


def check_batch_size(batch_size: int, num_train_pairs: int, world_size: int = 1) -> None:
    """A batch must fit in each process's share of the training pairs (the Train form asks this too)."""
    per_rank = num_train_pairs // world_size
    share = "of the corpus" if world_size == 1 else f"that each of the {world_size} processes gets"
    if per_rank < batch_size:
        raise OptionError("batch_size", f"batch_size ({batch_size}) is more than the {per_rank} training pairs "
                                        f"{share}: use a smaller batch or a bigger corpus")  # fmt: skip


def _epochs(num_items: int, batch_size: int, seed: int, rank: int, world_size: int) -> Iterator[list[int]]:
    per_rank, epoch = num_items // world_size, 0
    while True:
        order = torch.randperm(num_items, generator=torch.Generator().manual_seed(seed + epoch))
        shard = order[: per_rank * world_size][rank::world_size].tolist()
        for start in range(0, per_rank - batch_size + 1, batch_size):
            yield shard[start : start + batch_size]
        epoch += 1


def train_tokenizer(documents: list[list[str]], vocab_size: int, distributed: Distributed) -> BertTokenizer:
    """WordPiece vocabulary learnt from the corpus; under torchrun rank 0's is sent to every rank."""
    vocab = [None]
    if distributed.is_main:
        try:
            tokenizer = BertTokenizer.train([s for doc in documents for s in doc], vocab_size)
        except ValueError as err:
            raise OptionError("vocab_size", str(err)) from None
        vocab = [tokenizer.vocab]
    if distributed.enabled:
        torch_dist.broadcast_object_list(vocab, src=0)
    return BertTokenizer(vocab[0])


def load_initial_model(args: TrainingArguments) -> tuple[Bert, BertTokenizer]:
    """The pretrained model and vocabulary a run continues from; heads it lacks start freshly initialised."""
    try:
        model, tokenizer = load(args.init)
    except (OSError, ValueError) as err:
        raise OptionError("init", f"init ({args.init!r}): {err}") from None
    return model, tokenizer  # TrainingArguments checked seq_len against its positions


# ---- optimisation ------------------------------------------------------------------------------


def learning_rate(step: int, peak: float, warmup: int, total: int) -> float:
    """Linear warm-up from 0 to `peak` over `warmup` steps, then linear decay to 0 at `total` (step from 1)."""
    if step <= warmup:
        return peak * step / max(1, warmup)
    return peak * max(0.0, (total - step) / max(1, total - warmup))


def make_optimizer(model: nn.Module, lr: float, weight_decay: float) -> torch.optim.AdamW:
    """AdamW, BERT-style: no weight decay on biases and LayerNorm weights."""
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if param.requires_grad:
            (no_decay if param.dim() < 2 or "LayerNorm" in name else decay).append(param)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    # fused: one kernel for all tensors; on CPU ~3.5x faster than foreach=True (a few % of a step)
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.999), eps=ADAM_EPS, fused=True)


class PretrainingStep(nn.Module):
    """Wraps Bert so that DistributedDataParallel sees `pretraining_loss` as its forward."""

    def __init__(self, model: Bert):
        super().__init__()
        self.model = model

    def forward(self, batch: dict[str, Tensor]) -> tuple[Tensor, ...]:
        out = self.model.pretraining_loss(
            batch["input_ids"], batch["token_type_ids"], batch["attention_mask"], batch["labels"],
            batch["next_sentence_label"],
        )  # fmt: skip
        return out.loss, out.mlm_loss, out.nsp_loss, out.mlm_logits, out.mlm_labels, out.nsp_logits


def use_bf16(dtype: str, device: torch.device) -> bool:
    """Whether to run forward passes in bf16 autocast: "auto" means on CUDA only."""
    return dtype == "bf16" or (dtype == "auto" and device.type == "cuda")


def optimizer_step(
    step_module: nn.Module, optimizer: torch.optim.Optimizer, batch: dict[str, Tensor], max_grad_norm: float,
    dtype: str = "auto",
) -> tuple[tuple[Tensor, ...], Tensor]:
    """Forward (bf16 autocast as `dtype` says), backward, clip, update: (the module's outputs, gradient norm).

    `step_module(batch)` returns a tuple whose first element is the loss.
    """
    device = batch["input_ids"].device
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_bf16(dtype, device)):
        outputs = step_module(batch)
    outputs[0].backward()
    params = [p for group in optimizer.param_groups for p in group["params"]]
    grad_norm = nn.utils.clip_grad_norm_(params, max_grad_norm, foreach=True)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return outputs, grad_norm


# Sums kept per logging window (and all-reduced across processes), in this order.
STAT_NAMES = ("loss", "mlm_loss", "nsp_loss", "mlm_correct", "mlm_count", "nsp_correct", "nsp_count", "tokens", "steps")


def step_stats(outputs: tuple[Tensor, ...], batch: dict[str, Tensor]) -> Tensor:
    """STAT_NAMES sums for one step, as one float64 tensor on the model's device."""
    loss, mlm_loss, nsp_loss, mlm_logits, mlm_labels, nsp_logits = outputs
    mlm_correct = (mlm_logits.detach().argmax(-1) == mlm_labels).sum()
    nsp_correct = (nsp_logits.detach().argmax(-1) == batch["next_sentence_label"]).sum()
    values = [loss.detach(), mlm_loss.detach(), nsp_loss.detach(), mlm_correct, mlm_labels.new_tensor(mlm_labels.numel()),
              nsp_correct, mlm_labels.new_tensor(nsp_logits.shape[0]), batch["attention_mask"].sum(), loss.new_ones(())]
    return torch.stack([v.double() for v in values])


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


# ---- the trainer -------------------------------------------------------------------------------


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
        raise OptionError("out", f"{where} already holds a run ({taken[0]}): choose another folder, or continue "
                                 "the run with --resume")  # fmt: skip
    others = RunFolder(run_dir).foreign_files()
    if others:
        listed = ", ".join(others[:3]) + (", …" if len(others) > 3 else "")
        raise OptionError("out", f"{where} is a folder that holds other files ({listed}): a run needs a new or "
                                 "empty folder")  # fmt: skip


def resumable_step(run_dir: Path, steps: int) -> int:
    """The checkpoint step of a run of ours that `--resume` can continue to `steps`; OptionError if none."""
    where = f"out ({str(run_dir)!r})"
    status, step = read_status(run_dir), checkpoints.checkpoint_step(run_dir)
    if status is None or read_train_args(run_dir) is None or step is None:
        raise OptionError("resume", f"{where} holds no run to resume: --resume needs a run folder with status.json, "
                                    "train_args.json and a checkpoint (model.safetensors)")  # fmt: skip
    pid = status.get("pid")
    if status.get("state") == "running" and pid != os.getpid() and process_alive(pid):
        raise OptionError("resume", f"{where} is still training (pid {pid}): stop it before resuming")
    _check(step < steps, "steps", f"steps ({steps}) must be more than the {step} steps the run has already "
                                  "trained, to train it further")  # fmt: skip
    return step


class Trainer:
    """Pre-trains one BERT run. The constructor validates and prepares (writes nothing); `train()` runs.

    Args:
        args: the run's options.
        distributed: this process's rank among torchrun's processes (default: a single process).
        callbacks: TrainerCallback objects, called on rank 0 only.
        command: the command line, recorded in train_args.json.
        tokenizer: use this vocabulary instead of training one on the corpus.
        resume: continue the run in `args.out` from its checkpoint (weights, step, schedule, data order and,
            when optimizer.safetensors belongs to that step, AdamW's moments); its masking restarts.
    """

    def __init__(
        self, args: TrainingArguments, *, distributed: Distributed | None = None,
        callbacks: Sequence[TrainerCallback] = (), command: str | None = None,
        tokenizer: BertTokenizer | None = None, resume: bool = False,
    ):  # fmt: skip
        self.args, self.command, self.callbacks = args, command, list(callbacks)
        self.distributed = distributed or Distributed()
        self.device = resolve_device(args.device, self.distributed)
        self.run_dir = Path(args.out)
        self.resumed_from = resumable_step(self.run_dir, args.steps) if resume else None
        if self.distributed.is_main and not resume:
            check_run_dir(self.run_dir)
        documents = load_documents(args)
        self.probe = probe_pair(documents)
        torch.manual_seed(args.seed)  # the same initial weights in every process
        model = self._initial_model(documents, tokenizer)
        self._prepare_pairs(documents)
        self.model = model.to(self.device)
        self.optimizer = make_optimizer(self.model, args.lr, args.weight_decay)
        self._step_module = self._wrap_for_processes(PretrainingStep(self.model))
        torch.manual_seed(args.seed + self.distributed.rank)  # dropout differs between processes
        self.step, self.checkpoint_step, self.last_record, self.optimizer_restored = 0, None, None, False
        if resume:
            self._restore()
        self.started_at = self._loop_start = None
        self._stop_requested, self._metrics, self._eval_cache = False, None, None
        self._lr, self._grad_norm, self._first_loss, self._elapsed_before = 0.0, torch.zeros(()), None, 0.0
        self._reset_window()

    def _initial_model(self, documents: list[list[str]], tokenizer: BertTokenizer | None) -> Bert:
        """The run's own checkpoint (resuming), the --init model, or random weights and a vocabulary learnt here."""
        if self.resumed_from is not None:
            try:
                model, self.tokenizer = load_folder(self.run_dir)
            except (OSError, ValueError) as err:
                raise OptionError("resume", f"out ({str(self.run_dir)!r}): its checkpoint does not load: {err}") from None
        elif self.args.init:
            model, self.tokenizer = load_initial_model(self.args)
        else:
            self.tokenizer = tokenizer or train_tokenizer(documents, self.args.vocab_size, self.distributed)
            model = Bert(self.args.bert_config(self.tokenizer.vocab_size))
        self.config = model.config
        model.has_mlm_head = model.has_nsp_head = True  # the run trains both
        return model.train()

    def _restore(self) -> None:
        """Continue after the checkpoint: its step (so the schedule), the data order, AdamW's moments if saved."""
        self.step = self.checkpoint_step = self.resumed_from
        for _ in range(self.step):
            next(self._batches)
        self.optimizer_restored = checkpoints.load_optimizer_state(self.run_dir, self.model, self.optimizer, self.step)

    def _prepare_pairs(self, documents: list[list[str]]) -> None:
        args, dist = self.args, self.distributed
        try:
            pairs = make_nsp_pairs(documents, seed=args.seed)
            self.train_pairs, eval_pairs = split_train_eval(pairs, args.eval_fraction, args.seed)
        except ValueError as err:
            raise OptionError("corpus", f"corpus ({args.corpus!r}): {err}") from None
        self.eval_pairs = eval_pairs[: args.eval_pairs]
        self.collator = PretrainingCollator(self.tokenizer, args.seq_len, args.mask_prob)
        self._batches = batch_indices(len(self.train_pairs), args.batch_size, args.seed, dist.rank, dist.world_size)
        self._mask_generator = torch.Generator().manual_seed(args.seed * 1009 + 1 + dist.rank)

    def _wrap_for_processes(self, module: nn.Module) -> nn.Module:
        if not self.distributed.enabled:
            return module
        device_ids = [self.device.index] if self.device.type == "cuda" else None
        return nn.parallel.DistributedDataParallel(module, device_ids=device_ids)

    # ---- one step ------------------------------------------------------------------------------

    def next_batch(self) -> dict[str, Tensor]:
        """The next training batch of this process's shard, freshly masked."""
        pairs = [self.train_pairs[i] for i in next(self._batches)]
        return self.collator(pairs, self._mask_generator)

    def train_step(self, batch: dict[str, Tensor]) -> Tensor:
        """One optimizer step (warm-up/decay lr, clipping, AdamW); returns the STAT_NAMES sums."""
        self.step += 1
        self._lr = learning_rate(self.step, self.args.lr, self.args.warmup, self.args.steps)
        for group in self.optimizer.param_groups:
            group["lr"] = self._lr
        batch = {name: tensor.to(self.device, non_blocking=True) for name, tensor in batch.items()}
        self.model.train()
        outputs, self._grad_norm = optimizer_step(self._step_module, self.optimizer, batch, self.args.max_grad_norm,
                                                  self.args.dtype)  # fmt: skip
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

    @torch.no_grad()
    def evaluate(self) -> dict[str, float]:
        """Held-out MLM and NSP loss and accuracy (losses averaged over masked tokens and pairs)."""
        self.model.eval()
        sums = torch.zeros(4, dtype=torch.float64, device=self.device)  # mlm loss, nsp loss, then weights
        totals = torch.zeros(len(STAT_NAMES), dtype=torch.float64, device=self.device)
        for batch in self._eval_batches():
            with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=use_bf16(self.args.dtype, self.device)):
                stats = step_stats(PretrainingStep(self.model)(batch), batch)
            sums += torch.stack([stats[1] * stats[4], stats[2] * stats[6], stats[4], stats[6]])
            totals += stats
        self.model.train()
        mlm_loss, nsp_loss, mlm_count, nsp_count = sums.tolist()
        values = dict(zip(STAT_NAMES, totals.tolist(), strict=True))
        return {
            "eval_loss": mlm_loss / max(mlm_count, 1) + nsp_loss / max(nsp_count, 1),
            "eval_mlm_loss": mlm_loss / max(mlm_count, 1), "eval_nsp_loss": nsp_loss / max(nsp_count, 1),
            "eval_mlm_acc": values["mlm_correct"] / max(mlm_count, 1),
            "eval_nsp_acc": values["nsp_correct"] / max(nsp_count, 1), "eval_examples": int(nsp_count),
        }  # fmt: skip

    @torch.no_grad()
    def probe_attentions(self) -> tuple[Tensor, list[str], list[int]]:
        """Attention probabilities [L, H, T, T] (on the CPU) of the probe pair now, with its tokens and segment ids."""
        encoding = self.tokenizer.encode_pair(*self.probe, max_length=self.args.seq_len)
        inputs = {k: v.to(self.device) for k, v in encoding.to_tensors().items()}
        self.model.eval()
        trace = self.model.trace(**inputs)
        self.model.train()
        attentions = torch.stack([layer[0] for layer in trace.attentions]).float().cpu()
        return attentions, encoding.tokens, encoding.token_type_ids

    def save_snapshot(self) -> Path:
        attentions, tokens, token_type_ids = self.probe_attentions()
        predictions = None
        if self.model.has_mlm_head and self.model.has_nsp_head:
            predictions = probe_predictions(self.model, self.tokenizer, *self.probe, max_length=self.args.seq_len)
        return checkpoints.save_snapshot(self.run_dir, self.step, attentions, tokens, token_type_ids, self.probe,
                                         predictions)  # fmt: skip

    # ---- saving --------------------------------------------------------------------------------

    def weights_finite(self) -> bool:
        return all(bool(torch.isfinite(p).all()) for p in self.model.parameters())

    def save(self) -> bool:
        """Save the checkpoint (rank 0 writes); False, and nothing written, if the weights are not finite."""
        if not self.weights_finite():
            return False
        if self.distributed.is_main:
            checkpoints.save_checkpoint(self.run_dir, self.model, self.tokenizer, self.train_args(), step=self.step)
            checkpoints.save_optimizer_state(self.run_dir, self.model, self.optimizer, self.step)
        self.checkpoint_step = self.step
        return True

    def train_args(self) -> dict[str, Any]:
        """What train_args.json records: the options, the model config and how the run was started."""
        return {
            "args": self.args.to_dict(), "config": self.config.to_dict(), "command": self.command,
            "world_size": self.distributed.world_size, "device": str(self.device), "started_at": self.started_at,
            "num_train_pairs": len(self.train_pairs), "num_eval_pairs": len(self.eval_pairs),
            "num_parameters": self.model.num_parameters(), "probe": list(self.probe),
            "torch_version": torch.__version__,
            **({"resumed_from_step": self.resumed_from, "optimizer_restored": self.optimizer_restored}
               if self.resumed_from is not None else {}),
        }  # fmt: skip

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
            write_status(
                self.run_dir, state=state, message=message, step=self.step, total_steps=self.args.steps,
                checkpoint_step=self.checkpoint_step, started_at=self.started_at,
                eta_s=self.eta_s() if state == "running" else None, world_size=self.distributed.world_size,
            )  # fmt: skip

    def _open_run(self) -> None:
        self.run_dir.mkdir(parents=self.run_dir.parent == checkpoints_root(), exist_ok=True)
        remove_temporary_files(self.run_dir)
        self.started_at = time.time()
        if self.resumed_from is None:
            self.tokenizer.save_vocab(RunFolder(self.run_dir).vocab)
        else:
            RunFolder(self.run_dir).clear_stop()  # the stop that ended it before
            kept = keep_metrics_until(self.run_dir, self.resumed_from)  # the steps after it are trained again
            self._elapsed_before = max([r["elapsed_s"] for r in kept if _is_number(r.get("elapsed_s"))], default=0.0)
        atomic_write_json(RunFolder(self.run_dir).train_args, self.train_args())
        self._metrics = MetricsWriter(self.run_dir)
        self._write_status("running", "Starting: saving the initial weights and attention snapshot"
                           if self.resumed_from is None else f"Resuming from the checkpoint of step {self.step}")  # fmt: skip

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
            kept = f" (the checkpoint of step {self.checkpoint_step} is kept)" if self.checkpoint_step is not None else ""
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
        while self.step < self.args.steps:
            self._window += self.train_step(self.next_batch())
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
        self._window_start, self._overhead = time.perf_counter(), 0.0

    def elapsed_s(self) -> float:
        """Wall seconds since training began (0 before)."""
        return self._elapsed_before + (time.perf_counter() - self._loop_start if self._loop_start is not None else 0.0)

    def _log_train(self) -> dict[str, Any]:
        """The train line for the steps since the last one (summed over processes)."""
        values = dict(zip(STAT_NAMES, self.distributed.all_reduce_sum(self._window.clone()).tolist(), strict=True))
        seconds = max(time.perf_counter() - self._window_start - self._overhead, 1e-9)
        steps = max(values["steps"], 1.0)
        record = {
            "split": "train", "step": self.step, "loss": values["loss"] / steps,
            "mlm_loss": values["mlm_loss"] / steps, "nsp_loss": values["nsp_loss"] / steps,
            "mlm_acc": values["mlm_correct"] / max(values["mlm_count"], 1.0),
            "nsp_acc": values["nsp_correct"] / max(values["nsp_count"], 1.0), "lr": self._lr,
            "grad_norm": float(self._grad_norm), "tokens_per_s": values["tokens"] / seconds,
            "elapsed_s": self.elapsed_s(),
        }  # fmt: skip
        self._reset_window()
        self._emit(record)
        return record

    def _summary(self, text: str) -> str:
        evals = [r for r in [self.last_record] if r and r.get("split") == "eval"]
        if evals:
            text += f"; held-out MLM accuracy {evals[0]['eval_mlm_acc']:.1%}, NSP accuracy {evals[0]['eval_nsp_acc']:.1%}"
        return text + f"; checkpoint of step {self.checkpoint_step} saved"

    def _stopped(self) -> TrainResult:
        if self.checkpoint_step != self.step and not self.save():
            return self._diverged(self.last_record or {})
        return TrainResult("stopped", self.step, self._summary(f"Stopped at step {self.step} of {self.args.steps}"))

    def _diverged(self, record: dict[str, Any]) -> TrainResult:
        kept = (f"the checkpoint of step {self.checkpoint_step} is kept" if self.checkpoint_step is not None
                else "no checkpoint had been saved")  # fmt: skip
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
