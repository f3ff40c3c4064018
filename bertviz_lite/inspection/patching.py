"""Activation patching: run a corrupted input with one piece of a clean run's activations put back.

Two inputs of the same length, say "Paris is the capital of [MASK]." (clean) and "Rome is the capital of
[MASK]." (corrupted). Restoring the clean value at one site in the corrupted run and measuring how much of the
clean prediction comes back says where the model carries what tells the two apart. Sites, per layer:
- "residual": the hidden state after a layer (layer 0 = the embedding output, L = the last layer's), one position;
- "attention" / "feed-forward": what a layer's attention block / feed-forward block adds before its residual
  LayerNorm, one position;
- "head": one attention head's output (its slice of the heads' context, before the output projection), every
  position.

Shapes: N patched runs in a batch, T tokens, H hidden size, L layers, nh heads, V vocabulary. No Streamlit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from bertviz_lite.inspection.attribution import MAX_BATCH_TOKENS, Target, mlm_scores
from bertviz_lite.model.attention_masks import additive_mask
from bertviz_lite.model.modeling import BertForPreTraining, BertLayer

SITES = ("residual", "attention", "feed-forward", "head")
LAYER_SITES = SITES[1:]  # recorded inside each layer (the residual stream is recorded between layers)
Edit = Callable[[str, Tensor], Tensor]
MIN_GAP = 1e-3  # logits: clean and corrupted runs closer than this leave no share to recover


def _keep(site: str, value: Tensor) -> Tensor:
    return value


def layer_forward(layer: BertLayer, hidden: Tensor, mask: Tensor | None, edit: Edit = _keep) -> Tensor:
    """BertLayer.forward (eval) written out, each site's value passed through edit(site, value): (N, T, H)."""
    context = edit("head", layer.attention.self(hidden, mask))  # (N, T, H): the heads' outputs side by side
    attention = edit("attention", layer.attention.output.dense(context))
    hidden = layer.attention.output.LayerNorm(attention + hidden)
    feed_forward = edit("feed-forward", layer.output.dense(layer.intermediate(hidden)))
    return layer.output.LayerNorm(feed_forward + hidden)


@dataclass(frozen=True)
class Run:
    """Every site's activations of one run: sites[site][layer] (N, T, H); residual has L + 1 entries."""

    sites: dict[str, list[Tensor]]
    mask: Tensor | None  # the additive attention mask (None: every token attended)

    @property
    def final(self) -> Tensor:
        return self.sites["residual"][-1]


def _check_layer(model: BertForPreTraining, layer: int, site: str) -> None:
    last = model.config.num_hidden_layers - (site != "residual")
    if not 0 <= layer <= last:
        raise ValueError(f"layer {layer} has no {site} site: this model's are 0 … {last}")


@torch.no_grad()
def record_run(model: BertForPreTraining, input_ids: Tensor, token_type_ids: Tensor | None = None) -> Run:
    """One eval-mode forward pass that keeps every site's activations."""
    model.eval()
    ids, types, attention_mask, positions = model.bert.prepare_inputs(input_ids, token_type_ids, None, None)
    hidden = model.bert.embeddings(ids, types, positions)
    mask = additive_mask(attention_mask, hidden.dtype)
    sites: dict[str, list[Tensor]] = {site: [] for site in SITES}
    sites["residual"].append(hidden)

    def record(site: str, value: Tensor) -> Tensor:
        sites[site].append(value)
        return value

    for layer in model.bert.encoder.layer:
        hidden = layer_forward(layer, hidden, mask, record)
        sites["residual"].append(hidden)
    return Run(sites, mask)


def restored_layer(
    layer: BertLayer, clean: Run, corrupted: Run, site: str, index: int, select: Tensor
) -> Tensor:
    """Layer `index` of the corrupted run with one in-layer site restored where select (N, T, H) is True: (N, T, H).

    What comes before the site is the same in every patched run, so it is read from the corrupted run's record
    instead of being run again N times (layer_forward's arithmetic, from the site on).
    """

    def value(name: str) -> Tensor:
        recorded = corrupted.sites[name][index]
        return torch.where(select, clean.sites[name][index], recorded) if name == site else recorded

    residual = corrupted.sites["residual"][index]
    attention = layer.attention.output.dense(value("head")) if site == "head" else value("attention")
    hidden = layer.attention.output.LayerNorm(attention + residual)
    ran_attention = site in ("head", "attention")
    feed_forward = layer.output.dense(layer.intermediate(hidden)) if ran_attention else value("feed-forward")
    return layer.output.LayerNorm(feed_forward + hidden)


@torch.no_grad()
def patched_final(
    model: BertForPreTraining, clean: Run, corrupted: Run, site: str, layer: int, select: Tensor
) -> Tensor:
    """The corrupted run's last hidden state (N, T, H) with the clean value restored where select (N, T, H) is True.

    Only the layers from the patched one up are run again: the corrupted run's earlier states are reused.
    """
    _check_layer(model, layer, site)
    layers = model.bert.encoder.layer
    if site == "residual":
        hidden = torch.where(select, clean.sites[site][layer], corrupted.sites[site][layer])
        start = layer
    else:
        hidden = restored_layer(layers[layer], clean, corrupted, site, layer, select)
        start = layer + 1
    for index in range(start, len(layers)):
        hidden = layer_forward(layers[index], hidden, corrupted.mask)
    return hidden


