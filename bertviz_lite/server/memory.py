"""Give memory back: a full garbage collection, then glibc's malloc_trim so that freed pages leave the process.

A long input's trace is hundreds of MB; after it drops out of the app's caches it can sit in reference cycles
until a full collection, and the heap it was freed into stays in the server's RSS until trimmed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from functools import lru_cache


@lru_cache(maxsize=1)
def _malloc_trim():
    """glibc's malloc_trim, or None (macOS, musl)."""
    name = ctypes.util.find_library("c")
    try:
        return getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None
    except OSError:
        return None


def release_memory() -> int:
    """Collect every generation and return freed heap pages to the system; returns the objects collected."""
    collected = gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
    return collected
