"""The options of a training run, each declared once, and their checks.

Every `TrainingArguments` field that is an option says, in its metadata (see `option`): its help (the
CLI's --help and the form's tooltip), its label (the Train form and the run comparison), its form group,
and its bounds (`check`, one of CHECKS) or `choices`. The CLI (`train.build_parser`), the Train form
(`run_options.form_fields`) and the comparison labels (`run_options.labels`) are generated from it; the
model sizes are BertConfig's fields, declared the same way in `bertviz_lite.model.config`. Adding an option is
one field here (plus the code that uses it).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bertviz_lite.check.learner_model import LearnerSpec, parse_spec
from bertviz_lite.limits import amount, parameter_count
from bertviz_lite.loading.pretrained import MINILM, minilm_dir, resolve_source
from bertviz_lite.loading.run_folder import RunFolder, new_run_folder, validate_run_name
from bertviz_lite.model.config import BertConfig
from bertviz_lite.text.tokenization import MAX_POSITIONS, MIN_TRAIN_VOCAB_SIZE
from bertviz_lite.training.presets import PRESETS

CONFIG_OVERRIDES = tuple(
    f.name for f in dataclasses.fields(BertConfig) if f.name not in ("vocab_size", "pad_token_id")
)
DEVICES = ("auto", "cpu", "cuda")
DTYPES = ("auto", "fp32", "bf16")  # auto: bf16 autocast on CUDA, float32 on CPU
COMPILE_CHOICES = ("auto", "on", "off")  # auto: on on CUDA, off on CPU
COMPILE_MODES = (
    "auto",
    "default",
    "reduce-overhead",
)  # torch.compile's, and auto: reduce-overhead where it can
GROUPS = ("Run", "Model", "Data", "Optimisation", "Logging")  # the form's sections ("Run": its top row)
MAX_PARAMETERS = 350_000_000  # the largest model a run may train (loading allows limits.max_parameters())
MAX_TENSOR_ELEMENTS = 2**31  # the largest activation of one layer in one step (8 GiB in float32)
PRESET_DEFAULT = " (default: the preset's)"
# Upper bounds of the number options (declared on each field with `most=`): far above any run that makes sense,
# low enough that no later arithmetic (stories generated, tensors sized, steps counted) meets an absurd number.
MAX_STEPS = 10_000_000  # steps, warm-up and logging intervals (the base preset: 10,000)
MAX_DOCUMENTS = 100_000  # built-in stories: ~75 MB of text, generated in ~5 s (10**9 would be ~766 GB)
MAX_VOCAB_SIZE = 250_000  # a learned WordPiece vocabulary (BERT: 30,522; multilingual BERT: 119,547)
MAX_BATCH_SIZE = 2**20  # the tensor and memory checks refuse far smaller batches of any real model
MAX_EVAL_PAIRS = 100_000
MAX_SEQ_LEN = (
    4096  # as max_position_embeddings; the tokenizer's 512 and the model's positions come after, with reasons
)
MAX_LR = (
    1e30  # any finite rate costs the same work: a huge one diverges, and the trainer stops it (a test does)
)
MAX_SEED = 2**32 - 1  # what numpy's and Python's generators take whole


class OptionError(ValueError):
    """A bad training option; `option` is the TrainingArguments field (the CLI flag without dashes)."""

    def __init__(self, option: str, message: str):
        super().__init__(message)
        self.option = option


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """A finite int or float (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# The bounds an option may declare: what it accepts, and how a refusal reads after "<name> (<value>) ".
CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "count": (lambda v: _is_int(v) and v > 0, "must be a whole number greater than 0"),
    "count_or_zero": (lambda v: _is_int(v) and v >= 0, "must be a whole number, 0 or more"),
    "positive": (lambda v: is_number(v) and v > 0, "must be a number greater than 0"),
    "non_negative": (lambda v: is_number(v) and v >= 0, "must be a number, 0 or more"),
    "fraction": (lambda v: is_number(v) and 0 < v < 1, "must be between 0 and 1 (exclusive)"),
}
MINIMUMS = {
    "count": 1,
    "count_or_zero": 0,
    "positive": 0.0,
    "non_negative": 0.0,
    "fraction": 0.0,
}  # for the form


