"""The options of a training run as a form shows them: one flat dict per preset, checked, turned into CLI flags.

A flat dict holds every declared `TrainingArguments` option except `out`, plus every BertConfig field
the CLI overrides (`CONFIG_OVERRIDES`). Labels, help, form sections and steps are read from the fields'
declarations (`training_args.option`, `config._size`) at call time, so a new option appears everywhere.
`check_options` builds the real `TrainingArguments` from it, so
the form refuses exactly what the CLI refuses, with the trainer's message; `check_training_pairs` asks the
trainer's batch check with the number of pairs the chosen corpus will give, without building them.
"""

from __future__ import annotations

import dataclasses
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

import torch

from bertviz_lite.check.learner_model import parse_spec
from bertviz_lite.limits import (
    MAX_CORPUS_CHARS,
    MAX_SNAPSHOTS,
    amount,
    check_text,
    check_training_budget,
    parameter_count,
)
from bertviz_lite.model.config import BertConfig
from bertviz_lite.text.pretraining_data import builtin_corpus, documents_from_text, read_corpus
from bertviz_lite.training import training_args
from bertviz_lite.training.compiled_step import check_compile_mode
from bertviz_lite.training.dataset import check_batch_size
from bertviz_lite.training.distributed import device_type
from bertviz_lite.training.optimization import BF16_EMULATED, bf16_emulated
from bertviz_lite.training.training_args import (
    CONFIG_OVERRIDES,
    OptionError,
    TrainingArguments,
    option_fields,
)

MAX_CORPUS_BYTES = 5_000_000
ENGLISH_SENTENCES = 160_236  # sentences of corpora/english.txt.gz (a test counts them)
NAMED_CORPUS_SENTENCES = {"english": ENGLISH_SENTENCES, "everyday": 96_870}  # everyday.txt.gz's, counted too
FEWEST_STORY_SENTENCES = 4  # every built-in story has 4 to 8 sentences (a test checks it)
MAX_COUNTED_STORIES = 100_000  # the form generates at most this many stories (~5 s) to count their sentences
MODEL_FIELDS = CONFIG_OVERRIDES
# Continued pre-training above this learning rate usually wipes out what the pretrained model knows.
CONTINUED_PRETRAINING_MAX_LR = 5e-4
SLOW_ON_CPU_PRESETS = ("base",)  # presets that take hours without a GPU


def training_fields() -> tuple[str, ...]:
    """The run options a form holds: every declared TrainingArguments option but `out`."""
    return tuple(spec.name for spec in option_fields() if spec.name != "out")


def _declarations() -> dict[str, dataclasses.Field]:
    """Every option's field, the run options' then the model sizes'."""
    model = {spec.name: spec for spec in dataclasses.fields(BertConfig) if spec.name in MODEL_FIELDS}
    return {**{spec.name: spec for spec in option_fields()}, **model}


def labels() -> dict[str, str]:
    """The form's and the run comparison's name of every option."""
    return {name: spec.metadata["label"] for name, spec in _declarations().items()}


def option_help() -> dict[str, str]:
    """Each option's help: the words of the CLI's --help (both come from the declarations)."""
    return {name: spec.metadata["help"] for name, spec in _declarations().items()}


def form_fields(group: str) -> tuple[str, ...]:
    """The options of one form section (`training_args.GROUPS`), in declaration order."""
    return tuple(name for name, spec in _declarations().items() if spec.metadata["group"] == group)


def float_step(name: str) -> float | None:
    """The +/- step the form gives a float option (None: the form's default)."""
    return _declarations()[name].metadata.get("step")


def choices(name: str) -> tuple[str, ...] | None:
    """The values an option allows, when it declares them."""
    return _declarations()[name].metadata.get("choices")


def preset_options(preset: str) -> dict[str, Any]:
    """Every option with the value the preset gives it (or the CLI default where the preset is silent)."""
    args = training_args.TrainingArguments(preset=preset, out="preview")
    config = args.bert_config(args.vocab_size)
    values = {name: getattr(args, name) for name in training_fields()}
    return {**values, **{name: getattr(config, name) for name in MODEL_FIELDS}}


def check_options(options: dict[str, Any], out: str = "preview") -> TrainingArguments:
    """The TrainingArguments of a flat options dict; OptionError (a ValueError naming the option) if refused."""
    fields = training_fields()
    training = {k: v for k, v in options.items() if k in fields}
    config = {k: v for k, v in options.items() if k in MODEL_FIELDS}
    unknown = sorted(set(options) - set(fields) - set(MODEL_FIELDS))
    if unknown:
        raise OptionError(unknown[0], f"unknown option(s): {', '.join(unknown)}")
    return training_args.TrainingArguments(**training, config=config, out=out)


