"""The app server's own settings, read from the environment and checked before they are used.

    BERTVIZ_LITE_THREADS   intra-op threads for the app's model traces (default 1)

One thread by default: on a small machine shared with other work, torch's thread pool made a 32-token
trace 5-20x slower (0.2-1 s against 0.04 s, bench/page_latency.py), and a 512-token trace is 0.6 s on
one thread.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import torch

THREADS_SETTING = "BERTVIZ_LITE_THREADS"
DEFAULT_THREADS = 1


def app_threads(environ: Mapping[str, str] = os.environ) -> int:
    """The threads BERTVIZ_LITE_THREADS asks for (DEFAULT_THREADS when unset); ValueError in words if bad."""
    value = environ.get(THREADS_SETTING, "").strip()
    if not value:
        return DEFAULT_THREADS
    try:
        threads = int(value)
    except ValueError:
        threads = 0
    if threads < 1:
        raise ValueError(f"{THREADS_SETTING} must be a whole number of threads, 1 or more "
                         f"(it is {value[:20]!r})")
    return threads


def use_app_threads(environ: Mapping[str, str] = os.environ) -> str | None:
    """Give torch the app's threads; a bad setting falls back to DEFAULT_THREADS and says why."""
    try:
        threads, problem = app_threads(environ), None
    except ValueError as err:
        threads, problem = DEFAULT_THREADS, f"{err}; the app uses {DEFAULT_THREADS} thread."
    torch.set_num_threads(threads)
    return problem
