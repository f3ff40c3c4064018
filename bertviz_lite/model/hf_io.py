"""Map state dicts between bertviz-lite's BertForPreTraining and Hugging Face's BERT classes."""

from __future__ import annotations

import re

import torch
from torch import Tensor, nn

# Keys transformers keeps as buffers or duplicates of tied weights: never weights of their own.
_DROPPED = re.compile(r"(^|\.)(position_ids|token_type_ids)$|^cls\.predictions\.decoder\.(weight|bias)$")
_DROPPED_KEYS = {
    "bert.embeddings.position_ids",
    "bert.embeddings.token_type_ids",
    "cls.predictions.decoder.weight",
    "cls.predictions.decoder.bias",
}  # where Hugging Face's files keep them
# Optional parts, by key prefix: BertModel has no heads, BertForMaskedLM no pooler and NSP head.
OPTIONAL_GROUPS = {
    "pooler": "bert.pooler.",
    "mlm_head": "cls.predictions.",
    "nsp_head": "cls.seq_relationship.",
}
_MODEL_PREFIXES = ("embeddings.", "encoder.", "pooler.")


def normalize_key(key: str) -> str:
    """One Hugging Face key -> our key: old LayerNorm names, the `bert.` prefix of bare BertModels."""
    key = re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight", key)
    key = re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", key)
    if key.startswith(_MODEL_PREFIXES):
        key = "bert." + key
    return key


def known_key(key: str, expected: set[str]) -> bool:
    """Whether a weight file's key is one of `expected` (a model's state-dict names) as Hugging Face may spell it,
    or a buffer or tied copy that loading drops."""
    return normalize_key(key) in expected | _DROPPED_KEYS


def normalize_state_dict(state_dict: dict[str, Tensor]) -> dict[str, Tensor]:
    """Rename keys, keep the decoder bias where the head bias is absent, drop buffers and tied copies."""
    out = {}
    for key, value in state_dict.items():
        new_key = normalize_key(key)
        if new_key == "cls.predictions.decoder.bias" and "cls.predictions.bias" not in state_dict:
            out["cls.predictions.bias"] = value
        elif not _DROPPED.search(new_key):
            out[new_key] = value
    return out


def _expected_keys(model: nn.Module) -> set[str]:
    return {k for k in model.state_dict() if not _DROPPED.search(k)}


def _check_keys(expected: set[str], given: set[str]) -> set[str]:
    """Raise ValueError listing unexpected or missing keys; return the optional groups absent in full."""
    unexpected = sorted(given - expected)
    missing = expected - given
    absent_groups = set()
    for name, prefix in OPTIONAL_GROUPS.items():
        group = {k for k in expected if k.startswith(prefix)}
        if group and group <= missing:
            absent_groups.add(name)
            missing -= group
    problems = []
    if missing:
        problems.append(
            f"missing keys: {', '.join(sorted(missing)[:8])}" + (" …" if len(missing) > 8 else "")
        )
    if unexpected:
        problems.append(
            f"unexpected keys: {', '.join(unexpected[:8])}" + (" …" if len(unexpected) > 8 else "")
        )
    if problems:
        raise ValueError("These weights do not fit this BERT model: " + "; ".join(problems))
    return absent_groups


def _check_shapes(model_sd: dict[str, Tensor], given: dict[str, Tensor]) -> None:
    for key, value in given.items():
        if tuple(value.shape) != tuple(model_sd[key].shape):
            raise ValueError(
                f"{key} has shape {tuple(value.shape)} in the weights but {tuple(model_sd[key].shape)} in "
                "the model: the config does not match these weights"
            )


def load_hf_state_dict(model: nn.Module, state_dict: dict[str, Tensor]) -> None:
    """Copy Hugging Face BERT weights into `model`; set `has_mlm_head`/`has_nsp_head` from what was given."""
    given = normalize_state_dict(state_dict)
    absent = _check_keys(_expected_keys(model), set(given))
    model_sd = model.state_dict()
    _check_shapes(model_sd, given)
    with torch.no_grad():
        for key, value in given.items():
            model_sd[key].copy_(value.to(model_sd[key].dtype))
    model.tie_weights()
    model.has_mlm_head = "mlm_head" not in absent
    model.has_nsp_head = not ({"nsp_head", "pooler"} & absent)


def hf_state_dict(model: nn.Module) -> dict[str, Tensor]:
    """Weights under BertForPreTraining's names, each its own contiguous tensor (safetensors-ready)."""
    out = {
        k: v.detach().clone().contiguous() for k, v in model.state_dict().items() if not _DROPPED.search(k)
    }
    out["cls.predictions.decoder.weight"] = out["bert.embeddings.word_embeddings.weight"].clone()
    out["cls.predictions.decoder.bias"] = out["cls.predictions.bias"].clone()
    return out
