"""The learner's side, run only inside the worker process: load their file, find their class, build it.

Every failure here raises `CannotBuild` with one sentence for the learner; their own exceptions pass through to the
worker, which reports their traceback's last frame.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import sys
import types
from pathlib import Path
from typing import Any

from torch import nn

# Our config field -> the names learners give it in constructors and config objects.
ALIASES = {
    "vocab_size": (
        "vocab_size",
        "vocab",
        "n_vocab",
        "num_tokens",
        "vocab_len",
        "ntoken",
        "n_tokens",
        "vocabulary_size",
    ),
    "hidden_size": (
        "hidden_size",
        "d_model",
        "embed_size",
        "hidden",
        "n_embd",
        "n_embed",
        "dim",
        "embed_dim",
        "emb_dim",
        "emb_size",
        "embedding_size",
        "hidden_dim",
        "embedding_dim",
        "d_embed",
        "d_hidden",
        "model_dim",
        "d_emb",
        "num_hiddens",  # Dive into Deep Learning (d2l.ai)
        "ffn_num_input",
        "ffn_num_outputs",
        "norm_shape",  # nn.LayerNorm(norm_shape) takes the int as it takes [H]
        "key_size",
        "query_size",
        "value_size",
    ),
    "num_hidden_layers": (
        "num_hidden_layers",
        "num_layers",
        "n_layers",
        "n_layer",
        "layers",
        "depth",
        "nlayers",
        "num_blocks",
        "n_blocks",
        "num_encoder_layers",
        "n_encoder_layers",
        "num_blks",  # d2l.ai
    ),
    "num_attention_heads": (
        "num_attention_heads",
        "num_heads",
        "heads",
        "n_heads",
        "n_head",
        "attn_heads",
        "h",
        "nhead",
        "head_num",
        "num_head",
        "n_attn_heads",
    ),
    "intermediate_size": (
        "intermediate_size",
        "d_ff",
        "feed_forward_hidden",
        "middle_dim",
        "ff_dim",
        "d_ffn",
        "dim_feedforward",
        "ffn_dim",
        "mlp_dim",
        "d_inner",
        "hidden_ff",
        "ff_hidden",
        "ffn_hidden",
        "d_hid",
        "intermediate_dim",
        "ffn_size",
        "ff_size",
        "feedforward_dim",
        "ffn_num_hiddens",  # d2l.ai
    ),
    "max_position_embeddings": (
        "max_position_embeddings",
        "max_len",
        "seq_len",
        "block_size",
        "max_seq_len",
        "max_length",
        "n_positions",
        "context_length",
        "max_positions",
        "n_ctx",
        "max_seq_length",
        "seq_length",
        "max_seq",
        "context_size",
        "maxlen",
    ),
    "type_vocab_size": (
        "type_vocab_size",
        "n_segments",
        "num_segments",
        "segment_size",
        "n_segment",
        "num_token_types",
        "n_types",
    ),
    "hidden_dropout_prob": (
        "dropout",
        "dropout_prob",
        "hidden_dropout_prob",
        "p_drop",
        "drop",
        "dropout_rate",
        "attention_probs_dropout_prob",
        "attn_dropout",
        "p",
        "dropout_p",
        "attn_pdrop",
        "resid_pdrop",
        "embd_pdrop",
    ),
    "layer_norm_eps": ("layer_norm_eps", "eps", "ln_eps", "norm_eps", "layer_norm_epsilon"),
    "pad_token_id": ("pad_token_id", "pad_idx", "padding_idx", "pad_id", "pad_index"),
}
MODEL_NAMES = ("Bert", "BERT", "BertModel", "BertForPreTraining", "BERTModel")  # the last: d2l.ai
CONFIG_PARAMS = ("config", "cfg", "args", "conf", "hparams", "params", "configs")


class CannotBuild(Exception):
    """Their file cannot be loaded or built; the message is one sentence for them."""


def load_file(path: Path) -> types.ModuleType:
    """Import their file as a module, its folder on sys.path so that their part files import each other."""
    if not path.is_file():
        raise CannotBuild(f"There is no file {path}.")
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(f"learner_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def module_classes(module: types.ModuleType) -> dict[str, type]:
    """The nn.Module classes their file defines or imports."""
    return {
        name: obj
        for name, obj in vars(module).items()
        if inspect.isclass(obj) and issubclass(obj, nn.Module) and not obj.__module__.startswith("torch")
    }


def find_class(module: types.ModuleType, wanted: str | None, names: tuple[str, ...] = MODEL_NAMES) -> type:
    """Their class named `wanted`, else the first of `names` present."""
    classes = module_classes(module)
    if wanted:
        if wanted not in classes:
            raise CannotBuild(f"No nn.Module class named {wanted} in the file; it has {_listing(classes)}.")
        return classes[wanted]
    for name in names:
        if name in classes:
            return classes[name]
    raise CannotBuild(
        f"No class named {', '.join(names[:-1])} or {names[-1]} in the file ({_listing(classes)}); "
        f"name yours with --class NAME."
    )


def _listing(classes: dict[str, type]) -> str:
    return "classes " + ", ".join(sorted(classes)) if classes else "no nn.Module classes"


class LearnerConfig(types.SimpleNamespace):
    """A config object answering to every usual name, as attributes or items (config.d_model, config["n_heads"])."""

    def __getitem__(self, name: str) -> Any:
        return getattr(self, name)

    def get(self, name: str, default: Any = None) -> Any:
        return getattr(self, name, default)


def config_namespace(config: dict[str, Any]) -> LearnerConfig:
    """Our config under every usual name of each field."""
    values = {}
    for field_name, names in ALIASES.items():
        for name in names:
            values.setdefault(name, config[field_name])
    values.update(config)
    return LearnerConfig(**values)


def build(module: types.ModuleType, cls: type, config: dict[str, Any]) -> nn.Module:
    """A `build(config)` function in the file, else the constructor with its parameters matched by name."""
    if callable(getattr(module, "build", None)) and cls.__name__ in MODEL_NAMES:
        model = module.build(config_namespace(config))
    else:
        model = construct(cls, module_classes(module), config, configs=config_classes(module))
    if not isinstance(model, nn.Module):
        raise CannotBuild(f"build(config) returned a {type(model).__name__}, not an nn.Module.")
    return model


def construct(
    cls: type,
    classes: dict[str, type],
    config: dict[str, Any],
    depth: int = 0,
    configs: tuple[type, ...] = (),
) -> nn.Module:
    """cls(**arguments) with each parameter found by its usual name, a config object (of their config class, if the
    file has one), or a class of the file."""
    arguments = {}
    for name, param in inspect.signature(cls.__init__).parameters.items():
        if name == "self" or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        value = _argument(name, param, classes, config, depth, configs)
        if value is not inspect.Parameter.empty:
            arguments[name] = value
    return cls(**arguments)


def config_classes(module: types.ModuleType) -> tuple[type, ...]:
    """The dataclasses their file defines whose name says config (nanoGPT's GPTConfig), most fields first."""
    found = [
        obj
        for name, obj in vars(module).items()
        if inspect.isclass(obj) and dataclasses.is_dataclass(obj) and "config" in name.lower()
    ]
    return tuple(sorted(found, key=lambda cls: -len(dataclasses.fields(cls))))


def their_config(config: dict[str, Any], configs: tuple[type, ...]) -> Any:
    """An instance of their config class with every field of a usual name set from ours and the others left at their
    defaults (nanoGPT's `bias`); our namespace where they have none, or none that can be made so."""
    namespace = config_namespace(config)
    for cls in configs:
        values = {
            f.name: getattr(namespace, f.name) for f in dataclasses.fields(cls) if hasattr(namespace, f.name)
        }
        try:
            return cls(**values)
        except TypeError:  # a field with neither a usual name nor a default
            continue
    return namespace


def _argument(
    name: str,
    param: inspect.Parameter,
    classes: dict[str, type],
    config: dict[str, Any],
    depth: int,
    configs: tuple[type, ...] = (),
) -> Any:
    for field_name, names in ALIASES.items():
        if name in names:
            return config[field_name]
    if name.lower() in CONFIG_PARAMS:
        return their_config(config, configs)
    inner = _class_for(name, param, classes)
    if inner is not None and depth < 3:  # BERTLM(bert: BERT, vocab_size): build their BERT first
        return construct(inner, classes, config, depth + 1, configs)
    if param.default is not inspect.Parameter.empty:
        return inspect.Parameter.empty
    raise CannotBuild(
        f"Cannot build {param.name!r} of the constructor: it is none of the usual names (vocab_size, hidden_size / "
        f"d_model, num_layers, num_heads, d_ff, max_len, dropout, config); add a function build(config) to the file "
        f"that returns your model."
    )


def _class_for(name: str, param: inspect.Parameter, classes: dict[str, type]) -> type | None:
    if inspect.isclass(param.annotation) and param.annotation in classes.values():
        return param.annotation
    if isinstance(param.annotation, str) and param.annotation in classes:
        return classes[param.annotation]
    lowered = {key.lower(): cls for key, cls in classes.items()}
    return lowered.get(name.lower())
