"""One word across many sentences: its contextual vector at every layer, how well its senses separate, and its
nearest neighbours among the words of the WordNet sense index (text/corpora/senses.py).

Plain numpy and torch. Sentences run through the model in padded batches (fused attention, no intermediates
kept but the hidden states), sorted by length so that little padding is computed. A word split into several
WordPieces gets the mean of its pieces' vectors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from bertviz_lite.model.attention_masks import additive_mask
from bertviz_lite.model.modeling import BertForPreTraining
from bertviz_lite.text.tokenization import BertTokenizer, Encoding

BATCH_SIZE = 64
MAX_LENGTH = 128  # tokens per sentence; a WordNet example is about 13
TIE = 1e-6  # cosine similarities this close count as a tie (an input embedding is the same in every sentence)


@dataclass(frozen=True)
class WordSpan:
    """A word to read in a sentence: the sentence and the character span of the word."""

    text: str
    start: int
    end: int


@torch.no_grad()
def hidden_states(
    model: BertForPreTraining, input_ids: Tensor, attention_mask: Tensor, num_layers: int | None = None
) -> list[Tensor]:
    """The embedding output, then each layer's output up to `num_layers` (all by default): each (B, T, H).

    Segment 0 everywhere (one sentence per row); the same numbers as transformers' output_hidden_states.
    """
    model.eval()
    token_type_ids = torch.zeros_like(input_ids)
    position_ids = torch.arange(input_ids.shape[1]).unsqueeze(0)
    hidden = model.bert.embeddings(input_ids, token_type_ids, position_ids)
    mask = additive_mask(attention_mask, hidden.dtype)
    states = [hidden]
    for layer in model.bert.encoder.layer[:num_layers]:
        hidden = layer(hidden, mask)
        states.append(hidden)
    return states


def word_positions(encoding: Encoding, start: int, end: int) -> list[int]:
    """Token positions whose characters overlap [start, end) in sentence A; [] when truncation cut the word."""
    return [
        i
        for i, (seq, (a, b)) in enumerate(zip(encoding.sequence_ids, encoding.offsets, strict=True))
        if seq == 0 and a < end and b > start
    ]


def _batches(encodings: Sequence[Encoding], batch_size: int):
    """(row numbers, input_ids, attention_mask) for batches of similar length (longest first)."""
    order = sorted(range(len(encodings)), key=lambda i: -len(encodings[i].input_ids))
    for first in range(0, len(order), batch_size):
        rows = order[first : first + batch_size]
        length = len(encodings[rows[0]].input_ids)
        ids = torch.zeros(len(rows), length, dtype=torch.long)
        mask = torch.zeros(len(rows), length, dtype=torch.long)
        for row, number in enumerate(rows):
            sentence = encodings[number].input_ids
            ids[row, : len(sentence)] = torch.tensor(sentence)
            mask[row, : len(sentence)] = 1
        yield rows, ids, mask


def _max_length(model: BertForPreTraining) -> int:
    return min(MAX_LENGTH, model.config.max_position_embeddings)


def encode_spans(tokenizer: BertTokenizer, spans: Sequence[WordSpan], max_length: int = MAX_LENGTH):
    """Each span's sentence tokenized once; (encodings of the distinct sentences, sentence number per span, pieces)."""
    texts = list(dict.fromkeys(span.text for span in spans))
    encodings = tokenizer.encode_batch_pairs([(text, None) for text in texts], max_length=max_length)
    number = {text: i for i, text in enumerate(texts)}
    sentence_of = [number[span.text] for span in spans]
    pieces = [word_positions(encodings[sentence_of[i]], span.start, span.end) for i, span in enumerate(spans)]
    return encodings, sentence_of, pieces


def span_vectors(
    model: BertForPreTraining,
    tokenizer: BertTokenizer,
    spans: Sequence[WordSpan],
    num_layers: int | None = None,
    batch_size: int = BATCH_SIZE,
) -> tuple[np.ndarray, list[list[int]]]:
    """Each span's vector at the embedding output and every layer up to num_layers: [L + 1, N, H] float32,
    the mean over the word's pieces; and the pieces' token positions ([] and a zero vector for a cut word)."""
    encodings, sentence_of, pieces = encode_spans(tokenizer, spans, _max_length(model))
    wanted: dict[int, list[int]] = {}
    for span_number, sentence in enumerate(sentence_of):
        wanted.setdefault(sentence, []).append(span_number)
    depth = (model.config.num_hidden_layers if num_layers is None else num_layers) + 1
    vectors = np.zeros((depth, len(spans), model.config.hidden_size), dtype=np.float32)
    for rows, ids, mask in _batches(encodings, batch_size):
        states = torch.stack(hidden_states(model, ids, mask, num_layers)).numpy()  # (L + 1, B, T, H)
        for row, sentence in enumerate(rows):
            for span_number in wanted.get(sentence, ()):
                if pieces[span_number]:
                    vectors[:, span_number] = states[:, row, pieces[span_number]].mean(axis=1)
    return vectors, pieces


def static_vectors(
    model: BertForPreTraining, tokenizer: BertTokenizer, spans: Sequence[WordSpan]
) -> np.ndarray:
    """The context-free baseline: each word's input token embedding (mean over its pieces), no position: [N, H]."""
    encodings, sentence_of, pieces = encode_spans(tokenizer, spans, _max_length(model))
    table = model.bert.embeddings.word_embeddings.weight.detach()
    rows = []
    for span_number, positions in enumerate(pieces):
        ids = [encodings[sentence_of[span_number]].input_ids[p] for p in positions]
        rows.append(table[ids].mean(0).numpy() if ids else np.zeros(table.shape[1], dtype=np.float32))
    return np.stack(rows).astype(np.float32) if rows else np.zeros((0, table.shape[1]), np.float32)


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (a zero row stays zero)."""
    x = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0)


def loo_centroid_accuracy(vectors: np.ndarray, labels: Sequence[str]) -> float:
    """Leave-one-out nearest-centroid accuracy with cosine similarity, over labels that occur at least twice.

    Each vector is held out, every sense's centroid (the mean of its unit vectors, without the held-out one)
    is compared with it, and the most similar sense is the guess. Ties share the credit (1/number tied), so a
    word whose vectors are all equal scores exactly chance. NaN when fewer than two senses occur twice.
    """
    labels = np.asarray(labels, dtype=object)
    names, counts = np.unique(labels, return_counts=True)
    keep = np.isin(labels, names[counts >= 2])
    names = names[counts >= 2]
    if len(names) < 2:
        return float("nan")
    x = unit_rows(vectors[keep])
    labels = labels[keep]
    member = np.stack([labels == name for name in names]).astype(np.float64)  # (C, N)
    sums = member @ x  # (C, H), (C,)
    counts = member.sum(1)
    similarity = np.empty((len(x), len(names)))
    for c in range(len(names)):
        own = member[c].astype(bool)
        centroids = np.where(own[:, None], (sums[c] - x) / np.maximum(counts[c] - 1, 1), sums[c] / counts[c])
        similarity[:, c] = (unit_rows(centroids) * x).sum(1)
    best = similarity >= similarity.max(1, keepdims=True) - TIE
    truth = member.T.astype(bool)
    return float(((best & truth).sum(1) / best.sum(1)).mean())
