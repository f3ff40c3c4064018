"""A learner's model in a run folder: their weights under their own names, the mapping beside them, their file's hash.

`learner.safetensors` holds their parameters as their module names them; `learner.json` says which file and class
made them, the file's content hash (sha256), the sizes it was built at and how their parameters map onto ours
(file names: `bertviz_lite.loading.run_folder`). Loading a run back needs their file, unchanged: a file whose hash
differs is refused with a sentence, before it is imported.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from safetensors import SafetensorError
from safetensors.torch import load_file, save

from bertviz_lite.atomic import atomic_write_bytes, atomic_write_json
from bertviz_lite.check.learner_model import LearnerError, LearnerForPreTraining, LearnerSpec, load_learner
from bertviz_lite.loading.run_folder import RunFolder, read_json_object
from bertviz_lite.model.config import BertConfig
from bertviz_lite.text.tokenization import BertTokenizer


def file_sha256(path: str | os.PathLike) -> str:
    """The content hash of their file (read as bytes, never imported)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@dataclass(frozen=True)
class LearnerRecord:
    """What learner.json says about the model a run trained."""

    spec: LearnerSpec
    sha256: str
    config: BertConfig
    nsp_head: bool
    attention: bool

    def changed_file(self) -> str | None:
        """The sentence refusing their file as it is now (missing, or changed since the run), or None when unchanged."""
        if not self.spec.file.is_file():
            return (
                f"This run trained {self.spec.name}, and there is no file {self.spec.file} now: loading it back "
                "needs that file."
            )
        if file_sha256(self.spec.file) != self.sha256:
            return (
                f"{self.spec.file} has changed since this run trained {self.spec.name} (its content hash differs): "
                "the saved weights belong to the version that trained them; put that version back, or train again."
            )
        return None


def is_learner_run(run_dir: str | os.PathLike) -> bool:
    """Whether the run folder holds a learner's model (learner.json) rather than our BERT."""
    return RunFolder(run_dir).learner.is_file()


def read_record(run_dir: str | os.PathLike) -> LearnerRecord:
    """learner.json read as untrusted input; ValueError with a sentence when it is not a learner's run."""
    data = read_json_object(RunFolder(run_dir).learner)
    try:
        file = data["file"]
        class_name = data.get("class")
        sha256 = data["sha256"]
        if not (isinstance(file, str) and isinstance(sha256, str) and isinstance(class_name, str | None)):
            raise TypeError
        config = BertConfig(**data["config"])
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"{Path(run_dir).name} holds no readable learner.json") from None
    spec = LearnerSpec(Path(file), class_name)
    return LearnerRecord(spec, sha256, config, data.get("nsp_head") is True, data.get("attention") is True)


def record_of(model: LearnerForPreTraining) -> dict[str, Any]:
    """learner.json's content for a model of theirs."""
    return {
        "file": str(model.spec.file.resolve()),
        "class": model.spec.class_name,
        "sha256": model.sha256,
        "config": model.config.to_dict(),
        "mapping": model.mapping.table(),
        "unmapped": {"theirs": model.mapping.unmapped_theirs, "ours": model.mapping.unmapped_ours},
        "nsp_head": model.has_nsp_head,
        "attention": model.exposes_attention,
    }


def save_learner_checkpoint(
    run_dir: str | os.PathLike,
    model: LearnerForPreTraining,
    tokenizer: BertTokenizer,
    train_args: dict[str, Any] | None = None,
    step: int = 0,
) -> Path:
    """Write their weights (their names), learner.json, vocab.txt and train_args.json, each atomically."""
    run = RunFolder(run_dir)
    run.path.mkdir(parents=True, exist_ok=True)
    metadata = {"format": "pt", "step": str(int(step)), "sha256": model.sha256}
    atomic_write_bytes(run.learner_weights, save(model.learner_state_dict(), metadata=metadata))
    atomic_write_json(run.learner, record_of(model))
    if not run.vocab.is_file():
        tokenizer.save_vocab(run.vocab)
    if train_args is not None:
        atomic_write_json(run.train_args, train_args)
    return run.path


def learner_checkpoint_step(run_dir: str | os.PathLike) -> int | None:
    """The step recorded in learner.safetensors, or None if absent or unreadable."""
    from safetensors import safe_open

    try:
        with safe_open(str(RunFolder(run_dir).learner_weights), framework="pt") as handle:
            return int((handle.metadata() or {})["step"])
    except (OSError, SafetensorError, KeyError, TypeError, ValueError):
        return None


def load_learner_run(run_dir: str | os.PathLike) -> tuple[LearnerForPreTraining, BertTokenizer]:
    """Their model with the run's weights, and the run's vocabulary; LearnerError with a sentence for a changed file.

    Imports their file: only in a process that exists for it (the training process resuming the run).
    """
    run = RunFolder(run_dir)
    record = read_record(run.path)
    refusal = record.changed_file()
    if refusal:
        raise LearnerError(refusal)
    model = load_learner(record.spec, record.config, record.sha256)
    try:
        tensors = load_file(str(run.learner_weights))
    except (OSError, SafetensorError) as error:
        raise LearnerError(f"{run.name}'s learner.safetensors does not load ({error})") from None
    model.load_learner_state_dict(tensors)
    return model, BertTokenizer.from_vocab(run.vocab)


# ---- what the Train page says about a learner's run -------------------------------------------------------------


def _record_or_none(run_dir: str | os.PathLike) -> LearnerRecord | None:
    if not is_learner_run(run_dir):
        return None
    try:
        return read_record(run_dir)
    except ValueError:
        return None


def run_note(run_dir: str | os.PathLike) -> str | None:
    """One line on a learner's run: whose model it trains and with which heads; None for a run of our BERT."""
    record = _record_or_none(run_dir)
    if record is None:
        return None
    heads = "MLM and NSP" if record.nsp_head else "MLM only: it has no NSP head"
    return f"This run trains your own BERT, {record.spec.name} ({heads})."


def replay_gap(run_dir: str | os.PathLike) -> str | None:
    """Why a learner's run has no attention to replay (its attention keeps the probabilities inside), else None."""
    record = _record_or_none(run_dir)
    if record is None or record.attention:
        return None
    return (
        f"{record.spec.name} does not expose its attention probabilities (a softmax written inline or "
        "F.scaled_dot_product_attention keeps them inside), so this run saved no attention to replay: return them "
        "from your attention, or keep them as self.attn."
    )


def predictions_gap(run_dir: str | os.PathLike) -> str | None:
    """Why a learner's snapshots hold no predictions (no NSP head), else None."""
    record = _record_or_none(run_dir)
    if record is None or record.nsp_head:
        return None
    return (
        f"{record.spec.name} has no NSP head, so the snapshots hold no predictions (the chart shows the MLM and "
        "NSP heads' answers together)."
    )


def checkpoint_note(run_dir: str | os.PathLike) -> str | None:
    """Why the Checkpoints page neither loads, zips nor exports a learner's run; None for a run of our BERT."""
    note = run_note(run_dir)
    if note is None:
        return None
    return (
        f"{note} Its weights are saved under your parameter names (learner.safetensors, the mapping onto ours in "
        "learner.json) and need your file to run: they are no checkpoint of our BERT to zip or export, and the "
        "explore pages run your model with them in a separate process, where this server may run your code."
    )