def option(
    default: Any,
    *,
    help: str,
    label: str,
    group: str | None,
    check: str | None = None,
    choices: tuple[str, ...] | None = None,
    step: float | None = None,
    most: float | None = None,
) -> Any:
    """A TrainingArguments field declared with everything the CLI, the form and the comparison show.

    Args:
        help: the --help text (and the form's tooltip); a None default adds "(default: the preset's)".
        label: the form's and the comparison table's name for it.
        group: the form section (one of GROUPS), or None to keep it off the form.
        check: a key of CHECKS (its lower bound and type); most: its upper bound; choices: the values allowed.
        step: the form's +/- step for a float.
    """
    if group is not None and group not in GROUPS:
        raise ValueError(f"group ({group!r}) must be one of {', '.join(GROUPS)}")
    if check is not None and check not in CHECKS:
        raise ValueError(f"check ({check!r}) must be one of {', '.join(CHECKS)}")
    if (check is None) != (most is None):
        raise ValueError("a number option declares both its check and its upper bound (most)")
    from_preset = default is None and group not in (None, "Run")
    metadata = {
        "help": help + (PRESET_DEFAULT if from_preset else ""),
        "label": label,
        "group": group,
        "check": check,
        "choices": choices,
        "step": step,
        "most": most,
    }
    return field(default=default, metadata=metadata)


def every(label: str, help: str, check: str = "count") -> Any:
    """A logging interval in steps (None: the preset's), declared as `option` declares any option."""
    return option(None, label=label, group="Logging", check=check, most=MAX_STEPS, help=help)


