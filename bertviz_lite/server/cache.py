"""One cache shared by every visitor of the server: bounded by entries and bytes, idle entries dropped on time.

Streamlit's st.cache_resource bounds a cache by entries only and drops expired entries only when the cache is
next used, so a class that leaves keeps its last 512-token traces (154-230 MB each) for good. SharedCache:
- counts the bytes each entry holds (tensors, arrays, bytes, figures; `estimate_nbytes`) and evicts the least
  recently used entries past `max_entries` or `max_bytes`;
- drops entries idle for longer than their time to live from a daemon thread, without waiting for a caller (a
  large entry after LARGE_TTL_S), then gives the memory back (server/memory.py) when much was freed;
- computes a key once however many callers ask for it together (a lecture hall clicks at the same moment): the
  first caller computes, the others wait for its value, or its error.
Only the cache decides how long a value lives: callers read it where they use it, in a local (pages_app's
`get_trace(ctx)` and `view(...)`), and never keep it in a page's globals, which Streamlit keeps after the run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import logging
import sys
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import torch

from bertviz_lite.server import settings
from bertviz_lite.server.memory import release_memory

T = TypeVar("T")
MB = 1024 * 1024
SAMPLED_ITEMS = (
    256  # a long list's size is extrapolated from this many items (hover texts can be 262,144 strings)
)
RELEASE_FROM_BYTES = 16 * MB  # a sweep that frees this much gives the memory back to the system
LARGE_BYTES = 64 * MB  # a large entry (a trace of hundreds of tokens) is kept while it is shown
LARGE_TTL_S = 120.0
COLLECT_EVERY_S = 30.0  # while a dropped large value is still alive, a full collection at most this often
GROWS_WITHIN_S = 10.0  # a growing entry is measured again by each sweep this long after it was last used


@dataclass
class Entry:
    value: Any
    nbytes: int
    ttl_s: float
    last_used: float
    resize: Callable[[Any], int] | None = (
        None  # a value that grows after it is stored is measured again each sweep
    )


class _Flight:
    """One computation in progress; callers of the same key wait on `done`."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: Any = None
        self.error: Exception | None = None
        self.abandoned = (
            False  # the computing caller was interrupted (a Streamlit rerun): a waiter computes instead
        )


