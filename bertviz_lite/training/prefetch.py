"""Batches made ahead in a background thread, so that a GPU does not wait for the CPU's collation.

On a GPU a step of all-MiniLM-L6-v2 at batch 256 took ~69 ms, of which ~50 ms were the collator's tokenizing,
padding and masking on the CPU (bench/RESULTS.md, "English model, round 2"): made in a thread while the GPU works,
a batch is ready when the step before it ends. The batches and their order are the same as made one by one.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")
# Batches a GPU run keeps ready. A CPU run makes them one by one: the core a thread would take is the app server's
# (lifecycle.training_threads).
PREFETCH_DEPTH = 2
THREAD_NAME = "batch-prefetch"
_PUT_EVERY_S = 0.1  # how often a full queue's producer looks whether it was closed


class Prefetcher(Generic[T]):
    """Calls `make()` over and over in a thread, keeping up to `depth` results ready; `next()` returns them in order.

    An exception in `make` is raised by the `next()` that would have returned its result; `close()` stops the
    thread and drops what was made ahead.
    """

    def __init__(self, make: Callable[[], T], depth: int = 2):
        if depth < 1:
            raise ValueError(f"depth ({depth}) must be at least 1")
        self._make = make
        self._ready: queue.Queue[tuple[T | None, BaseException | None]] = queue.Queue(maxsize=depth)
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._fill, name=THREAD_NAME, daemon=True)
        self._thread.start()

    def _fill(self) -> None:
        failed = False
        while not failed and not self._closed.is_set():
            try:
                made: tuple[T | None, BaseException | None] = (self._make(), None)
            except BaseException as err:  # handed to the consumer, whose next() raises it
                made = (None, err)
                failed = True
            while not self._closed.is_set():
                try:
                    self._ready.put(made, timeout=_PUT_EVERY_S)
                    break
                except queue.Full:
                    continue

    def next(self) -> T:
        """The next result, waiting for it if it is not made yet."""
        value, error = self._ready.get()
        if error is not None:
            raise error
        return value  # type: ignore[return-value]

    def close(self) -> None:
        """Stop making results (the one being made is finished and dropped)."""
        self._closed.set()
        self._thread.join()


@contextlib.contextmanager
def made_ahead(make: Callable[[], T], depth: int) -> Iterator[Callable[[], T]]:
    """`make` itself with depth 0; else the `next` of a Prefetcher of `make`, closed when the block ends."""
    if not depth:
        yield make
        return
    ahead = Prefetcher(make, depth)
    try:
        yield ahead.next
    finally:
        ahead.close()
