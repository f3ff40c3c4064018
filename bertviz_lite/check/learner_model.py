"""A learner's own BERT as our trainer drives it: MLM from their logits, NSP where their model has an NSP head, and
their attention probabilities read through the checker's hooks.

Their file is imported only by a process that exists for it: the checker's worker, or a training process started with
`python -m bertviz_lite.train --model-file FILE[:CLASS]` (`load_learner` applies the worker's limits there). The app
never imports it. Shapes: B batch, T tokens, V vocabulary, nh heads, L layers.
"""

from __future__ import annotations

import resource
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from bertviz_lite.check.capture import StageHooks, first_tensor, observe, owner, param_infos
from bertviz_lite.check.learner import CannotBuild, build, find_class, load_file
from bertviz_lite.check.mapping import Mapping, map_parameters
from bertviz_lite.check.reference import our_shapes
from bertviz_lite.check.sandbox import MEMORY_LIMIT_BYTES, TIME_LIMIT_S
from bertviz_lite.check.worker import TimeLimit, call, check_sizes, last_frame, materialize, sizes_of
from bertviz_lite.model.config import BertConfig
from bertviz_lite.model.loss_rows import labelled_mean_loss, labelled_positions
from bertviz_lite.model.outputs import PretrainingOutput

NSP_WEIGHT = (
    "cls.seq_relationship.weight"  # our NSP classifier: the module of theirs that holds it is their NSP head
)


class LearnerError(ValueError):
    """Their model cannot be trained: one sentence for them (their traceback's last frame where it is their code)."""


@dataclass(frozen=True)
class LearnerSpec:
    """Which model of theirs: a .py file and, when it is not found by itself, the class (`FILE[:CLASS]`)."""

    file: Path
    class_name: str | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.class_name}" if self.class_name else str(self.file)

    @property
    def name(self) -> str:
        """How a sentence names it: "Bert in bert.py"."""
        return f"{self.class_name or 'the model'} in {self.file.name}"


def parse_spec(text: str) -> LearnerSpec:
    """`FILE[:CLASS]` as typed (`my_bert/bert.py`, `bert.py:BERTLM`); ValueError with one sentence when it cannot be."""
    text = (text or "").strip()
    path, _, class_name = text.rpartition(":") if text.rpartition(":")[2].isidentifier() else (text, "", "")
    if not path.endswith(".py"):
        raise ValueError(
            f"give your model's .py file, optionally with its class as FILE:CLASS (got {text[:80]!r})"
        )
    return LearnerSpec(Path(path).expanduser(), class_name or None)


@dataclass(frozen=True)
class LearnerTrace:
    """What one pass of their model gave: per layer the attention probabilities (B, nh, T, T), where their
    attention exposes them (else empty), the MLM logits (B, T, V) and the NSP logits (B, 2) or None."""

    attentions: tuple[Tensor, ...]
    mlm_logits: Tensor
    nsp_logits: Tensor | None


