"""Checkpoint, snapshot and optimizer files of a run folder (their names: `bertviz_lite.loading.run_folder`); no pickle.

The checkpoint is a Hugging Face BERT folder (model.safetensors, config.json, vocab.txt). Attention snapshots:
    snapshots/step_000100.safetensors
        tensor "attentions": float16 [L, H, T, T], the attention probabilities of every layer and
        head for the run's fixed probe sentence pair, after optimizer step 100 (step 0 = initial);
        metadata (strings): "step", "tokens" (a JSON list of the T token strings),
        "token_type_ids" (a JSON list), "text_a", "text_b", and, when the run saved them,
        "predictions" (JSON, see `Snapshot.predictions`): the MLM and NSP heads' answers on the probe pair.
`optimizer.safetensors`: AdamW's moments, tensors "<parameter>.exp_avg" and "<parameter>.exp_avg_sq";
    metadata {"step": "<step>"}, the checkpoint step they belong to. `--resume` restores them; when the
    step differs (a kill between the two writes) the moments restart.
Every file is written to a temporary name and renamed into place (`bertviz_lite.atomic`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save
from torch import nn

from bertviz_lite.atomic import atomic_write_bytes, atomic_write_json
from bertviz_lite.limits import recorded_count
from bertviz_lite.loading.run_folder import RunFolder
from bertviz_lite.model.modeling import BertForPreTraining
from bertviz_lite.text.tokenization import BertTokenizer

SNAPSHOT_TENSOR = "attentions"  # the one tensor of a snapshot file


def save_weights(folder: str | os.PathLike, model: BertForPreTraining, step: int) -> Path:
    """Write model.safetensors (Hugging Face names, tied copies included) atomically."""
    tensors = {k: v.detach().float().cpu().contiguous() for k, v in model.hf_state_dict().items()}
    data = save(tensors, metadata={"format": "pt", "step": str(int(step))})
    return atomic_write_bytes(RunFolder(folder).weights, data)


def save_half_precision(folder: str | os.PathLike) -> Path:
    """Rewrite `<folder>/model.safetensors` in float16, without the decoder copy of the tied word embeddings.

    About a third of the float32 size; `load` and transformers' `from_pretrained` (which re-ties the
    decoder) both read it. For shipping a checkpoint, not during training.
    """
    path = RunFolder(folder).weights
    with safe_open(str(path), framework="pt") as handle:
        metadata = handle.metadata() or {"format": "pt"}
        tensors = {
            key: handle.get_tensor(key).to(torch.float16).contiguous()
            for key in handle.keys()
            if key != "cls.predictions.decoder.weight"
        }
    return atomic_write_bytes(path, save(tensors, metadata={**metadata, "dtype": "float16"}))


def save_checkpoint(
    folder: str | os.PathLike,
    model: BertForPreTraining,
    tokenizer: BertTokenizer,
    train_args: dict[str, Any] | None = None,
    step: int = 0,
) -> Path:
    """Write a loadable checkpoint: weights first, then config.json, vocab.txt and train_args.json.

    Each file is replaced atomically; a folder that already held a checkpoint of the same run stays
    loadable at every instant (config and vocabulary do not change during a run).
    """
    run = RunFolder(folder)
    run.path.mkdir(parents=True, exist_ok=True)
    save_weights(run.path, model, step)
    _write_if_changed(run.config, json.dumps(model.config.to_hf_dict(), indent=2) + "\n")
    if not run.vocab.is_file():
        tokenizer.save_vocab(run.vocab)
    if train_args is not None:
        atomic_write_json(run.train_args, train_args)
    return run.path


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
        with safe_open(str(RunFolder(folder).weights), framework="pt") as handle:
            return recorded_count(int((handle.metadata() or {}).get("step")))
    except (OSError, SafetensorError, TypeError, ValueError):
        return None


def snapshot_path(run_dir: str | os.PathLike, step: int) -> Path:
    """`<run>/snapshots/step_000100.safetensors` for step 100."""
    return RunFolder(run_dir).snapshot(step)


def file_version(path: str | os.PathLike) -> int:
    """The file's modification time in ns, 0 when it is missing: a rewritten snapshot is a new cache entry."""
    try:
        return Path(path).stat().st_mtime_ns
    except OSError:
        return 0


