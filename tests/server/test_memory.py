"""Issue 22: memory a long input's trace held is given back once it is dropped, even from a reference cycle."""

from __future__ import annotations

import gc
import weakref

import numpy as np

from bertviz_lite.server.memory import release_memory


class Holder:
    pass


def test_a_trace_in_a_reference_cycle_is_freed_by_release_memory():
    gc.disable()  # as between postScriptGC-less script runs: no automatic full collection
    try:
        holder = Holder()
        holder.array = np.ones((64, 1024, 1024), dtype=np.float32)  # 256 MB, like a 512-token trace
        holder.self = holder  # the cycle
        alive = weakref.ref(holder)
        del holder
        assert alive() is not None  # reference counting alone does not free it
        assert release_memory() > 0 and alive() is None
    finally:
        gc.enable()