class LearnerForPreTraining(nn.Module):
    """Their module (`self.learner`, parameters under their own names) with the methods the trainer calls.

    Their forward takes `(input_ids, token_type_ids)` (or `input_ids` alone) and finds padding itself (id 0, which
    our tokenizer pads with), or takes it by a usual name (`attention_mask`, `valid_lens`), made from the ids as the
    checker makes it (worker.call).
    """

    def __init__(
        self, learner: nn.Module, config: BertConfig, mapping: Mapping, spec: LearnerSpec, sha256: str
    ):
        super().__init__()
        self.learner = learner
        self.config = config
        self.mapping = mapping
        self.spec = spec
        self.sha256 = sha256
        self.nsp_in_output = False  # their forward returns the NSP logits beside the MLM logits
        self.nsp_module: str | None = None  # else the path of their module that gives them
        self.has_mlm_head = True
        self.exposes_attention = False

    @property
    def has_nsp_head(self) -> bool:
        return self.nsp_in_output or self.nsp_module is not None

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def heads(self, input_ids: Tensor, token_type_ids: Tensor) -> tuple[Tensor, Tensor | None]:
        """Their MLM logits (B, T, V) and NSP logits (B, 2) or None, from one forward pass of theirs."""
        caught: dict[str, Tensor] = {}
        handle = None
        if self.nsp_module is not None:
            module = dict(self.learner.named_modules())[self.nsp_module]
            handle = module.register_forward_hook(
                lambda _m, _i, out: caught.setdefault("nsp", first_tensor(out, 2))
            )
        try:
            output = call(self.learner, "model", {"input_ids": input_ids, "token_type_ids": token_type_ids})
        finally:
            if handle is not None:
                handle.remove()
        logits = first_tensor(output, self.config.vocab_size)
        if logits is None or logits.dim() != 3:
            raise LearnerError(
                f"{self.spec.name} returned no MLM logits (B, T, vocab_size), which the trainer needs: if another "
                "class of the file adds the MLM head, give it as FILE:CLASS"
            )
        nsp = _nsp_logits(output, input_ids.shape[0]) if self.nsp_in_output else caught.get("nsp")
        return logits, nsp

    def pretraining_loss(
        self,
        input_ids: Tensor,
        token_type_ids: Tensor,
        attention_mask: Tensor,
        labels: Tensor,
        next_sentence_label: Tensor,
        *,
        mlm_positions: Tensor | None = None,
        padded: bool | None = None,
    ) -> PretrainingOutput:
        """MLM loss from their logits at the labelled positions, plus NSP loss where they have an NSP head (else 0).

        The rows as `BertForPreTraining.pretraining_loss` takes them (mlm_positions, by default found here); their
        model takes no attention mask, so `padded` changes nothing."""
        logits, nsp_logits = self.heads(input_ids, token_type_ids)
        if mlm_positions is None:
            mlm_positions = labelled_positions(labels).to(labels.device)
        mlm_labels = labels.reshape(-1)[mlm_positions]  # (K,): -100 after the labelled ones
        mlm_logits = logits.reshape(-1, logits.shape[-1])[mlm_positions]  # (K, V)
        # log-probabilities (a LogSoftmax head) give the same loss: log_softmax keeps them
        mlm_loss = labelled_mean_loss(mlm_logits, mlm_labels)
        if nsp_logits is None:
            nsp_logits = logits.new_zeros(input_ids.shape[0], 2)
            nsp_loss = mlm_loss.new_zeros(())
        else:
            nsp_loss = labelled_mean_loss(nsp_logits, next_sentence_label)
        return PretrainingOutput(mlm_loss + nsp_loss, mlm_loss, nsp_loss, mlm_logits, mlm_labels, nsp_logits)

    def mlm_logits(self, input_ids: Tensor, token_type_ids: Tensor | None = None, **_masks: Any) -> Tensor:
        """Their MLM logits (B, T, V), as `BertForPreTraining.mlm_logits` gives ours (the snapshots' predictions)."""
        return self.heads(input_ids, _segments(input_ids, token_type_ids))[0]

    def next_sentence_logits(
        self, input_ids: Tensor, token_type_ids: Tensor | None = None, attention_mask: Tensor | None = None
    ) -> Tensor:
        """Their NSP logits (B, 2); LearnerError for a model without an NSP head."""
        nsp = self.heads(input_ids, _segments(input_ids, token_type_ids))[1]
        if nsp is None:
            raise LearnerError(f"{self.spec.name} has no NSP head")
        return nsp

    @torch.no_grad()
    def trace(
        self, input_ids: Tensor, token_type_ids: Tensor | None = None, attention_mask: Tensor | None = None
    ) -> LearnerTrace:
        """One pass with the checker's hooks on: their attention probabilities per layer, where exposed."""
        sizes = asdict(self.config)
        hooks = StageHooks(self.learner, self.mapping, sizes)
        hooks.install()
        fast = torch.backends.mha.get_fastpath_enabled()
        torch.backends.mha.set_fastpath_enabled(
            False
        )  # nn.TransformerEncoderLayer's fused kernel hides its modules
        try:
            logits, nsp = self.heads(input_ids, _segments(input_ids, token_type_ids))
            hooks.exposed(batch=input_ids.shape[0])
        finally:
            hooks.remove()
            torch.backends.mha.set_fastpath_enabled(fast)
        probs = [
            hooks.captured.get(f"layer.{i}.attention.probs") for i in range(self.config.num_hidden_layers)
        ]
        per_head = all(
            p is not None and p.dim() == 4 for p in probs
        )  # nn.MultiheadAttention's average: no heads
        return LearnerTrace(tuple(probs) if per_head else (), logits.detach(), nsp)

    def learner_state_dict(self) -> dict[str, Tensor]:
        """Their parameters and buffers under their own names, on the CPU, each its own copy (tied ones too)."""
        return {
            name: (value.detach().float() if value.is_floating_point() else value.detach()).cpu().clone()
            for name, value in self.learner.state_dict().items()
        }

    def load_learner_state_dict(self, tensors: dict[str, Tensor]) -> None:
        """Their saved weights back; LearnerError naming what does not fit (a file changed in its parameters)."""
        result = self.learner.load_state_dict(tensors, strict=False)
        wrong = [*result.missing_keys, *result.unexpected_keys]
        if wrong:
            raise LearnerError(
                f"the saved weights do not fit {self.spec.name} ({', '.join(wrong[:3])}): it is not the model "
                "that trained them"
            )


def _segments(input_ids: Tensor, token_type_ids: Tensor | None) -> Tensor:
    return torch.zeros_like(input_ids) if token_type_ids is None else token_type_ids


