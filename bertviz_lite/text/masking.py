"""BERT's masked-language-model corruption: choose 15% of tokens (or of whole words), then 80% [MASK] / 10% random / 10% kept."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from bertviz_lite.model.loss_rows import IGNORE_INDEX

NOT_CHOSEN = 0
MASKED = 1
RANDOM = 2
KEPT = 3
DECISION_NAMES = {NOT_CHOSEN: "not chosen", MASKED: "[MASK]", RANDOM: "random token", KEPT: "kept"}


@dataclass
class MaskingResult:
    """The corrupted ids, the MLM labels, and what happened at each position."""

    input_ids: torch.Tensor  # masked copy, same shape as the input
    labels: torch.Tensor  # original id where chosen, -100 elsewhere
    decisions: torch.Tensor  # NOT_CHOSEN / MASKED / RANDOM / KEPT per position


def mask_tokens(
    input_ids: torch.Tensor,
    special_tokens_mask: torch.Tensor,
    *,
    mask_token_id: int,
    vocab_size: int,
    mask_prob: float = 0.15,
    generator: torch.Generator | None = None,
    random_token_ids: torch.Tensor | None = None,
    attention_mask: torch.Tensor | None = None,
    continuation_mask: torch.Tensor | None = None,
    repeatable_mask: torch.Tensor | None = None,
) -> MaskingResult:
    """Corrupt input_ids for masked language modelling, as in BERT and HF's DataCollatorForLanguageModeling.

    Args:
        input_ids: LongTensor [B, T] or [T].
        special_tokens_mask: same shape, True (or 1) for [CLS]/[SEP]/... AND for padding; never chosen.
        mask_token_id: id written at positions turned into [MASK].
        vocab_size: random replacements come from range(vocab_size) unless random_token_ids is given.
        mask_prob: chance that each eligible token is chosen, independently.
        generator: makes the result reproducible; must live on input_ids' device.
        random_token_ids: ids to draw random replacements from (e.g. all non-special ids).
        attention_mask: optional; positions where it is 0 are never chosen either.
        continuation_mask: whole-word masking when given: True where a token continues the word before it
            (a "##" piece); each word is chosen with mask_prob and then all its pieces are, so the model
            cannot fill a piece from the rest of its own word. The 80/10/10 draw stays per token, as in BERT.
        repeatable_mask: when given, True where a token starts a word (a content word, say) whose every
            occurrence in the row is chosen with it: the same first token, with all its pieces under whole-word
            masking. Such an answer is never visible elsewhere in the input, so copying it is never rewarded.
    Returns:
        MaskingResult with input_ids (masked copy), labels and decisions, all shaped like input_ids.
    """
    _check_arguments(input_ids, special_tokens_mask, mask_prob, vocab_size, attention_mask, continuation_mask)
    eligible = ~special_tokens_mask.bool()
    if attention_mask is not None:
        eligible &= attention_mask.bool()
    if continuation_mask is None:
        chosen = _bernoulli(eligible.float() * mask_prob, generator)
    else:
        chosen = _choose_whole_words(eligible, continuation_mask.bool(), mask_prob, generator)
    if repeatable_mask is not None:
        chosen = _with_repeats(input_ids, chosen, eligible & repeatable_mask.bool(), continuation_mask)
    to_mask = chosen & _bernoulli(torch.full_like(chosen, 0.8, dtype=torch.float), generator)
    to_random = chosen & ~to_mask & _bernoulli(torch.full_like(chosen, 0.5, dtype=torch.float), generator)
    pool = _random_pool(random_token_ids, vocab_size, input_ids.device)
    random_ids = pool[torch.randint(len(pool), input_ids.shape, generator=generator, device=input_ids.device)]

    masked = input_ids.clone()
    masked[to_mask] = mask_token_id
    masked[to_random] = random_ids[to_random]
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, IGNORE_INDEX))
    decisions = torch.full_like(input_ids, NOT_CHOSEN)
    decisions[chosen] = KEPT
    decisions[to_mask] = MASKED
    decisions[to_random] = RANDOM
    return MaskingResult(input_ids=masked, labels=labels, decisions=decisions)


def _choose_whole_words(
    eligible: torch.Tensor, continuation: torch.Tensor, mask_prob: float, generator: torch.Generator | None
) -> torch.Tensor:
    """Choose each word (a start token and the "##" pieces after it) with mask_prob; True on all its tokens."""
    shape = eligible.shape
    eligible = eligible.reshape(-1, shape[-1])  # (B, T)
    continuation = continuation.reshape(-1, shape[-1])
    previous_eligible = torch.nn.functional.pad(eligible[:, :-1], (1, 0), value=False)
    starts = eligible & (~continuation | ~previous_eligible)  # a piece after [SEP] or padding starts a word
    word = starts.long().cumsum(dim=1)  # (B, T): 1 for the first word of the row, 2 for the next, ...
    start_chosen = _bernoulli(starts.float() * mask_prob, generator)
    word_chosen = torch.zeros(
        eligible.shape[0], eligible.shape[1] + 1, dtype=torch.bool, device=eligible.device
    )
    word_chosen.scatter_(1, word * starts, start_chosen & starts)  # column 0 collects the non-starts (False)
    chosen = word_chosen.gather(1, word) & eligible & (word > 0)
    return chosen.reshape(shape)


def _with_repeats(
    input_ids: torch.Tensor, chosen: torch.Tensor, repeatable: torch.Tensor, continuation: torch.Tensor | None
) -> torch.Tensor:
    """`chosen` plus every word of its row that starts with the token of a chosen, repeatable word start."""
    shape = input_ids.shape
    ids, chosen, repeatable = (x.reshape(-1, shape[-1]) for x in (input_ids, chosen, repeatable))
    pieces = torch.zeros_like(chosen) if continuation is None else continuation.bool().reshape(chosen.shape)
    starts = repeatable & ~pieces
    same = ids.unsqueeze(2) == ids.unsqueeze(1)  # (B, T, T): the token at t equals the token at u
    repeated = (same & (chosen & starts).unsqueeze(1)).any(dim=2) & starts
    word = (~pieces).long().cumsum(dim=1)  # each piece belongs to the word begun by the last start before it
    word_repeated = torch.zeros(ids.shape[0], ids.shape[1] + 1, dtype=torch.bool, device=ids.device)
    word_repeated.scatter_(1, word * starts, repeated)
    return (chosen | (word_repeated.gather(1, word) & (word > 0) & (repeated | pieces))).reshape(shape)


def _bernoulli(probabilities: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    return torch.bernoulli(probabilities, generator=generator).bool()


def _random_pool(
    random_token_ids: torch.Tensor | None, vocab_size: int, device: torch.device
) -> torch.Tensor:
    """The ids a RANDOM replacement is drawn from, uniformly."""
    if random_token_ids is None:
        return torch.arange(vocab_size, device=device)
    pool = torch.as_tensor(random_token_ids, dtype=torch.long, device=device).flatten()
    if pool.numel() == 0:
        raise ValueError("random_token_ids is empty: give at least one id to draw random replacements from.")
    return pool


def _check_arguments(
    input_ids: torch.Tensor,
    special_tokens_mask: torch.Tensor,
    mask_prob: float,
    vocab_size: int,
    attention_mask: torch.Tensor | None,
    continuation_mask: torch.Tensor | None = None,
) -> None:
    """Refuse values that would silently give wrong masks."""
    if not 0.0 < mask_prob < 1.0:
        raise ValueError(f"mask_prob ({mask_prob}) must be between 0 and 1 (exclusive), e.g. 0.15.")
    if vocab_size < 1:
        raise ValueError(f"vocab_size ({vocab_size}) must be at least 1.")
    if input_ids.dtype != torch.long:
        raise ValueError(f"input_ids must be a LongTensor of token ids, got dtype {input_ids.dtype}.")
    others = (
        ("special_tokens_mask", special_tokens_mask),
        ("attention_mask", attention_mask),
        ("continuation_mask", continuation_mask),
    )
    for name, other in others:
        if other is not None and other.shape != input_ids.shape:
            raise ValueError(
                f"{name} has shape {tuple(other.shape)} but input_ids has {tuple(input_ids.shape)}."
            )
