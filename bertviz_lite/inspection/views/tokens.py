"""The data behind the tokens views: the encoding as a table, and BERT's masking of it."""

from __future__ import annotations

import pandas as pd
import torch

from bertviz_lite.model.loss_rows import IGNORE_INDEX
from bertviz_lite.text.masking import DECISION_NAMES, MaskingResult, mask_tokens
from bertviz_lite.text.tokenization import BertTokenizer, Encoding

# What `bertviz_lite.inspection.views` offers at its top (its __init__ lists them by name).
__all__ = ["encoding_frame", "mask_encoding", "masking_frame"]


def encoding_frame(encoding: Encoding) -> pd.DataFrame:
    """One row per token: token, id, segment, position, attention mask, source word."""
    return pd.DataFrame(
        {
            "token": encoding.tokens,
            "id": encoding.input_ids,
            "segment": encoding.token_type_ids,
            "position": encoding.position_ids,
            "attention_mask": encoding.attention_mask,
            "word": [w if w is not None else "" for w in encoding.words],
        }
    )


def mask_encoding(encoding: Encoding, tokenizer: BertTokenizer, mask_prob: float, seed: int) -> MaskingResult:
    """BERT's 15% / 80-10-10 corruption of one encoding, reproducible from the seed."""
    ids = torch.tensor(encoding.input_ids, dtype=torch.long)
    special = torch.tensor(encoding.special_tokens_mask, dtype=torch.long)
    generator = torch.Generator().manual_seed(int(seed))
    ordinary = sorted(set(range(tokenizer.vocab_size)) - set(tokenizer.all_special_ids))
    return mask_tokens(
        ids,
        special,
        mask_token_id=tokenizer.mask_token_id,
        vocab_size=tokenizer.vocab_size,
        mask_prob=float(mask_prob),
        generator=generator,
        random_token_ids=torch.tensor(ordinary or [tokenizer.unk_token_id]),
    )


def masking_frame(encoding: Encoding, result: MaskingResult, tokenizer: BertTokenizer) -> pd.DataFrame:
    """One row per token: original, what the model sees, the decision, and the MLM label."""
    labels = result.labels.tolist()
    return pd.DataFrame(
        {
            "position": encoding.position_ids,
            "original": encoding.tokens,
            "model input": tokenizer.convert_ids_to_tokens(result.input_ids.tolist()),
            "decision": [DECISION_NAMES[int(d)] for d in result.decisions.tolist()],
            "MLM label": [tokenizer.convert_ids_to_tokens(x) if x != IGNORE_INDEX else "" for x in labels],
        }
    )