def _nsp_logits(output: Any, batch: int) -> Tensor | None:
    """(B, 2) NSP logits their forward returns beside the MLM logits (BERTLM's `return nsp, mlm`)."""
    nsp = first_tensor(output, 2)
    return nsp if nsp is not None and nsp.dim() == 2 and nsp.shape[0] == batch else None


# ---- loading their model in this process, under the checker's limits --------------------------------------------


def memory_limit(config: BertConfig, batch_size: int, seq_len: int) -> int:
    """The address space a training process of theirs may take: the checker's worker's, plus their training's needs
    counted four times (their model may keep more than ours does)."""
    from bertviz_lite.limits import training_memory_bytes

    return MEMORY_LIMIT_BYTES + 4 * training_memory_bytes(config, batch_size, seq_len)


def apply_memory_limit(limit: int) -> None:
    """RLIMIT_AS on this process, as the checker's worker has it: an allocation past it is a MemoryError."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """TimeLimit raised in this (main) thread when the block runs past `seconds`."""

    def on_alarm(_signum, _frame):
        raise TimeLimit()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def load_learner(spec: LearnerSpec, config: BertConfig, sha256: str, seconds: float = TIME_LIMIT_S):
    """Their model built at `config`'s sizes in this process (loaded, built, one trial pass, mapped), in `seconds`.

    LearnerError with one sentence for whatever goes wrong: a file that cannot be loaded or built, sizes it does
    not take, no MLM logits, or their code raising, looping or allocating past the limit (its last frame named).
    """
    ours = our_shapes(config)  # our side first: the time limit is theirs alone
    try:
        with time_limit(seconds):
            return _built(spec, config, sha256, ours)
    except (LearnerError, CannotBuild) as error:  # the checker's "--class NAME" is FILE:CLASS here
        raise LearnerError(str(error).replace("with --class NAME", "as FILE:CLASS")) from None
    except BaseException as error:  # noqa: BLE001 - whatever their code raises is said in a sentence
        if isinstance(error, KeyboardInterrupt):
            raise
        raise LearnerError(_failure(spec, error, seconds)) from None


def _failure(spec: LearnerSpec, error: BaseException, seconds: float) -> str:
    where = last_frame(error, str(spec.file.resolve().parent))
    at = f" (last frame: {where})" if where else ""
    if isinstance(error, TimeLimit):
        return f"{spec.name} ran past the time limit ({seconds:g} s) while it was loaded, built and tried{at}"
    if isinstance(error, MemoryError) or ("memory" in str(error).lower() and "alloc" in str(error).lower()):
        return f"{spec.name} asked for more memory than the limit allows while it was loaded, built and tried{at}"
    return f"{spec.name} raised {type(error).__name__}: {str(error)[:300]} while it was loaded, built and tried{at}"


def _built(
    spec: LearnerSpec, config: BertConfig, sha256: str, ours: dict[str, tuple[int, ...]]
) -> LearnerForPreTraining:
    if not spec.file.is_file():
        raise LearnerError(f"there is no file {spec.file}")
    sizes = asdict(config)
    module = load_file(spec.file.resolve())
    cls = find_class(module, spec.class_name)
    spec = LearnerSpec(spec.file, cls.__name__)
    learner = build(module, cls, sizes)
    ids, segments = trial_inputs(config)
    materialize(learner, "model", _inputs(ids, segments))
    check_sizes(param_infos(learner), "model", sizes)
    outputs: list[Any] = []
    observed = observe(learner.eval(), lambda: outputs.append(call(learner, "model", _inputs(ids, segments))))
    mapping = map_parameters(param_infos(learner, observed), ours, sizes_of(sizes))
    model = LearnerForPreTraining(learner.train(), config, mapping, spec, sha256)
    model.nsp_in_output = _nsp_logits(outputs[0], ids.shape[0]) is not None
    if not model.nsp_in_output:
        model.nsp_module = owner(learner, mapping, NSP_WEIGHT)[0]
    trace = model.trace(ids, segments)  # MLM logits checked here, before any step
    model.exposes_attention = bool(trace.attentions)
    return model


def _inputs(ids: Tensor, segments: Tensor) -> dict[str, Tensor]:
    return {"input_ids": ids, "token_type_ids": segments}


def trial_inputs(config: BertConfig) -> tuple[Tensor, Tensor]:
    """Two short padded pairs: (input_ids, token_type_ids), each (2, 8), ids 5 and up, padding 0 at the end."""
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(5, config.vocab_size, (2, 8), generator=generator)
    ids[1, 6:] = 0
    segments = torch.zeros_like(ids)
    segments[:, 4:] = 1
    segments[1, 6:] = 0
    return ids, segments