@dataclass
class TrainingArguments:
    """Every option of a run; None means "the preset's value". Validated on creation (OptionError)."""

    preset: str = option(
        "tiny",
        label="Preset",
        group="Run",
        choices=tuple(PRESETS),
        help=(
            "model sizes and training defaults: tiny (2 layers, 128 hidden, 2 heads), classroom (tiny, 800 steps: done "
            "within 2 minutes on 2 CPU cores, attention snapshot every 20 steps), small (4 layers, 256 hidden, 4 heads, "
            "1024 feed-forward), base (BERT-base sizes)"
        ),
    )
    corpus: str = option(
        "builtin",
        label="Corpus",
        group="Run",
        help=(
            "'builtin' (generated short stories), 'english' (WordNet's definitions and examples, 1.8 M words), "
            "'everyday' (prose and quotations from Debian packages, 1.1 M words), 'english+everyday' (both) or a UTF-8 "
            "text file: documents separated by blank lines"
        ),
    )
    num_documents: int = option(
        3000,
        label="Built-in stories",
        group="Data",
        check="count",
        most=MAX_DOCUMENTS,
        help="stories in the built-in corpus",
    )
    init: str | None = option(
        None,
        label="Start from",
        group="Run",
        help=(
            "continue pre-training from these weights: 'all-MiniLM-L6-v2', a checkpoint name or a BERT folder; its "
            "sizes and vocabulary are kept, missing MLM/NSP heads start fresh (random weights when not given)"
        ),
    )
    model_file: str | None = option(
        None,
        label="Your BERT",
        group="Run",
        help=(
            "train your own BERT instead of ours: FILE[:CLASS], the .py file of your model (the class is found by "
            "itself when it is named Bert, BERT, BertModel or BERTModel), built at the preset's sizes. MLM from its logits, NSP "
            "when it has an NSP head (else MLM only). Only the training process imports the file, under a time and a "
            "memory limit; the run saves its weights under your parameter names"
        ),
    )
    vocab_size: int | None = option(
        None,
        label="Vocabulary size",
        group="Data",
        check="count",
        most=MAX_VOCAB_SIZE,
        help="WordPiece vocabulary size, trained on the corpus at the start",
    )
    seq_len: int | None = option(
        None,
        label="Sequence length",
        group="Data",
        check="count",
        most=MAX_SEQ_LEN,
        help="maximum tokens of a sentence pair, [CLS] and [SEP]s included",
    )
    steps: int | None = option(
        None, label="Steps", group="Optimisation", check="count", most=MAX_STEPS, help="optimizer steps"
    )
    batch_size: int | None = option(
        None,
        label="Batch size",
        group="Optimisation",
        check="count",
        most=MAX_BATCH_SIZE,
        help="sentence pairs per step and per process",
    )
    lr: float | None = option(
        None,
        label="Learning rate",
        group="Optimisation",
        check="positive",
        step=1e-4,
        most=MAX_LR,
        help="peak learning rate of AdamW",
    )
    warmup: int | None = option(
        None,
        label="Warm-up steps",
        group="Optimisation",
        check="count_or_zero",
        most=MAX_STEPS,
        help="steps of linear warm-up, then linear decay to 0",
    )
    weight_decay: float = option(
        0.01,
        label="Weight decay",
        group="Optimisation",
        check="non_negative",
        step=0.01,
        most=10,
        help="AdamW weight decay (not on biases and LayerNorm)",
    )
    max_grad_norm: float = option(
        1.0,
        label="Gradient clipping",
        group="Optimisation",
        check="positive",
        step=0.1,
        most=1_000_000,
        help="clip the gradient norm to this",
    )
    mask_prob: float = option(
        0.15,
        label="Mask probability",
        group="Data",
        check="fraction",
        step=0.01,
        most=1.0,
        help="fraction of tokens chosen for masked-language modelling",
    )
    whole_word_mask: bool = option(
        False,
        label="Whole-word masking",
        group="Data",
        help=(
            "choose whole words for masked-language modelling: all WordPiece pieces of a chosen word are predicted "
            "together, so a piece cannot be filled in from the rest of its own word"
        ),
    )
    mask_repeats: bool = option(
        False,
        label="Mask repeated words",
        group="Data",
        help=(
            "a word chosen for masking is masked wherever it occurs in the sentence pair, so the answer is never "
            "visible elsewhere and copying a word of the input is never rewarded"
        ),
    )
    single_sentences: float = option(
        0.0,
        label="Lone sentences",
        group="Data",
        check="non_negative",
        step=0.05,
        most=1,
        help=(
            "share of the training pairs given as sentence A alone, for "
            "masked-language modelling only (no NSP question), as a user "
            "types one sentence"
        ),
    )
    copy_penalty: float = option(
        0.0,
        label="Copy penalty",
        group="Data",
        check="non_negative",
        step=0.1,
        most=100,
        help=(
            "weight of an unlikelihood loss on guessing a content word that is visible in "
            "the pair (needs mask_repeats): 0 for BERT's loss alone"
        ),
    )
    eval_fraction: float = option(
        0.05,
        label="Held-out fraction",
        group="Data",
        check="fraction",
        step=0.01,
        most=1.0,
        help="fraction of the sentence pairs held out for evaluation",
    )
    eval_pairs: int = option(
        512,
        label="Held-out pairs",
        group="Data",
        check="count",
        most=MAX_EVAL_PAIRS,
        help="evaluate on at most this many held-out pairs",
    )
    seed: int = option(
        0,
        label="Seed",
        group="Optimisation",
        check="count_or_zero",
        most=MAX_SEED,
        help=("random seed of the built-in corpus, the initial weights, the data order and the masking"),
    )
    device: str = option(
        "auto", label="Device", group="Run", choices=DEVICES, help="auto (CUDA if available), cpu or cuda"
    )
    dtype: str = option(
        "auto",
        label="Precision",
        group="Run",
        choices=DTYPES,
        help=(
            "auto (bf16 autocast on CUDA, float32 on CPU), fp32, or bf16 (on a CPU the step runs a bf16 copy of the "
            "weights and the optimizer updates the float32 model: 1.9-2x float32 where the CPU has AVX512-BF16 or "
            "AMX, many times slower where it has not)"
        ),
    )
    compile: str = option(
        "auto",
        label="Compile the step",
        group="Optimisation",
        choices=COMPILE_CHOICES,
        help=(
            "compile the training step with torch.compile, on shapes that stay the same from step to step (pairs "
            "padded to seq_len, the MLM head on a fixed number of rows): auto turns it on on CUDA, where the compiled "
            "step is faster, and off on the CPU, where compiling (a minute or more) costs more than a short run saves"
        ),
    )
    compile_mode: str = option(
        "auto",
        label="Compile mode",
        group="Optimisation",
        choices=COMPILE_MODES,
        help=(
            "torch.compile's mode for the compiled step: reduce-overhead replays each step as CUDA graphs, one launch "
            "instead of hundreds (BERT-base at 64 x 128 on an H200: 1.5x the default mode's tokens/s in "
            "bench/train_throughput.py, the same losses), for a step compiled on a CUDA GPU in one process only; "
            "auto picks it there and default elsewhere"
        ),
    )
    log_every: int | None = every("Log every", "write a metrics line every N steps")
    eval_every: int | None = every("Evaluate every", "evaluate on the held-out pairs every N steps")
    snapshot_every: int | None = every(
        "Attention snapshot every", "save the probe pair's attention maps every N steps"
    )
    save_every: int | None = every(
        "Save every", "save the checkpoint every N steps; 0: only at the end", "count_or_zero"
    )
    out: str | None = option(
        None,
        label="Run folder",
        group=None,
        help=(
            "run folder, e.g. checkpoints/NAME: a new or empty folder, or with --resume the run to continue "
            "(default: checkpoints/run-<date>-<time>)"
        ),
    )
    config: dict[str, Any] = field(default_factory=dict)  # BertConfig overrides, e.g. {"hidden_size": 64}

    def __post_init__(self) -> None:
        if self.preset not in PRESETS:  # before its values are read
            raise OptionError("preset", f"preset ({self.preset!r}) must be one of {', '.join(PRESETS)}")
        for name, value in PRESETS[self.preset].items():
            if name != "config" and getattr(self, name) is None:
                setattr(self, name, value)
        if self.out is None:
            self.out = str(new_run_folder().path)
        self.config = dict(self.config)
        _validate_arguments(self)
        if self.model_file:  # the full path: a run resumed from another folder finds the same file
            self.model_file = _absolute_model_file(self.model_file)
        if (
            self.init
        ):  # the model it continues is the one every budget reads: its positions and size checked now
            config = pretrained_config(self.init)
            _check_init_positions(self.init, config, self.seq_len)
            _check_model_size(config, self)
        else:
            self.bert_config(self.vocab_size)  # sizes that cannot build a model fail now, not after the data

    def model_config(self) -> BertConfig:
        """The config of the model this run trains: the one `init` names (its sizes and vocabulary), else
        the preset's sizes with the overrides. Every budget (memory, tensors, disk, parameters) is read from it."""
        return pretrained_config(self.init) if self.init else self.bert_config(self.vocab_size)

    def bert_config(self, vocab_size: int) -> BertConfig:
        """The model's config: the preset's sizes, then the overrides, with this vocabulary size."""
        unknown = sorted(set(self.config) - set(CONFIG_OVERRIDES))
        if unknown:
            raise OptionError("config", f"config has unknown field(s) {', '.join(unknown)}")
        values = {
            **PRESETS[self.preset]["config"],
            **self.config,
            "vocab_size": vocab_size,
            "pad_token_id": 0,
        }
        try:
            config = BertConfig(**values)
        except (TypeError, ValueError) as err:
            raise OptionError(_field_named_in(str(err)), str(err)) from None
        _check_model_bounds(config)
        if config.max_position_embeddings < self.seq_len:
            raise OptionError(
                "seq_len",
                f"seq_len ({self.seq_len}) must be at most max_position_embeddings "
                f"({config.max_position_embeddings})",
            )
        _check_seq_len_limit(self.seq_len)
        if config.type_vocab_size < 2:
            raise OptionError(
                "type_vocab_size",
                f"type_vocab_size ({config.type_vocab_size}) must be at least 2: "
                "sentence pairs use segments 0 and 1",
            )
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


