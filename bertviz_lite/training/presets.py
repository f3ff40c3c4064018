"""The presets of a training run: model sizes and training defaults, each a name the CLI's --preset and the form take.

`training_args.TrainingArguments` fills every option left at None with its preset's value.
"""

from __future__ import annotations

from typing import Any

_TINY: dict[str, Any] = {
    "config": {
        "hidden_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 512,
        "max_position_embeddings": 128,
        "hidden_dropout_prob": 0.0,
        "attention_probs_dropout_prob": 0.0,
    },
    "vocab_size": 1000,
    "seq_len": 64,
    "batch_size": 32,
    "steps": 1000,
    "lr": 2e-3,
    "warmup": 30,
    "log_every": 5,
    "eval_every": 50,
    "snapshot_every": 25,
    "save_every": 100,
}

PRESETS: dict[str, dict[str, Any]] = {
    "tiny": _TINY,
    # the tiny model, sized to finish within 2 minutes on 2 CPU cores: start it, teach, show it
    "classroom": _TINY
    | {"config": dict(_TINY["config"]), "steps": 800, "eval_every": 25, "snapshot_every": 20},
    "small": {
        "config": {
            "hidden_size": 256,
            "num_hidden_layers": 4,
            "num_attention_heads": 4,
            "intermediate_size": 1024,
            "max_position_embeddings": 512,
        },
        "vocab_size": 8000,
        "seq_len": 128,
        "batch_size": 16,
        "steps": 2000,
        "lr": 5e-4,
        "warmup": 200,
        "log_every": 10,
        "eval_every": 200,
        "snapshot_every": 100,
        "save_every": 500,
    },
    "base": {
        "config": {
            "hidden_size": 768,
            "num_hidden_layers": 12,
            "num_attention_heads": 12,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
        },
        "vocab_size": 30522,
        "seq_len": 128,
        "batch_size": 32,
        "steps": 10000,
        "lr": 1e-4,
        "warmup": 1000,
        "log_every": 20,
        "eval_every": 500,
        "snapshot_every": 500,
        "save_every": 1000,
    },
}