def form_option_names(from_model: bool) -> tuple[str, ...]:
    """The options the form sends: training fields, and model sizes unless it starts from a model."""
    return (*training_fields(), *(() if from_model else MODEL_FIELDS))


def check_form(options: dict[str, Any], corpus: tuple[int, int] | None = None) -> TrainingArguments:
    """check_options, then check_training_pairs: the arguments, or OptionError led by the option's label.

    `corpus`: (documents, sentences) of a user's text, as for check_training_pairs.
    """
    try:
        args = check_options(options)
        check_training_pairs(options, corpus)
        check_budget(args)  # after the corpus: "more than the pairs of the corpus" is the plainer reason
        # where a run started here trains, in one process (a device it cannot have is the device option's message)
        check_compile_mode(args, torch.device(device_type(args.device)), processes=1)
    except OptionError as err:
        label = labels().get(err.option)
        raise OptionError(err.option, f"{label}: {err}" if label else str(err)) from None
    return args


def declared_options(options: dict[str, Any]) -> dict[str, Any]:
    """The options a TrainingArguments holds (a launch also passes `threads`, a CLI-only flag)."""
    return {k: v for k, v in options.items() if k in training_fields() or k in MODEL_FIELDS}


def check_budget(args: TrainingArguments) -> None:
    """OptionError (on the batch size) when the run passes the server's memory or steps × batch limits.

    A run continued from pretrained weights (`init`) is estimated with that model's sizes and vocabulary.
    """
    config = args.model_config()
    try:
        check_training_budget(config, args.batch_size, args.seq_len, args.steps)
    except ValueError as err:
        raise OptionError("batch_size", str(err)) from None
    snapshots = args.steps // args.snapshot_every + 1 if args.snapshot_every else 0
    if snapshots > MAX_SNAPSHOTS:
        raise OptionError(
            "snapshot_every",
            f"{amount(args.steps)} steps with a snapshot every {args.snapshot_every} "
            f"make {amount(snapshots)} snapshots; a run started here may keep at most {MAX_SNAPSHOTS}: "
            f"take one every {-(-args.steps // (MAX_SNAPSHOTS - 1))} steps or more",
        )


def disk_estimate(args: TrainingArguments) -> int:
    """Bytes a run's folder will hold, about: float32 weights and AdamW's two moments (12 bytes a parameter)."""
    return 12 * parameter_count(args.model_config())


def command_options(args: TrainingArguments) -> dict[str, Any]:
    """The flat options to put on the command line: training fields, then model overrides, out excluded."""
    values = {name: getattr(args, name) for name in training_fields()}
    return {**values, **args.config}


def model_size(options: dict[str, Any]) -> int:
    """Parameters of the model these options build (embeddings, encoder, heads), for the form's summary."""
    config = BertConfig(
        **{k: options[k] for k in MODEL_FIELDS if k in options}, vocab_size=options["vocab_size"]
    )
    return parameter_count(config)


def train_pair_count(num_pairs: int, eval_fraction: float) -> int:
    """How many of `num_pairs` sentence pairs `data.split_train_eval` keeps for training."""
    return num_pairs - min(num_pairs - 1, max(1, round(num_pairs * eval_fraction)))


@lru_cache(maxsize=8)
def builtin_sentences(seed: int, num_documents: int) -> int:
    """Sentences of the built-in corpus (the trainer makes one pair per sentence)."""
    return sum(len(story) for story in builtin_corpus(seed=seed, num_documents=num_documents))


def check_training_pairs(options: dict[str, Any], corpus: tuple[int, int] | None = None) -> None:
    """OptionError if the corpus cannot give the pairs a batch needs, as the trainer would refuse it.

    `corpus`: (documents, sentences) of a user's text, from `corpus_summary` (then options["corpus"] is not
    read); without it, the built-in, English or everyday corpus that options["corpus"] names (a file is not read here).
    """
    if corpus is not None:
        _check_documents(corpus[0])
        sentences = corpus[1]
    elif options["corpus"] in NAMED_CORPUS_SENTENCES:
        sentences = NAMED_CORPUS_SENTENCES[options["corpus"]]
    elif options["corpus"] == "builtin":
        sentences = _builtin_sentences_needed(options)
    else:
        sentences = None  # a corpus file is read by the trainer only
    if sentences is not None:
        check_batch_size(options["batch_size"], train_pair_count(sentences, options["eval_fraction"]))