def _validate_arguments(args: TrainingArguments) -> None:
    """Raise OptionError naming the first option whose value cannot start a run."""
    for spec in option_fields(type(args)):
        _check_declared(spec, getattr(args, spec.name))
    _check(args.seq_len >= 8, "seq_len", f"seq_len ({args.seq_len}) must be at least 8 tokens")
    _check(
        isinstance(args.corpus, str) and bool(args.corpus.strip()),
        "corpus",
        "corpus is empty: give 'builtin', 'english', 'everyday' or the path of a UTF-8 text file",
    )
    _check(
        args.init is None or (isinstance(args.init, str) and bool(args.init.strip())),
        "init",
        "init is empty: give a model name such as 'all-MiniLM-L6-v2' or a model folder",
    )
    _check(
        args.init is None or not args.config,
        "config",
        f"config overrides ({', '.join(sorted(args.config))}) cannot be used with init: the pretrained "
        "model fixes its sizes",
    )
    _validate_model_file(args)
    _check(
        args.single_sentences < 1,
        "single_sentences",
        f"single_sentences ({args.single_sentences}) must be below 1: NSP needs some pairs",
    )
    _check(
        not args.copy_penalty or args.mask_repeats,
        "copy_penalty",
        f"copy_penalty ({args.copy_penalty}) needs mask_repeats: the penalty is on words the pair shows",
    )
    _validate_sizes(args)
    _validate_out(args.out)


