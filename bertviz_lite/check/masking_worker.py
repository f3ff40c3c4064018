"""The learner's masking function, run inside the worker on many seeded batches (`--part masking`)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from bertviz_lite.check.learner import CannotBuild, load_file

PAD = 0
UNK = 1
CLS = 2
SEP = 3
MASK = 4
SPECIAL_IDS = (PAD, UNK, CLS, SEP, MASK)
VOCAB_SIZE = 1000
BATCHES = 60  # ~20,000 ordinary tokens: the 15% share to within ±1% at 99.99%
ROWS = 16
LENGTH = 32
FUNCTION_NAMES = (
    "mask_tokens",
    "masking",
    "mask",
    "mask_input",
    "mlm_mask",
    "random_masking",
    "apply_mask",
    "create_masked_lm_predictions",
    "mask_batch",
)
ID_NAMES = ("input_ids", "ids", "inputs", "tokens", "x", "token_ids", "batch", "input", "seq", "sequence")


def masking_batches(seed: int = 0) -> list[Tensor]:
    """Padded batches of sentence pairs: [CLS] a [SEP] b [SEP] [PAD]…, ids of words from 5 to VOCAB_SIZE - 1."""
    generator = torch.Generator().manual_seed(seed)
    batches = []
    for _ in range(BATCHES):
        ids = torch.randint(MASK + 1, VOCAB_SIZE, (ROWS, LENGTH), generator=generator)
        lengths = torch.randint(LENGTH // 2, LENGTH + 1, (ROWS,), generator=generator)
        for row, length in enumerate(lengths.tolist()):
            ids[row, 0] = CLS
            ids[row, length // 2] = SEP
            ids[row, length - 1] = SEP
            ids[row, length:] = PAD
        batches.append(ids)
    return batches


def find_function(module: Any, wanted: str | None):
    """Their function by name, else one of the usual names, else the only function taking token ids."""
    functions = {
        n: f for n, f in vars(module).items() if inspect.isfunction(f) and f.__module__ == module.__name__
    }
    if wanted:
        if wanted not in functions:
            raise CannotBuild(
                f"No function named {wanted} in the file; it has {', '.join(sorted(functions)) or 'none'}."
            )
        return functions[wanted]
    for name in FUNCTION_NAMES:
        if name in functions:
            return functions[name]
    takers = [  # not attention's masked softmax (Dive into Deep Learning's `masked_softmax(X, valid_lens)`)
        f
        for name, f in functions.items()
        if _first_param(f) in ID_NAMES
        and not any(word in name.lower() for word in ("softmax", "attention", "attn"))
    ]
    if len(takers) == 1:
        return takers[0]
    raise CannotBuild(
        f"No masking function found (looked for {', '.join(FUNCTION_NAMES[:3])}, or one function whose "
        f"first parameter is input_ids); name yours with --class NAME."
    )


def _first_param(function) -> str | None:
    names = list(inspect.signature(function).parameters)
    return names[0].lower() if names else None


def arguments(function, ids: Tensor, generator: torch.Generator) -> dict[str, Any]:
    """Their parameters filled by the usual names: ids first, then vocab size, [MASK] id, special ids, probability."""
    special = torch.isin(ids, torch.tensor(SPECIAL_IDS))
    known = {
        ("vocab_size", "vocab", "n_vocab", "num_tokens"): VOCAB_SIZE,
        ("mask_token_id", "mask_id", "mask_token", "mask_idx", "mask_index"): MASK,
        ("pad_token_id", "pad_id", "pad_idx", "pad_token", "pad_index"): PAD,
        ("cls_token_id", "cls_id"): CLS,
        ("sep_token_id", "sep_id"): SEP,
        ("special_ids", "special_token_ids", "special_tokens", "specials", "special_token_list"): list(
            SPECIAL_IDS
        ),
        ("special_tokens_mask", "special_mask"): special,
        (
            "mask_prob",
            "prob",
            "p",
            "probability",
            "mlm_probability",
            "masking_prob",
            "mlm_prob",
            "rate",
        ): 0.15,
        ("attention_mask",): (ids != PAD).long(),
        ("generator", "rng", "gen"): generator,
    }
    values = {}
    params = list(inspect.signature(function).parameters.values())
    values[params[0].name] = ids
    for param in params[1:]:
        value = next(
            (v for names, v in known.items() if param.name.lower() in names), inspect.Parameter.empty
        )
        if value is not inspect.Parameter.empty:
            values[param.name] = value
        elif param.default is inspect.Parameter.empty and param.kind not in (
            param.VAR_POSITIONAL,
            param.VAR_KEYWORD,
        ):
            raise CannotBuild(
                f"Cannot call {function.__name__}: its parameter {param.name!r} is none of the usual "
                f"names (vocab_size, mask_token_id, special_tokens_mask, mask_prob, …)."
            )
    return values


def two_tensors(output: Any) -> tuple[Tensor, Tensor]:
    """(masked ids, labels) from a tuple, a dict or an object with input_ids and labels."""
    if isinstance(output, (tuple, list)) and len(output) >= 2:
        return output[0], output[1]
    if isinstance(output, dict) and {"input_ids", "labels"} <= output.keys():
        return output["input_ids"], output["labels"]
    if hasattr(output, "input_ids") and hasattr(output, "labels"):
        return output.input_ids, output.labels
    raise CannotBuild(
        f"The masking function must return (masked_ids, labels); it returned {type(output).__name__}."
    )


def masking_job(job: dict[str, Any], phase: dict[str, str]) -> tuple[dict[str, Any], dict[str, Tensor]]:
    module = load_file(Path(job["file"]))
    function = find_function(module, job.get("class"))
    phase["now"] = "run"
    generator = torch.Generator().manual_seed(0)
    originals = []
    masked = []
    labels = []
    for ids in masking_batches():
        out_ids, out_labels = two_tensors(function(**arguments(function, ids.clone(), generator)))
        originals.append(ids)
        masked.append(torch.as_tensor(out_ids).long().reshape(ids.shape))
        labels.append(torch.as_tensor(out_labels).long().reshape(ids.shape))
    tensors = {"input_ids": torch.cat(originals), "masked": torch.cat(masked), "labels": torch.cat(labels)}
    return {"status": "ran", "class": function.__name__}, tensors
