"""What a pre-trained BERT knows: fill-in-the-blank guesses and next-sentence judgements, in plain calls."""

from __future__ import annotations

import torch

from bertviz_lite.model.modeling import BertForPreTraining
from bertviz_lite.text.tokenization import BertTokenizer


@torch.inference_mode()
def fill_mask(
    model: BertForPreTraining, tokenizer: BertTokenizer, text: str, k: int = 5
) -> list[tuple[str, float]]:
    """The k most likely tokens for the first [MASK] in `text`, with their probabilities."""
    encoding = tokenizer.encode_pair(text, None, max_length=model.config.max_position_embeddings)
    if tokenizer.mask_token_id not in encoding.input_ids:
        raise ValueError(f"{text!r} has no [MASK] token to fill in")
    position = encoding.input_ids.index(tokenizer.mask_token_id)
    model.eval()
    logits = model.mlm_logits(**{k: v for k, v in encoding.to_tensors().items() if k != "attention_mask"})[
        0, position
    ]
    probs, ids = torch.softmax(logits.float(), -1).topk(k)
    return list(zip(tokenizer.convert_ids_to_tokens(ids.tolist()), probs.tolist(), strict=True))


@torch.inference_mode()
def is_next_probability(
    model: BertForPreTraining, tokenizer: BertTokenizer, text_a: str, text_b: str
) -> float:
    """The model's probability that `text_b` follows `text_a` (NSP head, index 0 = IsNext)."""
    encoding = tokenizer.encode_pair(text_a, text_b, max_length=model.config.max_position_embeddings)
    inputs = encoding.to_tensors()
    model.eval()
    logits = model.next_sentence_logits(
        inputs["input_ids"], inputs["token_type_ids"], inputs["attention_mask"]
    )
    return float(torch.softmax(logits[0].float(), -1)[0])


def probe_mask_position(tokens: list[str], token_type_ids: list[int]) -> int | None:
    """The position a run masks in its probe pair: the longest whole word of sentence A (the first if tied)."""

    def whole_word(i: int) -> bool:
        following = tokens[i + 1] if i + 1 < len(tokens) else ""
        return tokens[i].isalpha() and not following.startswith("##") and token_type_ids[i] == 0

    candidates = [i for i in range(1, len(tokens)) if whole_word(i)]
    return max(candidates, key=lambda i: (len(tokens[i]), -i), default=None)


@torch.inference_mode()
def probe_predictions(
    model: BertForPreTraining, tokenizer: BertTokenizer, text_a: str, text_b: str, max_length: int, k: int = 5
) -> dict | None:
    """What the heads say about the probe pair now, as JSON-ready numbers (None if no word can be masked).

    {"position", "answer", "top_tokens", "top_probs", "answer_prob", "is_next_prob"}: the MLM head's k best
    guesses for the masked `answer` at `position`, the probability it gives the answer, and the NSP head's
    probability that B follows A (on the unmasked pair).
    """
    encoding = tokenizer.encode_pair(text_a, text_b, max_length=max_length)
    position = probe_mask_position(encoding.tokens, encoding.token_type_ids)
    if position is None:
        return None
    device = next(model.parameters()).device
    inputs = {name: tensor.to(device) for name, tensor in encoding.to_tensors().items()}
    masked = inputs["input_ids"].clone()
    masked[0, position] = tokenizer.mask_token_id
    was_training = model.training
    model.eval()
    probs = torch.softmax(
        model.mlm_logits(masked, inputs["token_type_ids"], attention_mask=inputs["attention_mask"])[
            0, position
        ].float(),
        -1,
    )
    nsp = model.next_sentence_logits(inputs["input_ids"], inputs["token_type_ids"], inputs["attention_mask"])
    model.train(was_training)
    top_probs, top_ids = probs.topk(k)
    return {
        "position": position,
        "answer": encoding.tokens[position],
        "top_tokens": tokenizer.convert_ids_to_tokens(top_ids.tolist()),
        "top_probs": top_probs.tolist(),
        "answer_prob": float(probs[encoding.input_ids[position]]),
        "is_next_prob": float(torch.softmax(nsp[0].float(), -1)[0]),
    }