def _absolute_model_file(text: str) -> str:
    spec = parse_spec(text)  # _validate_model_file accepted it
    return str(LearnerSpec(spec.file.resolve(), spec.class_name))


def _validate_model_file(args: TrainingArguments) -> None:
    """A learner's model: a .py file that exists (read by the training process alone), never with `init`."""
    if args.model_file is None:
        return
    try:
        spec = parse_spec(args.model_file)
    except ValueError as err:
        raise OptionError("model_file", f"model_file: {err}") from None
    _check(
        spec.file.is_file(),
        "model_file",
        f"model_file ({shown(args.model_file)}): there is no such file",
    )
    _check(
        args.init is None,
        "model_file",
        f"model_file cannot be used with init ({args.init!r}): your model starts from its own random weights",
    )


def _check_declared(spec: dataclasses.Field, value: Any) -> None:
    """The bounds (`check` and `most`) or `choices` a field declares."""
    name = spec.name
    check = spec.metadata.get("check")
    choices = spec.metadata.get("choices")
    if check is not None:
        accepts, requirement = CHECKS[check]
        _check(accepts(value), name, f"{name} ({shown(value)}) {requirement}")
    most = spec.metadata.get("most")
    if most is not None:
        _check(value <= most, name, f"{name} ({shown(value)}) must be at most {most:,}")
    if choices is not None:
        _check(value in choices, name, f"{name} ({shown(value)}) must be one of {', '.join(choices)}")


def shown(value: Any, limit: int = 40) -> str:
    """A value as a refusal quotes it: a 5,000-digit number or a long text cut (int's repr refuses past 4,300 digits)."""
    if _is_int(value) and abs(value) >= 10**limit:
        return f"a number of more than {limit} digits"
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def _validate_sizes(args: TrainingArguments) -> None:
    """Checks of sizes the data and the tokenizer need, made before anything is built."""
    _check(
        args.vocab_size >= MIN_TRAIN_VOCAB_SIZE,
        "vocab_size",
        f"vocab_size ({args.vocab_size}) must be at least {MIN_TRAIN_VOCAB_SIZE}",
    )
    _check(
        args.num_documents >= 2,
        "num_documents",
        f"num_documents ({args.num_documents}) must be at least 2: next-sentence pairs need 2 stories",
    )


