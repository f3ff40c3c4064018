"""Issue 22: the shared cache is bounded by entries and bytes, drops idle entries on its own, and computes once."""

from __future__ import annotations

import gc
import threading
import weakref
from dataclasses import dataclass, field

import numpy as np
import pytest
import torch

from bertviz_lite.server.cache import LARGE_BYTES, LARGE_TTL_S, SharedCache, cache_key, estimate_nbytes
from devtools.waiting import wait_until

MB = 1024 * 1024


def megabytes(n: float) -> torch.Tensor:
    return torch.ones(int(n * MB) // 4)  # float32


@pytest.fixture
def make_cache():
    caches = []

    def make(**bounds) -> SharedCache:
        caches.append(SharedCache(**{"max_entries": 100, "max_bytes": 100 * MB, "ttl_s": 600, **bounds}))
        return caches[-1]

    yield make
    for cache in caches:
        cache.close()


@dataclass
class Trace:
    """Shaped like explore.PairTrace: a tensor, numpy views of it, and a shared model left out of comparisons."""

    output: torch.Tensor
    model: torch.nn.Module | None = field(default=None, compare=False)


def test_an_entry_counts_its_tensors_once_and_not_the_shared_model():
    trace = Trace(megabytes(4), model=torch.nn.Linear(1024, 1024))  # the model alone is 4 MB
    trace.__dict__["attentions"] = trace.output.numpy()  # a numpy view made on first use, as PairTrace does
    trace.__dict__["first_row"] = trace.__dict__["attentions"][:1024]  # a slice: counted for what it shows
    assert 4 * MB + 4096 <= estimate_nbytes(trace) < 4 * MB + 4096 + 2048
    assert estimate_nbytes({"a": np.zeros(MB, np.uint8), "b": b"x" * MB}) >= 2 * MB


def test_the_least_recently_used_entries_go_when_the_bytes_run_out(make_cache):
    cache = make_cache(max_bytes=int(3.5 * MB))
    for name in "abc":
        cache.get(name, lambda: megabytes(1))
    cache.get("a", lambda: megabytes(1))  # a is used again: b is now the oldest
    cache.get("d", lambda: megabytes(1))
    assert "b" not in cache and {"a", "c", "d"} <= {k for k in "abcd" if k in cache}
    assert cache.nbytes <= 3.5 * MB and cache.computed == 4
    kept = cache.get("huge", lambda: megabytes(8))  # larger than the whole cache: returned, not kept
    assert kept.numel() == 2 * MB and "huge" not in cache and len(cache) == 3


def test_the_oldest_entries_go_past_the_entry_bound(make_cache):
    cache = make_cache(max_entries=2)
    for name in "abc":
        cache.get(name, lambda: torch.zeros(4))
    assert len(cache) == 2 and "a" not in cache and "c" in cache


def test_idle_entries_are_dropped_without_another_call_and_their_cycles_freed(make_cache):
    cache = make_cache(ttl_s=0.2, release_from_bytes=MB)
    gc.disable()  # as on the server (no postScriptGC): only the cache's release_memory collects the cycle
    try:
        value = cache.get("trace", lambda: Trace(megabytes(2)))
        value.self = value  # a reference cycle, as a dropped trace can sit in
        alive = weakref.ref(value)
        del value
        wait_until(
            lambda: "trace" not in cache and alive() is None, timeout=10, what="the idle entry to be freed"
        )
    finally:
        gc.enable()
    assert cache.nbytes == 0


def test_a_dropped_value_a_session_still_held_is_collected_once_the_session_lets_go(make_cache):
    cache = make_cache(ttl_s=0.1, release_from_bytes=MB, collect_every_s=0.1)
    gc.disable()
    try:
        session = {
            "trace": cache.get("trace", lambda: Trace(megabytes(2)))
        }  # a page's globals hold the trace
        session["callback"] = session  # and the page's callbacks hold its globals: a cycle
        alive = weakref.ref(session["trace"])
        wait_until(lambda: "trace" not in cache, timeout=10, what="the idle entry to be dropped")
        assert alive() is not None  # still shown to that visitor
        del session  # the session ends (Streamlit drops a closed tab's session 2 minutes later)
        wait_until(lambda: alive() is None, timeout=10, what="the cycle to be collected without another call")
    finally:
        gc.enable()


def test_a_large_entry_is_kept_a_shorter_idle_time(make_cache):
    cache = make_cache(max_bytes=200 * MB, ttl_s=600)
    cache.get("large", lambda: megabytes(LARGE_BYTES / MB))
    cache.get("small", lambda: megabytes(1))
    assert [cache._entries[key].ttl_s for key in ("large", "small")] == [LARGE_TTL_S, 600]


def test_a_growing_entry_is_measured_again_by_the_sweep(make_cache):
    cache = make_cache(max_bytes=5 * MB, ttl_s=600, sweep_s=0.05)
    trace = cache.get("trace", lambda: Trace(megabytes(1)), grows=True)
    cache.get("other", lambda: megabytes(2))
    trace.__dict__["copy"] = megabytes(3).numpy()  # an array made on first use, after the entry was stored
    assert cache.get("trace", lambda: None) is trace  # used again: "other" is now the least recently used
    wait_until(lambda: "other" not in cache, timeout=10, what="the sweep to see the trace grow and evict")
    assert cache.nbytes >= 4 * MB and "trace" in cache


def test_a_value_that_cannot_be_measured_again_does_not_stop_the_sweeps(make_cache):
    cache = make_cache(ttl_s=0.3, sweep_s=0.05)
    sizes = iter([MB])  # measured once when stored, then it fails

    cache.get("odd", lambda: megabytes(1), nbytes=lambda value: next(sizes), grows=True)
    wait_until(lambda: "odd" not in cache, timeout=5, what="the entry to go after its idle time all the same")
    assert cache.nbytes == 0


def test_visitors_asking_together_share_one_computation(make_cache):
    cache = make_cache()
    visitors = 8
    started = []
    release = threading.Event()
    computed = []
    results = []

    def compute():
        computed.append(1)
        release.wait(10)
        return megabytes(1)

    def visitor():
        started.append(1)
        results.append(cache.get(cache_key("attention", [0, 1], layer=2), compute))

    threads = [threading.Thread(target=visitor) for _ in range(visitors)]
    for thread in threads:
        thread.start()
    wait_until(lambda: len(started) == visitors and computed, timeout=10, what="every visitor to ask")
    release.set()
    for thread in threads:
        thread.join(10)
    assert len(computed) == 1 and len(results) == visitors and all(r is results[0] for r in results)


def test_an_error_reaches_every_waiting_caller_and_is_not_cached(make_cache):
    cache = make_cache()
    entered = threading.Event()
    release = threading.Event()
    errors = []

    def failing():
        entered.set()
        release.wait(10)
        raise ValueError("no such model")

    def visitor():
        try:
            cache.get("k", failing)
        except ValueError as err:
            errors.append(str(err))

    threads = [threading.Thread(target=visitor) for _ in range(3)]
    for thread in threads:
        thread.start()
    entered.wait(10)
    release.set()
    for thread in threads:
        thread.join(10)
    assert errors == ["no such model"] * 3 and "k" not in cache
    assert cache.get("k", lambda: 7) == 7


class Rerun(BaseException):
    """What Streamlit raises in a script thread that is rerun (a BaseException, not an error)."""


def test_a_waiting_caller_computes_when_the_first_is_interrupted(make_cache):
    cache = make_cache()
    entered = threading.Event()
    release = threading.Event()
    got = []

    def interrupted():
        entered.set()
        release.wait(10)
        raise Rerun

    def first():
        with pytest.raises(Rerun):
            cache.get("k", interrupted)

    leader = threading.Thread(target=first)
    leader.start()
    entered.wait(10)
    follower = threading.Thread(target=lambda: got.append(cache.get("k", lambda: "computed by the second")))
    follower.start()
    release.set()
    leader.join(10)
    follower.join(10)
    assert got == ["computed by the second"] and cache.get("k", lambda: "again") == "computed by the second"


def test_keys_are_made_from_functions_lists_dicts_and_slices():
    key = cache_key(estimate_nbytes, [1, 2], window=slice(0, 64), heads={"b": [1], "a": 2})
    assert hash(key) == hash(
        cache_key(estimate_nbytes, [1, 2], heads={"a": 2, "b": [1]}, window=slice(0, 64))
    )
    assert key != cache_key(estimate_nbytes, (1, 2), window=slice(0, 64), heads={"b": [1], "a": 2})
    assert cache_key(np.arange(3)) == cache_key(np.arange(3)) != cache_key(np.arange(4))


def test_a_cache_without_room_or_time_is_refused():
    with pytest.raises(ValueError, match="a cache needs room and time"):
        SharedCache(max_entries=0, max_bytes=MB, ttl_s=1)
