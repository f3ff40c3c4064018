"""The batch prefetcher: results in order, at most `depth` made ahead, errors raised by next(), a clean close."""

from __future__ import annotations

import itertools
import threading

import pytest

from bertviz_lite.training.prefetch import THREAD_NAME, Prefetcher
from devtools.waiting import wait_until


def prefetching() -> bool:
    """Whether a prefetcher's thread is alive (the tests here run one at a time)."""
    return any(thread.name == THREAD_NAME for thread in threading.enumerate())


def counter():
    numbers = itertools.count()
    return lambda: next(numbers)


def test_results_come_in_the_order_they_were_made():
    ahead = Prefetcher(counter(), depth=3)
    assert [ahead.next() for _ in range(50)] == list(range(50))
    ahead.close()
    assert not prefetching()


def test_it_makes_at_most_depth_results_ahead_of_the_consumer():
    made = []

    def make():
        made.append(len(made))
        return made[-1]

    ahead = Prefetcher(make, depth=2)
    # Two results queued and a third made, waiting for room (without a bound the thread would be far past 3 by now).
    wait_until(lambda: len(made) >= 3, 10, "two results queued and a third waiting for room")
    assert len(made) == 3
    assert ahead.next() == 0
    wait_until(lambda: len(made) >= 4, 10, "room for one more")
    assert len(made) == 4 and [ahead.next() for _ in range(3)] == [1, 2, 3]
    ahead.close()
    assert not prefetching()


def test_an_error_in_make_is_raised_by_next_after_the_results_before_it():
    numbers = counter()

    def make():
        number = numbers()
        if number == 2:
            raise ValueError("corpus line 3 is not text")
        return number

    ahead = Prefetcher(make, depth=4)
    assert [ahead.next(), ahead.next()] == [0, 1]
    with pytest.raises(ValueError, match="corpus line 3"):
        ahead.next()
    wait_until(lambda: not prefetching(), 10, "the thread to end after the error")
    ahead.close()


def test_close_stops_a_thread_that_waits_for_room():
    ahead = Prefetcher(counter(), depth=1)
    assert ahead.next() == 0
    ahead.close()  # the thread is blocked on a full queue: close must not hang
    assert not prefetching()


def test_depth_below_one_is_refused():
    with pytest.raises(ValueError, match="depth"):
        Prefetcher(counter(), depth=0)
