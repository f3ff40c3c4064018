"""A tiny random BERT with MLM/NSP heads, saved as a Hugging Face folder: a stand-in for demo-tiny in tests."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import torch
from safetensors.torch import save_file

from bertviz_lite.model.config import BertConfig
from bertviz_lite.model.modeling import BertForPreTraining
from bertviz_lite.text.tokenization import BertTokenizer

TEXTS = [
    "The cat sat on the mat because it was tired.",
    "It fell asleep in the warm sun.",
    "The dog ran to the park and played with a ball.",
    "A small bird sings in the tall green tree.",
    "Children play near the old river bank on a warm afternoon.",
] * 4


def build_tiny(
    max_positions: int = 64, seed: int = 0, num_layers: int = 2, num_heads: int = 4
) -> tuple[BertForPreTraining, BertTokenizer]:
    """hidden 32, 2 layers, 4 heads (by default); the vocabulary is learned from TEXTS."""
    tokenizer = BertTokenizer.train(TEXTS, vocab_size=120, min_frequency=1)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        intermediate_size=64,
        max_position_embeddings=max_positions,
    )
    return BertForPreTraining(config).eval(), tokenizer


def save_tiny(folder: Path, max_positions: int = 64, **sizes) -> Path:
    """Write config.json, vocab.txt and model.safetensors of build_tiny() into folder."""
    model, tokenizer = build_tiny(max_positions, **sizes)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(model.config.to_hf_dict()), encoding="utf-8")
    tokenizer.save_vocab(folder / "vocab.txt")
    save_file(model.hf_state_dict(), str(folder / "model.safetensors"))
    return folder


def zip_of(members: dict[str, bytes]) -> bytes:
    """A zip archive in memory holding these members (name -> bytes), as a browser would upload it."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()
