"""Checkpoints and attention snapshots in a run folder: safe names, atomic writes, no pickle.

A checkpoint folder `checkpoints/NAME/` is a Hugging Face BERT folder:
    model.safetensors   BertForPreTraining key names; metadata {"format": "pt", "step": "<step>"}
    config.json         BertConfig.to_hf_dict(): transformers' BertConfig reads it
    vocab.txt           the WordPiece vocabulary, one token per line
plus the run's own files (see `bertviz_lite.runfiles`): train_args.json, metrics.jsonl, status.json,
and attention snapshots:
    snapshots/step_000100.safetensors
        tensor "attentions": float16 [L, H, T, T], the attention probabilities of every layer and
        head for the run's fixed probe sentence pair, after optimizer step 100 (step 0 = initial);
        metadata (strings): "step", "tokens" (a JSON list of the T token strings),
        "token_type_ids" (a JSON list), "text_a", "text_b".
Every file is written to a temporary name and renamed into place, so a kill at any instant leaves
the previous version whole.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save

from bertviz_lite.model import Bert
from bertviz_lite.runfiles import (  # noqa: F401  (re-exported: the app reads runs through this module)
    atomic_write_bytes,
    atomic_write_json,
    read_metrics,
    read_status,
    read_train_args,
)
from bertviz_lite.tokenization import BertTokenizer

WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
VOCAB_FILE = "vocab.txt"
SNAPSHOTS_DIR = "snapshots"
MAX_NAME_LENGTH = 100
_NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_SNAPSHOT_PATTERN = re.compile(r"step_(\d+)\.safetensors")


def validate_run_name(name: str) -> str:
    """Return `name` if it is a safe folder name (letters, digits, . _ -), else raise ValueError."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError("The run name is empty: give a name such as 'my-run'")
    if "/" in name or "\\" in name or os.sep in name:
        raise ValueError(f"The run name {name!r} must not contain a path separator")
    if ".." in name:
        raise ValueError(f"The run name {name!r} must not contain '..'")
    if name.startswith("."):
        raise ValueError(f"The run name {name!r} must not start with '.' (hidden names are not allowed)")
    if len(name) > MAX_NAME_LENGTH:
        raise ValueError(f"The run name is {len(name)} characters long; use at most {MAX_NAME_LENGTH}")
    if not _NAME_PATTERN.fullmatch(name):
        raise ValueError(
            f"The run name {name!r} may only use letters, digits, '.', '_' and '-', and must start "
            "with a letter or digit"
        )
    return name


def save_weights(folder: str | os.PathLike, model: Bert, step: int) -> Path:
    """Write model.safetensors (Hugging Face names, tied copies included) atomically."""
    tensors = {k: v.detach().float().cpu().contiguous() for k, v in model.hf_state_dict().items()}
    data = save(tensors, metadata={"format": "pt", "step": str(int(step))})
    return atomic_write_bytes(Path(folder) / WEIGHTS_FILE, data)


def save_half_precision(folder: str | os.PathLike) -> Path:
    """Rewrite `<folder>/model.safetensors` in float16, without the decoder copy of the tied word embeddings.

    About a third of the float32 size; `load` and transformers' `from_pretrained` (which re-ties the
    decoder) both read it. For shipping a checkpoint, not during training.
    """
    path = Path(folder) / WEIGHTS_FILE
    with safe_open(str(path), framework="pt") as handle:
        metadata = handle.metadata() or {"format": "pt"}
        tensors = {key: handle.get_tensor(key).to(torch.float16).contiguous() for key in handle.keys()
                   if key != "cls.predictions.decoder.weight"}  # fmt: skip
    return atomic_write_bytes(path, save(tensors, metadata={**metadata, "dtype": "float16"}))


def save_checkpoint(
    folder: str | os.PathLike, model: Bert, tokenizer: BertTokenizer, train_args: dict[str, Any] | None = None,
    step: int = 0,
) -> Path:
    """Write a loadable checkpoint: weights first, then config.json, vocab.txt and train_args.json.

    Each file is replaced atomically; a folder that already held a checkpoint of the same run stays
    loadable at every instant (config and vocabulary do not change during a run).
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    save_weights(folder, model, step)
    config_text = json.dumps(model.config.to_hf_dict(), indent=2) + "\n"
    _write_if_changed(folder / CONFIG_FILE, config_text)
    if not (folder / VOCAB_FILE).is_file():
        tokenizer.save_vocab(folder / VOCAB_FILE)
    if train_args is not None:
        atomic_write_json(folder / "train_args.json", train_args)
    return folder


def _write_if_changed(path: Path, text: str) -> None:
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except OSError:
        pass
    atomic_write_bytes(path, text.encode("utf-8"))


def checkpoint_step(folder: str | os.PathLike) -> int | None:
    """The training step recorded in `<folder>/model.safetensors`, or None if absent or unreadable."""
    try:
        with safe_open(str(Path(folder) / WEIGHTS_FILE), framework="pt") as handle:
            return int((handle.metadata() or {}).get("step"))
    except (OSError, SafetensorError, TypeError, ValueError):
        return None


def snapshot_path(run_dir: str | os.PathLike, step: int) -> Path:
    """`<run>/snapshots/step_000100.safetensors` for step 100."""
    return Path(run_dir) / SNAPSHOTS_DIR / f"step_{int(step):06d}.safetensors"


def save_snapshot(
    run_dir: str | os.PathLike, step: int, attentions: torch.Tensor, tokens: list[str],
    token_type_ids: list[int] | None = None, texts: tuple[str, str] = ("", ""),
) -> Path:
    """Save the attention maps [L, H, T, T] of the probe pair as float16, atomically."""
    if attentions.dim() != 4 or attentions.shape[-1] != len(tokens) or attentions.shape[-2] != len(tokens):
        raise ValueError(f"attentions must be [L, H, T, T] with T = {len(tokens)}, got {tuple(attentions.shape)}")
    metadata = {
        "format": "pt",
        "step": str(int(step)),
        "tokens": json.dumps(list(tokens)),
        "token_type_ids": json.dumps(list(token_type_ids or [])),
        "text_a": texts[0],
        "text_b": texts[1],
    }
    path = snapshot_path(run_dir, step)
    path.parent.mkdir(exist_ok=True)
    data = save({"attentions": attentions.detach().to(torch.float16).cpu().contiguous()}, metadata=metadata)
    return atomic_write_bytes(path, data)


def load_snapshot(path: str | os.PathLike) -> tuple[int, np.ndarray, list[str]]:
    """(step, attentions float16 [L, H, T, T], tokens) from one snapshot file."""
    try:
        with safe_open(str(path), framework="np") as handle:
            metadata = handle.metadata() or {}
            attentions = handle.get_tensor("attentions")
        return int(metadata["step"]), attentions, list(json.loads(metadata["tokens"]))
    except (OSError, SafetensorError, KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{path} is not a readable attention snapshot ({err})") from None


def load_snapshots(run_dir: str | os.PathLike) -> list[tuple[int, np.ndarray, list[str]]]:
    """Every readable snapshot of a run, sorted by step: [(step, attentions [L, H, T, T], tokens)]."""
    folder = Path(run_dir) / SNAPSHOTS_DIR
    if not folder.is_dir():
        return []
    snapshots = []
    for path in folder.iterdir():
        if not _SNAPSHOT_PATTERN.fullmatch(path.name):
            continue
        try:
            snapshots.append(load_snapshot(path))
        except ValueError:
            continue  # a file that vanished or is not ours: the replay shows the others
    return sorted(snapshots, key=lambda snapshot: snapshot[0])