def _check_documents(documents: int) -> None:
    if documents < 2:
        raise OptionError(
            "corpus",
            f"The corpus has {documents} document: next-sentence pairs need at least 2 "
            "(separate documents with a blank line)",
        )


def _builtin_sentences_needed(options: dict[str, Any]) -> int | None:
    """The built-in corpus's sentences; a lower bound when that suffices; None past MAX_COUNTED_STORIES."""
    fewest = FEWEST_STORY_SENTENCES * options["num_documents"]
    if options["batch_size"] <= train_pair_count(fewest, options["eval_fraction"]):
        return fewest  # enough pairs whatever the stories' lengths: none generated
    if options["num_documents"] > MAX_COUNTED_STORIES:
        return None  # too many to generate on each rerun of the form: the trainer checks it at the start
    return builtin_sentences(options["seed"], options["num_documents"])


def cuda_unavailable_reason() -> str | None:
    """Why `--device cuda` cannot work here, or None when a CUDA GPU is usable."""
    if torch.cuda.is_available():
        return None
    if torch.version.cuda is None:
        return "this PyTorch build has no CUDA support (it is the CPU build)"
    return "PyTorch finds no usable CUDA GPU on this machine"


def corpus_summary(data: bytes | str, file_name: str | None = None) -> tuple[int, int]:
    """(documents, sentences) of a user corpus, read exactly as the trainer will read it.

    `data`: an uploaded file's bytes, or pasted text (its length checked before it is encoded); `file_name`: the
    uploaded file's name (None for pasted text). Raises ValueError with a plain message for text that is too big,
    not UTF-8, binary or shorter than 2 sentences.
    """
    if isinstance(data, str):
        data = check_text(data, MAX_CORPUS_CHARS, "The pasted corpus").encode("utf-8")
    if len(data) > MAX_CORPUS_BYTES:
        raise ValueError(
            f"The corpus is {len(data) / 1e6:.1f} MB; the limit is {MAX_CORPUS_BYTES / 1e6:.0f} MB of text"
        )
    if file_name is None:
        documents = documents_from_text(data.decode("utf-8"))
    else:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / (Path(file_name).name or "corpus.txt")
            path.write_bytes(data)
            documents = read_corpus(path)
    return len(documents), sum(len(document) for document in documents)


def decode_corpus(data: bytes | str) -> str:
    """The text of a corpus once `corpus_summary` accepted it (an uploaded file's bytes decoded; pasted text as is)."""
    return data if isinstance(data, str) else data.decode("utf-8-sig")


def device_problem(device: str) -> str | None:
    """Why the chosen device cannot work here, as the form says it; None when it can."""
    reason = cuda_unavailable_reason() if device == "cuda" else None
    return f"CUDA cannot be used: {reason}. Choose auto or CPU." if reason else None


def training_advice(options: dict[str, Any], has_cuda: bool, cpu_bf16: bool | None = None) -> list[str]:
    """Warnings about options that usually disappoint: a large lr on a pretrained model, base on a CPU, bf16 on a CPU
    that has no bf16 instructions (cpu_bf16: whether it has them; None: ask torch)."""
    advice = []
    device = torch.device("cpu" if options.get("device") == "cpu" or not has_cuda else "cuda")
    if bf16_emulated(options.get("dtype", "auto"), device, cpu_bf16):
        advice.append(f"{BF16_EMULATED}: choose auto or float32.")
    if options.get("init") and options["lr"] > CONTINUED_PRETRAINING_MAX_LR:
        advice.append(
            "Continued pre-training usually takes a small learning rate (about 1e-4): "
            "a large one wipes out what the model knows."
        )
    if options["preset"] in SLOW_ON_CPU_PRESETS and not has_cuda:
        advice.append(f"The {options['preset']} preset takes hours on a CPU: try tiny or small first.")
    return advice


def plan_summary(options: dict[str, Any], has_cuda: bool | None = None) -> str:
    """The form's line about the run these options start: its size, its steps, then any advice.

    has_cuda: whether a CUDA GPU is usable (None: ask torch).
    """
    has_cuda = cuda_unavailable_reason() is None if has_cuda is None else has_cuda
    size = f"About {model_size(options) / 1e6:.2f} M parameters"
    if options.get("init"):
        size = f"{options['init']}'s sizes"
    elif options.get("model_file"):
        size = f"Your BERT ({parse_spec(options['model_file']).file.name}) at these sizes"
    text = f"{size}; {options['steps']} steps of {options['batch_size']} sentence pairs."
    return " ".join([text, *training_advice(options, has_cuda)])