def _check_seq_len_limit(seq_len: int) -> None:
    _check(
        seq_len <= MAX_POSITIONS,
        "seq_len",
        f"seq_len ({seq_len}) must be at most {MAX_POSITIONS}, "
        "the longest sentence pair the tokenizer builds",
    )


def _check_init_positions(init: str, config: BertConfig, seq_len: int) -> None:
    """seq_len must fit the positions of the pretrained model a run starts from (its config.json's)."""
    positions = config.max_position_embeddings
    _check(
        seq_len <= positions,
        "seq_len",
        f"seq_len ({seq_len}) must be at most {positions}, the positions of the pretrained model {init!r}",
    )
    _check_seq_len_limit(seq_len)


def pretrained_config(source: str) -> BertConfig:
    """The config of the model `--init` names, read from its config.json without loading the weights."""
    try:
        folder = minilm_dir() if source == MINILM else resolve_source(source)
        return BertConfig.from_json_file(RunFolder(folder).config)
    except (OSError, ValueError) as err:
        raise OptionError("init", f"init ({source!r}): {err}") from None


def _check_model_bounds(config: BertConfig) -> None:
    """The upper bound each model size a run may override declares (`most` on BertConfig's field)."""
    for spec in dataclasses.fields(BertConfig):
        most = spec.metadata.get("most")
        if most is not None and spec.name in CONFIG_OVERRIDES:
            value = getattr(config, spec.name)
            _check(value <= most, spec.name, f"{spec.name} ({shown(value)}) must be at most {most:,}")


def _check_model_size(config: BertConfig, args: TrainingArguments) -> None:
    """Refuse a model above MAX_PARAMETERS, or a step whose largest activation could not be allocated."""
    count = parameter_count(config)
    if count > MAX_PARAMETERS and args.init:
        raise OptionError(
            "init",
            f"init ({args.init!r}) is a model of about {amount(count)} parameters; training "
            f"allows at most {amount(MAX_PARAMETERS)} (BERT-large has 340 M)",
        )
    if count > MAX_PARAMETERS:
        preset = {**PRESETS[args.preset]["config"], "vocab_size": PRESETS[args.preset]["vocab_size"]}
        option = max(
            (
                "hidden_size",
                "intermediate_size",
                "num_hidden_layers",
                "max_position_embeddings",
                "vocab_size",
            ),
            key=lambda name: getattr(config, name) / preset[name],
        )
        raise OptionError(
            option,
            f"{option} ({getattr(config, option)}) makes a model of about {amount(count)} "
            f"parameters; training allows at most {amount(MAX_PARAMETERS)} (BERT-large has 340 M)",
        )
    widest = max(config.num_attention_heads * args.seq_len, config.intermediate_size)
    elements = args.batch_size * args.seq_len * widest
    _check(
        elements <= MAX_TENSOR_ELEMENTS,
        "batch_size",
        f"batch_size ({args.batch_size}) × seq_len ({args.seq_len}) × {widest} (attention scores or feed-forward "
        f"width) is {elements:,} numbers in one layer's activations, more than {MAX_TENSOR_ELEMENTS:,}: use a "
        "smaller batch size or sequence length",
    )


def _validate_out(out: str) -> None:
    """The run folder's name must be safe, and the path may not climb out with '..'."""
    path = Path(out)
    _check(".." not in path.parts, "out", f"out ({out!r}) must not contain '..'")
    try:
        validate_run_name(path.name)
    except ValueError as err:
        raise OptionError("out", f"out ({out!r}): {err}") from None


def option_fields(arguments: type | None = None) -> list[dataclasses.Field]:
    """The declared options of TrainingArguments (or a subclass), in order; `config` is not one."""
    return [spec for spec in dataclasses.fields(arguments or TrainingArguments) if "help" in spec.metadata]