class SharedCache:
    """A thread-safe, single-flight LRU cache bounded by entries, bytes and idle time (see the module's docstring)."""

    def __init__(
        self,
        max_entries: int,
        max_bytes: int,
        ttl_s: float,
        sweep_s: float | None = None,
        release_from_bytes: int = RELEASE_FROM_BYTES,
        collect_every_s: float = COLLECT_EVERY_S,
    ) -> None:
        if max_entries < 1 or max_bytes < 1 or ttl_s <= 0:
            raise ValueError(
                f"a cache needs room and time (max_entries {max_entries}, max_bytes {max_bytes}, "
                f"ttl_s {ttl_s})"
            )
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.ttl_s = ttl_s
        self.sweep_s = sweep_s or min(
            max(ttl_s / 4, 0.05), 1.0
        )  # a scan of at most max_entries, once a second
        self.release_from_bytes = release_from_bytes
        self.collect_every_s = collect_every_s
        # Large values dropped from the cache that a visitor's session still held (a page's globals, in a cycle with
        # the page's callbacks): memory goes back when they go, and a full collection runs now and then until then.
        self._dropped: list[weakref.ref] = []
        self._last_release = time.monotonic()
        self._entries: OrderedDict[Hashable, Entry] = OrderedDict()  # least recently used first
        self._flights: dict[Hashable, _Flight] = {}
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self.nbytes = 0
        self.computed = 0  # how many values were computed (a hit or a shared flight computes none)
        threading.Thread(
            target=_sweep_while_alive,
            args=(weakref.ref(self), self._closed, self.sweep_s),
            name="bertviz-lite-cache-sweeper",
            daemon=True,
        ).start()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def get(
        self,
        key: Hashable,
        compute: Callable[[], T],
        nbytes: Callable[[T], int] | None = None,
        grows: bool = False,
    ) -> T:
        """The value cached under key, or compute() stored there (once, however many callers ask at once).

        nbytes: how to size the value (estimate_nbytes by default); grows: the value makes more arrays as it is used
        (a trace's numpy views), so each sweep measures it again while it is in use. An error is raised to every
        waiting caller and nothing is cached.
        """
        while True:
            with self._lock:
                entry = self._entries.get(key)
                if entry is not None:
                    entry.last_used = time.monotonic()
                    self._entries.move_to_end(key)
                    return entry.value
                flight = self._flights.get(key)
                leader = flight is None
                if leader:
                    flight = self._flights[key] = _Flight()
            if leader:
                return self._compute(key, flight, compute, nbytes or estimate_nbytes, grows)
            flight.done.wait()
            if flight.error is not None:
                raise flight.error
            if not flight.abandoned:
                return flight.value

    def _compute(self, key, flight: _Flight, compute, nbytes, grows) -> Any:
        try:
            flight.value = value = compute()
        except Exception as err:
            flight.error = err
            raise
        except BaseException:  # a rerun or stop of the computing caller's script: not the others' error
            flight.abandoned = True
            raise
        else:
            self._store(
                key, Entry(value, nbytes(value), self.ttl_s, time.monotonic(), nbytes if grows else None)
            )
            return value
        finally:
            with self._lock:
                self._flights.pop(key, None)
            flight.done.set()

    def _store(self, key: Hashable, entry: Entry) -> None:
        with self._lock:
            self.computed += 1
            if key in self._entries:
                self._drop(key)
            if entry.nbytes > self.max_bytes:
                return  # larger than the whole cache: used by its caller and not kept
            self._entries[key] = entry
            self._count(entry, entry.nbytes)
            self._evict()

    def _count(self, entry: Entry, size: int, counted: int = 0) -> None:
        """Count an entry at size (instead of `counted`); a large one is kept LARGE_TTL_S idle seconds at most."""
        self.nbytes += size - counted
        entry.nbytes = size
        if size >= LARGE_BYTES:
            entry.ttl_s = min(entry.ttl_s, LARGE_TTL_S)

    def _evict(self) -> None:
        """Drop the least recently used entries until both bounds hold (the lock is held)."""
        while len(self._entries) > self.max_entries or self.nbytes > self.max_bytes:
            self._drop(next(iter(self._entries)))

    def _drop(self, key: Hashable) -> None:
        entry = self._entries.pop(key)
        self.nbytes -= entry.nbytes
        if entry.nbytes >= self.release_from_bytes:
            with contextlib.suppress(TypeError):  # a value without weak references (a tuple) is not followed
                self._dropped.append(weakref.ref(entry.value))

    def build_once(self, build: functools.partial, finish: functools.partial) -> Any:
        """finish(build()), computed once per build's function, arguments and options and finish's options.

        build's positional arguments are keyed by identity (a cached view's data object: this entry holds them, so
        their ids are not reused while it lives), keywords by value; only the result counts towards the bytes.
        """
        key = cache_key(build.func, tuple(map(id, build.args)), build.keywords, finish.func, finish.keywords)
        return self.get(key, lambda: (build, finish(build())), nbytes=lambda made: estimate_nbytes(made[1]))[
            1
        ]

    def sweep(self) -> int:
        """Drop the entries idle past their time to live, measure growing ones again and evict past the bounds;
        gives memory back when much was freed. Returns the bytes freed."""
        now = time.monotonic()
        with self._lock:  # only an entry used lately can have grown: a page makes its arrays within seconds
            growing = [
                (key, entry)
                for key, entry in self._entries.items()
                if entry.resize is not None and now - entry.last_used < GROWS_WITHIN_S
            ]
        sizes = {key: _measured(entry) for key, entry in growing}  # outside the lock: callers go on
        with self._lock:
            before = self.nbytes
            for key, size in sizes.items():
                entry = self._entries.get(key)
                if entry is not None:
                    self._count(entry, size, entry.nbytes)
            grown = self.nbytes - before
            for key in [key for key, entry in self._entries.items() if now - entry.last_used > entry.ttl_s]:
                self._drop(key)
            self._evict()
            freed = before + grown - self.nbytes
            alive = [ref for ref in self._dropped if ref() is not None]
            gone = len(alive) < len(self._dropped)
            self._dropped = alive
        if (
            freed >= self.release_from_bytes
            or gone
            or alive
            and now - self._last_release > self.collect_every_s
        ):
            release_memory()  # the values may sit in reference cycles, and their heap pages in the process
            self._last_release = now
            with self._lock:
                self._dropped = [ref for ref in self._dropped if ref() is not None]
        return freed

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._dropped.clear()
            self.nbytes = 0

    def close(self) -> None:
        """Stop the sweeper and drop every entry."""
        self._closed.set()
        self.clear()


def _measured(entry: Entry) -> int:
    """The entry's size measured again; its last size if the value cannot be measured (logged)."""
    try:
        return entry.resize(entry.value)
    except Exception:
        logging.getLogger(__name__).exception("a cached value could not be measured")
        return entry.nbytes


def _sweep_while_alive(cache_ref: weakref.ref, closed: threading.Event, every_s: float) -> None:
    """The sweeper thread: holds the cache only while it sweeps, so a cache nobody uses can be collected."""
    while not closed.wait(every_s):
        cache = cache_ref()
        if cache is None:
            return
        try:
            cache.sweep()
        except Exception:  # a value that cannot be measured must not stop the sweeping
            logging.getLogger(__name__).exception("the shared cache's sweep failed")
        del cache


