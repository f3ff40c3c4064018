"""BertConfig: the sizes and numerics of a BERT model, with Hugging Face field names."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

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


@dataclass
class BertConfig:
    """Sizes and numerics of a BERT model; defaults are bert-base-uncased."""

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    layer_norm_eps: float = 1e-12
    initializer_range: float = 0.02
    pad_token_id: int = 0
    position_embedding_type: str = "learned"

    def __post_init__(self) -> None:
        self.validate()

    @property
    def head_dim(self) -> int:
        """Size of one attention head."""
        return self.hidden_size // self.num_attention_heads

    def validate(self) -> None:
        """Raise ValueError naming the first field whose value cannot build a model."""
        for name in _POSITIVE_INT_FIELDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} ({value!r}) must be a whole number greater than 0")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size ({self.hidden_size}) must be divisible by "
                f"num_attention_heads ({self.num_attention_heads})"
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
            raise ValueError(f"pad_token_id ({self.pad_token_id}) must be in [0, vocab_size={self.vocab_size})")
        if self.position_embedding_type not in POSITION_EMBEDDING_TYPES:
            raise ValueError(
                f"position_embedding_type ({self.position_embedding_type!r}) must be one of "
                f"{', '.join(POSITION_EMBEDDING_TYPES)}"
            )

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
            raise ValueError(f"model_type is {data['model_type']!r}, not 'bert': this is not a BERT model")
        if data.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"hidden_act ({data['hidden_act']!r}) is not supported; BERT uses 'gelu'")
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
        """Read a config.json (ours or Hugging Face's)."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"No config.json at {path}")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise ValueError(f"{path} is not valid JSON: {err}") from None
        if not isinstance(data, dict):
            raise ValueError(f"{path} must hold a JSON object")
        return cls.from_dict(data)
