"""BertConfig: the sizes and numerics of a BERT model, with Hugging Face field names."""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bertviz_lite.limits import read_json

POSITION_EMBEDDING_TYPES = ("learned", "sinusoidal")
# Fields that must be whole numbers greater than zero.
_POSITIVE_INT_FIELDS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
    "type_vocab_size",
)
_DROPOUT_FIELDS = ("hidden_dropout_prob", "attention_probs_dropout_prob")
_INT_FIELDS = (*_POSITIVE_INT_FIELDS, "pad_token_id")
_FLOAT_FIELDS = (*_DROPOUT_FIELDS, "layer_norm_eps", "initializer_range")
_STRING_FIELDS = ("position_embedding_type",)


def _size(
    default: Any,
    label: str,
    help: str,
    step: float | None = None,
    choices: tuple[str, ...] | None = None,
    most: float | None = None,
) -> Any:
    """A field a training run may override: its label, help, form step, choices and the most a run may ask
    (see `training_args.option`; a loaded model is bounded by `limits.check_model_size` instead)."""
    metadata = {
        "label": label,
        "help": help,
        "group": "Model",
        "step": step,
        "choices": choices,
        "most": most,
    }
    return dataclasses.field(default=default, metadata=metadata)


@dataclass
class BertConfig:
    """Sizes and numerics of a BERT model; defaults are bert-base-uncased."""

    vocab_size: int = 30522
    hidden_size: int = _size(
        768,
        "Hidden size",
        "Width of every token vector (BERT-base: 768). Must be divisible by the number of heads.",
        most=8192,
    )
    num_hidden_layers: int = _size(
        12, "Layers", "Transformer layers stacked on the embeddings (BERT-base: 12).", most=96
    )
    num_attention_heads: int = _size(
        12,
        "Attention heads",
        "Attention heads per layer; each head works on hidden size / heads dimensions.",
        most=128,
    )
    intermediate_size: int = _size(
        3072,
        "Feed-forward size",
        "Width of the feed-forward block inside each layer (usually 4 × hidden size).",
        most=32768,
    )
    max_position_embeddings: int = _size(
        512,
        "Max positions",
        "Longest input the position embeddings cover; at least the sequence length.",
        most=4096,
    )
    type_vocab_size: int = _size(2, "Segment types", "Segment ids: 2 for sentence A and sentence B.", most=16)
    hidden_dropout_prob: float = _size(
        0.1,
        "Hidden dropout",
        "Dropout after the embeddings, attention output and feed-forward.",
        0.05,
        most=0.99,
    )
    attention_probs_dropout_prob: float = _size(
        0.1, "Attention dropout", "Dropout on the attention probabilities.", 0.05, most=0.99
    )
    layer_norm_eps: float = _size(
        1e-12, "LayerNorm epsilon", "Added to the variance in every LayerNorm.", 1e-12, most=1.0
    )
    initializer_range: float = _size(
        0.02, "Initializer std", "Standard deviation of the initial weights.", 0.005, most=1.0
    )
    pad_token_id: int = 0
    position_embedding_type: str = _size(
        "learned",
        "Position embeddings",
        "learned (BERT) or fixed sinusoidal (Transformer paper)",
        choices=POSITION_EMBEDDING_TYPES,
    )

    def __post_init__(self) -> None:
        self.validate()

    @property
    def head_dim(self) -> int:
        """Size of one attention head."""
        return self.hidden_size // self.num_attention_heads

    def validate(self) -> None:
        """Raise ValueError naming the first field whose value cannot build a model."""
        self.check_types()
        for name in _POSITIVE_INT_FIELDS:
            value = getattr(self, name)
            if value <= 0:
                raise ValueError(f"{name} ({_short(value)}) must be a whole number greater than 0")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size ({_short(self.hidden_size)}) must be divisible by "
                f"num_attention_heads ({_short(self.num_attention_heads)})"
            )
        for name in _DROPOUT_FIELDS:
            value = getattr(self, name)
            if not 0.0 <= float(value) < 1.0:
                raise ValueError(f"{name} ({value!r}) must be in [0, 1)")
        if not float(self.layer_norm_eps) > 0:
            raise ValueError(f"layer_norm_eps ({self.layer_norm_eps!r}) must be greater than 0")
        if not float(self.initializer_range) > 0:
            raise ValueError(f"initializer_range ({self.initializer_range!r}) must be greater than 0")
        if not 0 <= self.pad_token_id < self.vocab_size:
            raise ValueError(
                f"pad_token_id ({_short(self.pad_token_id)}) must be in [0, vocab_size={_short(self.vocab_size)})"
            )
        if self.position_embedding_type not in POSITION_EMBEDDING_TYPES:
            raise ValueError(
                f"position_embedding_type ({_short(self.position_embedding_type)}) must be one of "
                f"{', '.join(POSITION_EMBEDDING_TYPES)}"
            )

    def check_types(self) -> None:
        """Raise ValueError naming the first field of the wrong type, before any value is used."""
        for name in _INT_FIELDS:
            if not _is_whole_number(getattr(self, name)):
                raise ValueError(f"{name} ({_short(getattr(self, name))}) must be a whole number")
        for name in _FLOAT_FIELDS:
            if not _is_finite_number(getattr(self, name)):
                raise ValueError(f"{name} ({_short(getattr(self, name))}) must be a finite number")
        for name in _STRING_FIELDS:
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"{name} ({_short(getattr(self, name))}) must be text")

    def to_dict(self) -> dict[str, Any]:
        """Plain fields, as stored in our own files."""
        return asdict(self)

    def to_hf_dict(self) -> dict[str, Any]:
        """A config.json that transformers' BertConfig reads."""
        data = self.to_dict()
        # transformers calls learned positions "absolute" and has no sinusoidal option; record ours.
        data["position_embedding_type"] = "absolute"
        data["bertviz_lite_position_embedding_type"] = self.position_embedding_type
        data.update(model_type="bert", architectures=["BertForPreTraining"], hidden_act="gelu")
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BertConfig:
        """Build from our dict or a Hugging Face config.json; unknown keys are ignored."""
        data = dict(data)
        if data.get("model_type", "bert") != "bert":
            raise ValueError(
                f"model_type is {_short(data['model_type'])}, not 'bert': this is not a BERT model"
            )
        if data.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"hidden_act ({_short(data['hidden_act'])}) is not supported; BERT uses 'gelu'")
        position_type = data.pop("bertviz_lite_position_embedding_type", None)
        if position_type is None:
            position_type = data.get("position_embedding_type", "learned")
            if position_type == "absolute":
                position_type = "learned"
        data["position_embedding_type"] = position_type
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    @classmethod
    def from_json_file(cls, path: str | Path) -> BertConfig:
        """Read a config.json (ours or Hugging Face's), at most 1 MB and 32 levels deep."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"No config.json at {path}")
        data = read_json(path, path.name)
        if not isinstance(data, dict):
            raise ValueError(f"{path.name} must hold a JSON object")
        return cls.from_dict(data)


def _is_whole_number(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_finite_number(value: object) -> bool:
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer too large for a float
        return False


def _short(value: object, width: int = 40) -> str:
    """repr(value), cut to `width` characters for a message (an int past 10**width named, not written out)."""
    if isinstance(value, int) and abs(value) >= 10**width:
        return f"a number of more than {width} digits"  # int's repr refuses past 4,300 digits
    text = repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"
