"""Many sentences, one traced pass: pad a batch, trace it once, cut the trace back into one trace per sentence.

For a short input (a dozen tokens) a traced pass of a small BERT costs mostly per-call overhead, so sixteen sentences
cost little more than one. `TraceBatcher` gathers the traces that threads ask for at the same moment (a lecture hall
typing together) into one padded pass; `split_trace` gives each caller exactly the trace its input alone would have
given: padded keys get zero attention (the additive mask is the dtype's minimum), and every field is cut by its
declared token axes (outputs.token_axes).
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import fields, is_dataclass
from typing import Any

import torch
from torch import Tensor

from bertviz_lite.model.modeling import BertForPreTraining
from bertviz_lite.model.outputs import BertTrace

INPUT_NAMES = ("input_ids", "token_type_ids", "attention_mask")


def pad_inputs(requests: list[dict[str, Tensor]], pad_token_id: int) -> tuple[dict[str, Tensor], list[int]]:
    """Inputs of batch one each ([1, T_i] input_ids, token_type_ids, attention_mask) -> one padded batch [N, max T_i]
    (padding: pad_token_id, segment 0, attention 0) and the lengths T_i."""
    lengths = [int(request["input_ids"].shape[1]) for request in requests]
    longest = max(lengths)
    fill = {"input_ids": pad_token_id, "token_type_ids": 0, "attention_mask": 0}
    batch = {}
    for name in INPUT_NAMES:
        padded = torch.full((len(requests), longest), fill[name], dtype=torch.long)
        for row, (request, length) in enumerate(zip(requests, lengths, strict=True)):
            padded[row, :length] = request[name][0]
        batch[name] = padded
    return batch, lengths


def _cut(value: Any, axes: tuple[int, ...] | None, row: int, length: int) -> Any:
    if value is None:
        return None
    if isinstance(value, tuple):
        return tuple(_cut(item, axes, row, length) for item in value)
    if is_dataclass(value):
        return _split_one(value, row, length)
    if axes is None:
        raise TypeError("a trace tensor field must declare its token axes (outputs.token_axes)")
    index = [slice(None)] * value.dim()
    index[0] = slice(row, row + 1)
    for axis in axes:
        index[axis] = slice(0, length)
    return value[tuple(index)].clone()  # its own storage: a cached trace must not keep the whole batch alive


def _split_one(record: Any, row: int, length: int) -> Any:
    cut = {
        spec.name: _cut(getattr(record, spec.name), spec.metadata.get("token_axes"), row, length)
        for spec in fields(record)
    }
    return type(record)(**cut)


def split_trace(batched: BertTrace, lengths: list[int]) -> list[BertTrace]:
    """One BertTrace (batch of one) per example of a padded batch's trace, its padding cut off: what the example
    alone would have given, up to float rounding."""
    return [_split_one(batched, row, length) for row, length in enumerate(lengths)]


class _Batch:
    """Requests gathered for one padded pass: the first caller runs it, every caller waits for `done`."""

    def __init__(self, key: tuple) -> None:
        self.key = key
        self.requests: list[dict[str, Tensor]] = []
        self.full = threading.Event()
        self.done = threading.Event()
        self.results: list[BertTrace] = []
        self.error: BaseException | None = None


class TraceBatcher:
    """Traces asked for by many threads at once on one model, run as one padded `model.trace` per batch.

    The first caller waits `window_s` (or until `max_batch` requests) for others with the same key (max_length and
    heads), then, once the model's previous batch is done, traces them together; a lone caller pays at most the
    window. Batches run one at a time, so requests arriving during one pass form the next batch. An error of the
    pass is raised to every caller of the batch. Inputs longer than `max_tokens` are traced alone at once: their pass
    is no longer mostly overhead, and a batch of them would hold max_batch (T x T) attention maps per layer.
    """

    def __init__(
        self, model: BertForPreTraining, window_s: float = 0.01, max_batch: int = 32, max_tokens: int = 64
    ) -> None:
        self._model = weakref.ref(model)
        self.window_s = window_s
        self.max_batch = max_batch
        self.max_tokens = max_tokens
        self._lock = threading.Lock()
        self._open: dict[tuple, _Batch] = {}
        self._running = threading.Lock()
        self.passes = 0  # padded passes run, for benchmarks and tests

    def trace(self, inputs: dict[str, Tensor], max_length: int, heads: bool | None = False) -> BertTrace:
        """model.trace(**inputs, heads=heads) for inputs of batch one (input_ids, token_type_ids, attention_mask)."""
        model = self._model()
        if model is None:
            raise RuntimeError("the model of this TraceBatcher is gone")
        inputs = {name: inputs[name] for name in INPUT_NAMES}
        shape = tuple(inputs["input_ids"].shape)
        if (
            len(shape) != 2
            or shape[0] != 1
            or shape[1] > min(self.max_tokens, model.config.max_position_embeddings)
        ):
            with torch.inference_mode():
                return model.trace(
                    **inputs, heads=heads
                )  # alone: a long input, or its own error, not the batch's
        key = (max_length, heads)
        with self._lock:
            batch = self._open.get(key)
            leader = batch is None
            if leader:
                batch = self._open[key] = _Batch(key)
            index = len(batch.requests)
            batch.requests.append(inputs)
            if len(batch.requests) >= self.max_batch:
                self._close(batch)
        if leader:
            self._run(model, batch, heads)
        batch.done.wait()
        if batch.error is not None:
            raise batch.error
        return batch.results[index]

    def _close(self, batch: _Batch) -> None:
        """No more requests join the batch (the lock is held)."""
        if self._open.get(batch.key) is batch:
            del self._open[batch.key]
        batch.full.set()

    def _run(self, model: BertForPreTraining, batch: _Batch, heads: bool | None) -> None:
        try:
            batch.full.wait(self.window_s)
            with self._running:  # the previous pass ends first; meanwhile the batch still gathers
                with self._lock:
                    self._close(batch)
                padded, lengths = pad_inputs(batch.requests, model.config.pad_token_id)
                with torch.inference_mode():
                    output = model.trace(**padded, heads=heads)
                    batch.results = split_trace(output, lengths) if len(lengths) > 1 else [output]
                self.passes += 1
        except BaseException as err:
            batch.error = err
            raise
        finally:
            with self._lock:
                self._close(batch)
            batch.done.set()


_BATCHERS: weakref.WeakKeyDictionary[BertForPreTraining, TraceBatcher] = weakref.WeakKeyDictionary()
_BATCHERS_LOCK = threading.Lock()


def batcher_for(model: BertForPreTraining) -> TraceBatcher:
    """The one TraceBatcher of a model object, made on first use."""
    with _BATCHERS_LOCK:
        batcher = _BATCHERS.get(model)
        if batcher is None:
            batcher = _BATCHERS[model] = TraceBatcher(model)
        return batcher