def _check_pair(clean_input_ids: Tensor, corrupted_input_ids: Tensor) -> None:
    if clean_input_ids.shape != corrupted_input_ids.shape:
        raise ValueError(
            f"The clean and corrupted inputs must have the same shape to be patched position by position; got "
            f"{tuple(clean_input_ids.shape)} and {tuple(corrupted_input_ids.shape)}."
        )


def position_select(positions: Sequence[Sequence[int]], length: int, hidden_size: int) -> Tensor:
    """(N, T, H) bool: row n selects every hidden unit at positions[n]."""
    select = torch.zeros(len(positions), length, hidden_size, dtype=torch.bool)
    for row, chosen in enumerate(positions):
        for position in chosen:
            if not 0 <= position < length:
                raise ValueError(
                    f"position {position} is outside the input's {length} tokens (0 … {length - 1})"
                )
            select[row, position] = True
    return select


def head_select(heads: Sequence[int], length: int, num_heads: int, head_size: int) -> Tensor:
    """(N, T, H) bool: row n selects head heads[n]'s slice of the context at every position."""
    select = torch.zeros(len(heads), length, num_heads * head_size, dtype=torch.bool)
    for row, head in enumerate(heads):
        select[row, :, head * head_size : (head + 1) * head_size] = True
    return select


@torch.no_grad()
def patched_logits(
    model: BertForPreTraining,
    clean_input_ids: Tensor,
    corrupted_input_ids: Tensor,
    token_type_ids: Tensor | None,
    layer: int,
    position: int | Sequence[int],
) -> Tensor:
    """MLM logits (B, T, V) of the corrupted run with the clean hidden state after `layer` restored at `position`.

    Args:
        clean_input_ids, corrupted_input_ids: (B, T) token ids, row b of one patched into row b of the other.
        token_type_ids: (B, T) segments shared by both (None: all segment A).
        layer: 0 = the embedding output, L = the last layer's output.
        position: one token index, or several (every position at layer 0 gives the clean logits back; none
            leaves the corrupted ones).
    """
    _check_pair(clean_input_ids, corrupted_input_ids)
    clean = record_run(model, clean_input_ids, token_type_ids)
    corrupted = record_run(model, corrupted_input_ids, token_type_ids)
    positions = [position] if isinstance(position, int) else list(position)
    batch, length = clean_input_ids.shape
    select = position_select([positions] * batch, length, model.config.hidden_size)
    return model.cls.predictions(patched_final(model, clean, corrupted, "residual", layer, select))


# ---------------------------------------------------------------- grids of patched runs


def _metric(model: BertForPreTraining, final: Tensor, target: Target) -> Tensor:
    """The contrastive metric of each run (N,) from its last hidden state (N, T, H)."""
    return mlm_scores(model, final[:, target.position], target)


def _changes_nothing(clean: Run, corrupted: Run, site: str, layer: int, select: Tensor) -> bool:
    """Whether restoring select leaves the corrupted run as it is (the two runs agree there: an unchanged token's
    embedding, say), so its metric is the corrupted one without running anything."""
    return bool(
        torch.equal(clean.sites[site][layer][0][select[0]], corrupted.sites[site][layer][0][select[0]])
    )


@torch.no_grad()
def patching_grid(
    model: BertForPreTraining, clean: Run, corrupted: Run, site: str, target: Target
) -> np.ndarray:
    """The metric with each site restored in turn: [L + 1, T] for "residual", [L, T] for "attention" and
    "feed-forward" (one position each), [L, nh] for "head" (every position); one batch per layer.

    Restores that change nothing (equal values, or a last hidden state off the target's position) are not run.
    """
    if site not in SITES:
        raise ValueError(f"unknown patching site {site!r}: one of {', '.join(SITES)}")
    config = model.config
    length = clean.final.shape[1]
    layers = config.num_hidden_layers + (site == "residual")
    if site == "head":
        rows = [
            head_select([h], length, config.num_attention_heads, config.head_dim)
            for h in range(config.num_attention_heads)
        ]
    else:
        rows = [position_select([[p]], length, config.hidden_size) for p in range(length)]
    chunk = max(1, MAX_BATCH_TOKENS // max(length, 1))
    grid = np.full((layers, len(rows)), float(_metric(model, corrupted.final, target)[0]))
    for layer in range(layers):
        last = (
            site == "residual" and layer == layers - 1
        )  # no layer left: only the target's own position counts
        needed = [
            i
            for i, select in enumerate(rows)
            if not (last and i != target.position)
            and not _changes_nothing(clean, corrupted, site, layer, select)
        ]
        for start in range(0, len(needed), chunk):
            part = needed[start : start + chunk]
            final = patched_final(model, clean, corrupted, site, layer, torch.cat([rows[i] for i in part]))
            grid[layer, part] = _metric(model, final, target).double().numpy()
    return grid


def recovered_share(patched, clean_metric: float, corrupted_metric: float) -> np.ndarray:
    """(patched − corrupted) / (clean − corrupted): 0 = nothing came back, 1 = the clean run's metric; nan when the
    two runs differ by less than MIN_GAP (a share of nothing)."""
    gap = clean_metric - corrupted_metric
    patched = np.asarray(patched, dtype=np.float64)
    if abs(gap) < MIN_GAP:
        return np.full_like(patched, np.nan)
    return (patched - corrupted_metric) / gap
