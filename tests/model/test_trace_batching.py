"""bertviz_lite.model.batching: a padded batch's trace cut back into one trace per sentence equals each sentence's
lone trace, and TraceBatcher runs the traces that threads ask for together as one pass."""

from __future__ import annotations

import threading
from dataclasses import fields, is_dataclass

import pytest
import torch

from bertviz_lite.inspection import explore
from bertviz_lite.loading.pretrained import ENGLISH, load
from bertviz_lite.model.batching import TraceBatcher, pad_inputs, split_trace
from tests.app.tiny_checkpoint import build_tiny

SENTENCES = [
    ("The cat sat on the mat.", None),
    ("A small bird sings in the tall green tree near the old river bank.", "It fell asleep."),
    ("Hi", None),
    ("The dog ran to the park and played with a ball.", "Children play near the river on a warm afternoon."),
]


@pytest.fixture(scope="module", params=["tiny", "english"])
def model_and_tokenizer(request):
    return build_tiny(max_positions=64) if request.param == "tiny" else load(ENGLISH)


def _inputs(tokenizer, text_a, text_b):
    return explore.encode(tokenizer, text_a, text_b, 64).to_tensors()


def _assert_same(split, lone, path="trace"):
    """Every field of two traces (nested records, tuples, tensors): the same shapes exactly, values within 1e-5."""
    if is_dataclass(lone):
        assert type(split) is type(lone), path
        for spec in fields(lone):
            _assert_same(getattr(split, spec.name), getattr(lone, spec.name), f"{path}.{spec.name}")
    elif isinstance(lone, tuple):
        assert len(split) == len(lone), path
        for index, (a, b) in enumerate(zip(split, lone, strict=True)):
            _assert_same(a, b, f"{path}[{index}]")
    elif lone is None:
        assert split is None, path
    else:
        assert split.shape == lone.shape, path
        torch.testing.assert_close(split, lone, atol=1e-5, rtol=1e-4, msg=path)


def test_the_split_of_a_padded_batch_equals_each_lone_trace(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    requests = [_inputs(tokenizer, a, b) for a, b in SENTENCES]
    batch, lengths = pad_inputs(requests, model.config.pad_token_id)
    assert len(set(lengths)) == len(lengths) and batch["input_ids"].shape == (len(requests), max(lengths))
    with torch.inference_mode():
        batched = model.trace(**batch, heads=True)
        lone = [model.trace(**request, heads=True) for request in requests]
    for row, length in enumerate(lengths):  # padded keys get no attention at all, not merely little
        for probs in batched.attentions:
            assert bool((probs[row, :, :, length:] == 0).all())
    parts = split_trace(batched, lengths)
    assert len(parts) == len(requests)
    for part, alone in zip(parts, lone, strict=True):
        assert part.mlm_logits is not None and part.nsp_logits is not None
        _assert_same(part, alone)
        assert part.attentions[0].is_contiguous()  # its own storage, not a view into the batch


def test_a_tensor_field_without_token_axes_is_refused():
    model, tokenizer = build_tiny()
    with torch.inference_mode():
        trace = model.trace(**_inputs(tokenizer, "The cat sat.", None))
    trace.embeddings = (torch.zeros(1, 3),)  # a tuple of tensors where no axes are declared
    with pytest.raises(TypeError, match="token axes"):
        split_trace(trace, [3])


def test_threads_asking_together_share_one_pass_and_each_get_their_own_trace():
    model, tokenizer = build_tiny(max_positions=64)
    batcher = TraceBatcher(
        model, window_s=30.0, max_batch=len(SENTENCES)
    )  # the batch closes when all have come
    requests = [_inputs(tokenizer, a, b) for a, b in SENTENCES]
    results: dict[int, object] = {}

    def ask(index):
        results[index] = batcher.trace(requests[index], max_length=64)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert batcher.passes == 1 and sorted(results) == list(range(len(requests)))
    with torch.inference_mode():
        for index, request in enumerate(requests):
            _assert_same(results[index], model.trace(**request, heads=False))


def test_an_error_of_the_pass_reaches_every_caller_of_the_batch():
    model, tokenizer = build_tiny(max_positions=64)
    batcher = TraceBatcher(model, window_s=30.0, max_batch=2)
    good = _inputs(tokenizer, "The cat sat.", None)
    bad = {
        **good,
        "input_ids": torch.full_like(good["input_ids"], model.config.vocab_size + 5),
    }  # no such token
    errors: list[BaseException] = []

    def ask(inputs):
        try:
            batcher.trace(inputs, max_length=64)
        except IndexError as err:
            errors.append(err)

    threads = [threading.Thread(target=ask, args=(inputs,)) for inputs in (good, bad)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(errors) == 2
    batcher.window_s = 0.0
    assert batcher.trace(good, max_length=64).attention_mask.shape == (
        1,
        good["input_ids"].shape[1],
    )  # it goes on


def test_trace_pair_batched_alone_is_the_plain_trace():
    model, tokenizer = build_tiny(max_positions=64)
    batched = explore.trace_pair(model, tokenizer, *SENTENCES[1])
    plain = explore.trace_pair(model, tokenizer, *SENTENCES[1], batched=False)
    _assert_same(batched.output, plain.output)
    assert batched.tokens == plain.tokens


def test_a_long_input_is_traced_alone_at_once():
    model, tokenizer = build_tiny(max_positions=64)
    batcher = TraceBatcher(
        model, window_s=30.0, max_tokens=8
    )  # a batched request would wait the whole window
    inputs = _inputs(tokenizer, *SENTENCES[3])
    assert inputs["input_ids"].shape[1] > 8
    trace = batcher.trace(inputs, max_length=64)
    assert batcher.passes == 0 and trace.attentions[0].shape[-1] == inputs["input_ids"].shape[1]
