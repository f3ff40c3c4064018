"""BERT's special tokens and text normalisation, shared by the tokenizer and the vocabulary trainer."""

from __future__ import annotations

import re

from tokenizers import normalizers

PAD_TOKEN = "[PAD]"
UNK_TOKEN = "[UNK]"
CLS_TOKEN = "[CLS]"
SEP_TOKEN = "[SEP]"
MASK_TOKEN = "[MASK]"
SPECIAL_TOKENS = (PAD_TOKEN, UNK_TOKEN, CLS_TOKEN, SEP_TOKEN, MASK_TOKEN)
_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_surrogates(text: str) -> str:
    """`text` with each surrogate code point (not encodable on its own) replaced by U+FFFD; same length."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


def bert_normalizer(lowercase: bool) -> normalizers.BertNormalizer:
    """The normaliser BertTokenizerFast uses: clean control characters, space CJK, optionally lowercase."""
    return normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=lowercase
    )