def cache_key(*parts: Any, **params: Any) -> Hashable:
    """A hashable key from function names, inputs and view parameters (lists, dicts, slices and arrays included)."""
    return (_frozen(parts), _frozen(params))


def _frozen(value: Any) -> Hashable:
    if inspect.isfunction(value) or inspect.isclass(value):  # by name, as the data function a page names
        return f"{value.__module__}.{value.__qualname__}"
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _frozen(v)) for k, v in value.items()))
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=repr) if isinstance(value, set | frozenset) else value
        return (type(value).__name__, *(_frozen(item) for item in items))
    if isinstance(value, slice):
        return ("slice", value.start, value.stop, value.step)
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    hash(value)  # anything else must be hashable as it is (TypeError otherwise)
    return value


def estimate_nbytes(value: Any) -> int:
    """The memory a value holds: tensors' and arrays' buffers (each counted once, views included), bytes, strings,
    containers, dataclasses and objects' attributes, plotly figures. Shared things count 0: a torch module (the
    model), functions, and a dataclass field declared with compare=False (PairTrace's model and tokenizer)."""
    return _Sizer().size(value)


class _Sizer:
    def __init__(self) -> None:
        self.seen: set[int] = set()
        self.buffers: set[tuple] = set()

    def size(self, value: Any) -> int:
        if id(value) in self.seen or _shared(value):
            return 0
        self.seen.add(id(value))
        if isinstance(value, torch.Tensor):
            return self._buffer(
                ("storage", value.untyped_storage().data_ptr()), value.untyped_storage().nbytes()
            )
        if isinstance(value, np.ndarray):
            return self._array(value)
        if isinstance(value, str | bytes | bytearray | int | float | complex | bool) or value is None:
            return sys.getsizeof(value)
        if hasattr(value, "to_plotly_json"):  # a plotly figure: what its JSON holds
            return self.size(value.to_plotly_json())
        if isinstance(
            value, Mapping
        ):  # copied first: a trace adds its numpy arrays while the sweeper measures it
            return sys.getsizeof(value) + sum(self.size(k) + self.size(v) for k, v in list(value.items()))
        if isinstance(value, list | tuple | set | frozenset):
            return sys.getsizeof(value) + self._items(list(value))
        return sys.getsizeof(value) + self._attributes(value)

    def _buffer(self, key: tuple, nbytes: int) -> int:
        if key in self.buffers:
            return 0
        self.buffers.add(key)
        return nbytes

    def _array(self, array: np.ndarray) -> int:
        if array.base is not None and not isinstance(array.base, np.ndarray):
            return self.size(array.base)  # tensor.numpy() (the tensor's storage), an array over bytes
        # An array owning its buffer counts it once; a slice of another array counts what it shows (a view's data
        # is mostly a slice of its trace's arrays, which the trace's own entry counts).
        own = self._buffer(("array", array.__array_interface__["data"][0], array.nbytes), array.nbytes)
        return own + (self._items(list(array.flat)) if array.dtype == object else 0)

    def _items(self, items: list) -> int:
        if len(items) <= SAMPLED_ITEMS:
            return sum(self.size(item) for item in items)
        step = len(items) // SAMPLED_ITEMS
        return sum(self.size(item) for item in items[::step][:SAMPLED_ITEMS]) * len(items) // SAMPLED_ITEMS

    def _attributes(self, value: Any) -> int:
        attributes = dict(vars(value)) if hasattr(value, "__dict__") else {}
        attributes.update(
            (name, getattr(value, name, None)) for name in getattr(type(value), "__slots__", ())
        )
        if dataclasses.is_dataclass(value):  # a field left out of comparisons refers to something shared
            shared = {field.name for field in dataclasses.fields(value) if not field.compare}
            attributes = {name: item for name, item in attributes.items() if name not in shared}
        return sum(self.size(item) for item in attributes.values())


def _shared(value: Any) -> bool:
    """Code and models: shared by every entry, owned by none."""
    return (
        isinstance(value, torch.nn.Module | type)
        or inspect.isroutine(value)
        or inspect.ismodule(value)
        or isinstance(value, functools.partial)
    )


def from_settings(max_entries: int = 256) -> tuple[SharedCache, str | None]:
    """The server's shared cache sized by BERTVIZ_LITE_CACHE_MB and BERTVIZ_LITE_CACHE_TTL_S, and a problem to show."""
    max_bytes, ttl_s, problem = settings.cache_settings()
    return SharedCache(max_entries, max_bytes, ttl_s), problem
