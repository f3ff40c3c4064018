"""What a pre-trained BERT knows: fill-in-the-blank guesses and next-sentence judgements, in plain calls."""

from __future__ import annotations

import torch

from bertviz_lite.model import Bert
from bertviz_lite.tokenization import BertTokenizer


@torch.inference_mode()
def fill_mask(model: Bert, tokenizer: BertTokenizer, text: str, k: int = 5) -> list[tuple[str, float]]:
    """The k most likely tokens for the first [MASK] in `text`, with their probabilities."""
    encoding = tokenizer.encode_pair(text, None, max_length=model.config.max_position_embeddings)
    if tokenizer.mask_token_id not in encoding.input_ids:
        raise ValueError(f"{text!r} has no [MASK] token to fill in")
    position = encoding.input_ids.index(tokenizer.mask_token_id)
    model.eval()
    logits = model(**{k: v for k, v in encoding.to_tensors().items() if k != "attention_mask"})[0, position]
    probs, ids = torch.softmax(logits.float(), -1).topk(k)
    return list(zip(tokenizer.convert_ids_to_tokens(ids.tolist()), probs.tolist(), strict=True))


@torch.inference_mode()
def is_next_probability(model: Bert, tokenizer: BertTokenizer, text_a: str, text_b: str) -> float:
    """The model's probability that `text_b` follows `text_a` (NSP head, index 0 = IsNext)."""
    encoding = tokenizer.encode_pair(text_a, text_b, max_length=model.config.max_position_embeddings)
    inputs = encoding.to_tensors()
    model.eval()
    logits = model.next_sentence_logits(inputs["input_ids"], inputs["token_type_ids"], inputs["attention_mask"])
    return float(torch.softmax(logits[0].float(), -1)[0])
