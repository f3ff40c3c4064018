"""The shipped default model, checkpoints/minilm-english: loads, has trained heads, matches transformers, knows English."""

import json
from pathlib import Path

import pytest
import torch
import transformers
from safetensors import safe_open

from bertviz_lite import load
from bertviz_lite.inspection.evaluation import fill_mask, is_next_probability
from bertviz_lite.loading.pretrained import DEFAULT_MODEL, ENGLISH
from bertviz_lite.loading.run_folder import CHECKPOINTS_DIR
from tests.loading.test_pretrained import PAIRS, padded_batch

FOLDER = CHECKPOINTS_DIR / ENGLISH
HELD_OUT = json.loads((Path(__file__).resolve().parents[2] / "bench" / "fill_mask_set.json").read_text())
# Five sentences of the held-out cloze set that the model gets right by a clear margin (top-1 p > 0.25).
CLOZE = {
    "Paris is the [MASK] of France.": "capital",
    "She bought a loaf of [MASK] at the bakery.": "bread",
    "He drove his [MASK] to work.": "car",
    "A week has seven [MASK].": "days",
    "He wrote a [MASK] to his mother.": "letter",
}


@pytest.fixture(scope="module")
def english():
    return load(ENGLISH)


def test_it_is_the_default_and_ships_small_in_float16(english):
    model, tokenizer = english
    assert DEFAULT_MODEL == ENGLISH and model.source == ENGLISH
    assert model.has_mlm_head and model.has_nsp_head
    assert (model.config.num_hidden_layers, model.config.num_attention_heads, tokenizer.vocab_size) == (
        6,
        12,
        30522,
    )
    weights = FOLDER / "model.safetensors"
    assert weights.stat().st_size < 50e6
    with safe_open(str(weights), framework="pt") as handle:
        assert {handle.get_slice(k).get_dtype() for k in handle.keys()} == {"F16"}


def test_logits_equal_transformers_on_the_same_folder(english):
    model, tokenizer = english
    reference = transformers.BertForPreTraining.from_pretrained(
        str(FOLDER), attn_implementation="eager", dtype=torch.float32
    ).eval()
    batch = padded_batch(tokenizer, PAIRS)
    with torch.no_grad():
        theirs = reference(**batch)
    trace = model.trace(**batch)
    valid = batch["attention_mask"].bool()
    # Both sides read the same float16 file into float32, so only float32 arithmetic differs.
    assert (theirs.prediction_logits - trace.mlm_logits)[valid].abs().max() < 1e-4
    assert (theirs.seq_relationship_logits - trace.nsp_logits).abs().max() < 1e-4


@pytest.mark.parametrize(("text", "answer"), CLOZE.items())
def test_fills_in_held_out_blanks(english, text, answer):
    assert text in {item["text"] for item in HELD_OUT["cloze"]}
    guesses = [token for token, _ in fill_mask(*english, text, k=5)]
    assert answer in guesses, guesses


def test_judges_sentence_pairs(english):
    follows = is_next_probability(
        *english, "I went to the store this morning.", "I bought a gallon of milk and some eggs."
    )
    unrelated = is_next_probability(
        *english,
        "I went to the store this morning.",
        "Penguins are flightless birds that live in the Southern Hemisphere.",
    )
    assert follows > 0.9 and unrelated < 0.1, (follows, unrelated)