def save_snapshot(
    run_dir: str | os.PathLike,
    step: int,
    attentions: torch.Tensor,
    tokens: list[str],
    token_type_ids: list[int] | None = None,
    texts: tuple[str, str] = ("", ""),
    predictions: dict | None = None,
) -> Path:
    """Save the attention maps [L, H, T, T] of the probe pair as float16 (and the heads' predictions), atomically."""
    if attentions.dim() != 4 or attentions.shape[-1] != len(tokens) or attentions.shape[-2] != len(tokens):
        raise ValueError(
            f"attentions must be [L, H, T, T] with T = {len(tokens)}, got {tuple(attentions.shape)}"
        )
    metadata = {
        "format": "pt",
        "step": str(int(step)),
        "tokens": json.dumps(list(tokens)),
        "token_type_ids": json.dumps(list(token_type_ids or [])),
        "text_a": texts[0],
        "text_b": texts[1],
        **({"predictions": json.dumps(predictions)} if predictions is not None else {}),
    }
    path = snapshot_path(run_dir, step)
    path.parent.mkdir(exist_ok=True)
    data = save(
        {SNAPSHOT_TENSOR: attentions.detach().to(torch.float16).cpu().contiguous()}, metadata=metadata
    )
    return atomic_write_bytes(path, data)


def load_snapshot(path: str | os.PathLike) -> tuple[int, np.ndarray, list[str]]:
    """(step, attentions float16 [L, H, T, T], tokens) from one snapshot file."""
    try:
        with safe_open(str(path), framework="np") as handle:
            metadata = handle.metadata() or {}
            attentions = handle.get_tensor(SNAPSHOT_TENSOR)
        return int(metadata["step"]), attentions, list(json.loads(metadata["tokens"]))
    except (OSError, SafetensorError, KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{path} is not a readable attention snapshot ({err})") from None


def load_snapshot_predictions(path: str | os.PathLike) -> dict | None:
    """The MLM/NSP predictions a snapshot holds (`evaluation.probe_predictions`), or None if it has none."""
    try:
        with safe_open(str(path), framework="np") as handle:
            predictions = json.loads((handle.metadata() or {}).get("predictions") or "null")
    except (OSError, SafetensorError, ValueError):
        return None
    return predictions if isinstance(predictions, dict) else None


# ---- optimizer state -----------------------------------------------------------------------------


def save_optimizer_state(
    run_dir: str | os.PathLike, model: nn.Module, optimizer: torch.optim.Optimizer, step: int
) -> Path:
    """Write AdamW's moments of every parameter to `<run>/optimizer.safetensors` (no pickle)."""
    names = {id(param): name for name, param in model.named_parameters()}
    tensors = {
        f"{names[id(param)]}.{key}": value.detach().cpu().contiguous()
        for param, state in optimizer.state.items()
        if id(param) in names
        for key, value in state.items()
        if key != "step" and torch.is_tensor(value)
    }
    return atomic_write_bytes(RunFolder(run_dir).optimizer, save(tensors, metadata={"step": str(step)}))


def load_optimizer_state(
    run_dir: str | os.PathLike, model: nn.Module, optimizer: torch.optim.Optimizer, step: int
) -> bool:
    """Restore the moments saved at `step`; False (optimizer untouched) if absent, damaged or of another step."""
    tensors = _read_optimizer_file(RunFolder(run_dir).optimizer, step)
    params = dict(model.named_parameters())
    moments = []
    for key, value in (tensors or {}).items():
        name, _, kind = key.rpartition(".")
        if name not in params or params[name].shape != value.shape:
            return False
        moments.append((params[name], kind, value))
    for param, kind, value in moments:
        state = optimizer.state[param]
        state[kind] = value.to(param.device, param.dtype)
        state["step"] = torch.tensor(float(step), dtype=torch.float32, device=param.device)
    return bool(moments)


def _read_optimizer_file(path: Path, step: int) -> dict[str, torch.Tensor] | None:
    """The tensors of an optimizer file saved at `step`, or None."""
    try:
        with safe_open(str(path), framework="pt") as handle:
            if (handle.metadata() or {}).get("step") != str(step):
                return None
        return load_file(str(path))
    except (OSError, SafetensorError):
        return None
