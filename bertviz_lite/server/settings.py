"""The app server's own settings, read from the environment and checked before they are used.

    BERTVIZ_LITE_THREADS       intra-op threads for the app's model traces (default 1)
    BERTVIZ_LITE_CACHE_MB      memory the shared cache of traces, views and figures may hold (default 384)
    BERTVIZ_LITE_CACHE_TTL_S   seconds an entry nobody asked for stays cached (default 600)

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
CACHE_MB_SETTING = "BERTVIZ_LITE_CACHE_MB"  # one or two 512-token MiniLM traces (154-230 MB)
DEFAULT_CACHE_MB = 384
CACHE_TTL_SETTING = "BERTVIZ_LITE_CACHE_TTL_S"  # a class that left frees its memory
DEFAULT_CACHE_TTL_S = 600


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
        raise ValueError(
            f"{THREADS_SETTING} must be a whole number of threads, 1 or more (it is {value[:20]!r})"
        )
    return threads


def use_app_threads(environ: Mapping[str, str] = os.environ) -> str | None:
    """Give torch the app's threads; a bad setting falls back to DEFAULT_THREADS and says why."""
    try:
        threads = app_threads(environ)
        problem = None
    except ValueError as err:
        threads = DEFAULT_THREADS
        problem = f"{err}; the app uses {DEFAULT_THREADS} thread."
    torch.set_num_threads(threads)
    return problem


def positive_number(name: str, default: float, environ: Mapping[str, str] = os.environ) -> float:
    """The number the setting `name` asks for (default when unset); ValueError in words if it is not above 0."""
    value = environ.get(name, "").strip()
    if not value:
        return default
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not 0 < number < float("inf"):
        raise ValueError(f"{name} must be a number above 0 (it is {value[:20]!r})")
    return number


def cache_settings(environ: Mapping[str, str] = os.environ) -> tuple[int, float, str | None]:
    """(bytes, idle seconds) for the shared cache and a problem to show; a bad setting falls back to its default."""
    problems = []
    chosen = []
    for name, default, unit in (
        (CACHE_MB_SETTING, DEFAULT_CACHE_MB, "MB"),
        (CACHE_TTL_SETTING, DEFAULT_CACHE_TTL_S, "s"),
    ):
        try:
            chosen.append(positive_number(name, default, environ))
        except ValueError as err:
            problems.append(f"{err}; the app uses {default} {unit}.")
            chosen.append(default)
    return int(chosen[0] * 1024 * 1024), chosen[1], " ".join(problems) or None
