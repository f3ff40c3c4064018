"""The options of a training run as a form shows them: one flat dict per preset, checked, turned into CLI flags.

A flat dict holds every `TrainingArguments` field except `config` and `out`, plus every BertConfig field
the CLI overrides (`CONFIG_OVERRIDES`). `check_options` builds the real `TrainingArguments` from it, so
the form refuses exactly what the CLI refuses, with the trainer's message.
"""

from __future__ import annotations

import dataclasses
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import torch

from bertviz_lite.config import BertConfig
from bertviz_lite.data import documents_from_text, read_corpus
from bertviz_lite.train import build_parser
from bertviz_lite.trainer import CONFIG_OVERRIDES, OptionError, TrainingArguments

MAX_CORPUS_BYTES = 5_000_000
TRAINING_FIELDS = tuple(f.name for f in dataclasses.fields(TrainingArguments) if f.name not in ("config", "out"))
MODEL_FIELDS = CONFIG_OVERRIDES
LABELS = {
    "hidden_size": "Hidden size", "num_hidden_layers": "Layers", "num_attention_heads": "Attention heads",
    "intermediate_size": "Feed-forward size", "max_position_embeddings": "Max positions",
    "type_vocab_size": "Segment types", "hidden_dropout_prob": "Hidden dropout",
    "attention_probs_dropout_prob": "Attention dropout", "layer_norm_eps": "LayerNorm epsilon",
    "initializer_range": "Initializer std", "position_embedding_type": "Position embeddings",
    "preset": "Preset", "corpus": "Corpus", "num_documents": "Built-in stories", "init": "Start from", "vocab_size": "Vocabulary size",
    "seq_len": "Sequence length", "batch_size": "Batch size", "steps": "Steps", "lr": "Learning rate",
    "warmup": "Warm-up steps", "weight_decay": "Weight decay", "max_grad_norm": "Gradient clipping",
    "mask_prob": "Mask probability", "eval_fraction": "Held-out fraction", "eval_pairs": "Held-out pairs",
    "seed": "Seed", "device": "Device", "dtype": "Precision", "log_every": "Log every", "eval_every": "Evaluate every",
    "snapshot_every": "Attention snapshot every", "save_every": "Save every", "threads": "CPU threads",
}  # fmt: skip


@cache
def option_help() -> dict[str, str]:
    """The CLI's --help text of every option, by option name (the form shows the same words)."""
    return {action.dest: action.help for action in build_parser()._actions if action.help}


def preset_options(preset: str) -> dict[str, Any]:
    """Every option with the value the preset gives it (or the CLI default where the preset is silent)."""
    args = TrainingArguments(preset=preset, out="preview")
    config = args.bert_config(args.vocab_size)
    values = {name: getattr(args, name) for name in TRAINING_FIELDS}
    return {**values, **{name: getattr(config, name) for name in MODEL_FIELDS}}


def check_options(options: dict[str, Any], out: str = "preview") -> TrainingArguments:
    """The TrainingArguments of a flat options dict; OptionError (a ValueError naming the option) if refused."""
    training = {k: v for k, v in options.items() if k in TRAINING_FIELDS}
    config = {k: v for k, v in options.items() if k in MODEL_FIELDS}
    unknown = sorted(set(options) - set(TRAINING_FIELDS) - set(MODEL_FIELDS))
    if unknown:
        raise OptionError(unknown[0], f"unknown option(s): {', '.join(unknown)}")
    return TrainingArguments(**training, config=config, out=out)


def command_options(args: TrainingArguments) -> dict[str, Any]:
    """The flat options to put on the command line: training fields, then model overrides, out excluded."""
    values = {name: getattr(args, name) for name in TRAINING_FIELDS}
    return {**values, **args.config}


def model_size(options: dict[str, Any]) -> int:
    """Parameters of the model these options build (embeddings, encoder, heads), for the form's summary."""
    config = BertConfig(**{k: options[k] for k in MODEL_FIELDS if k in options}, vocab_size=options["vocab_size"])
    h, ff, layers, v = config.hidden_size, config.intermediate_size, config.num_hidden_layers, config.vocab_size
    embeddings = (v + config.max_position_embeddings + config.type_vocab_size) * h + 2 * h
    layer = 4 * (h * h + h) + 2 * h * ff + ff + h + 4 * h
    heads = (h * h + h + 2 * h + v) + (h * h + h) + (2 * h + 2)  # MLM transform + bias, pooler, NSP
    return embeddings + layers * layer + heads


def cuda_unavailable_reason() -> str | None:
    """Why `--device cuda` cannot work here, or None when a CUDA GPU is usable."""
    if torch.cuda.is_available():
        return None
    if torch.version.cuda is None:
        return "this PyTorch build has no CUDA support (it is the CPU build)"
    return "PyTorch finds no usable CUDA GPU on this machine"


def corpus_summary(data: bytes, file_name: str | None = None) -> tuple[int, int]:
    """(documents, sentences) of a user corpus, read exactly as the trainer will read it.

    `file_name`: the uploaded file's name (None for pasted text). Raises ValueError with a plain
    message for text that is too big, not UTF-8, binary or shorter than 2 sentences.
    """
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


def decode_corpus(data: bytes) -> str:
    """The text of an uploaded corpus file once `corpus_summary` accepted its bytes."""
    return data.decode("utf-8-sig")
