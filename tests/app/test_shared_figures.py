"""Issue 23: a figure for the same input, model, view and size is built once and shared by every visitor."""

from __future__ import annotations

import gc
import weakref

from bertviz_lite.loading.pretrained import MINILM
from pages_app.common._ui import SHARED
from tests.app.conftest import charts, no_exception, run_app

SENTENCE = "A second visitor sees the heatmap the first one built."


def test_a_second_visitor_gets_the_first_visitors_figure_and_presentation_mode_its_own():
    state = {"model_picker": MINILM, "sentence_a": SENTENCE, "sentence_b": "", "attn_view": "Heatmap"}
    first = run_app(state, "attention")
    no_exception(first)
    computed = SHARED.computed
    second = run_app(state, "attention")  # a new session: nothing of the first one's state
    no_exception(second)
    assert SHARED.computed == computed  # trace, view data and figure all came from the cache
    assert charts(second)["attention_heatmap"] == charts(first)["attention_heatmap"]
    present = run_app({**state, "present": True}, "attention")  # another size: built anew, for itself
    no_exception(present)
    assert SHARED.computed > computed
    sizes = charts(present)["attention_heatmap"]["layout"]["xaxis"]["tickfont"]["size"]
    assert sizes > charts(first)["attention_heatmap"]["layout"]["xaxis"]["tickfont"]["size"]


def test_a_page_keeps_its_context_not_its_trace():
    """A session keeps its page's globals for the widget callbacks (and a closed tab's session for minutes): a page
    reads its trace where it uses it (get_trace, view), so the trace still goes when the cache drops it."""
    at = run_app(
        {"model_picker": MINILM, "sentence_a": "Only the cache keeps this trace.", "sentence_b": ""},
        "attention",
    )
    no_exception(at)
    traces = [weakref.ref(entry.value) for key, entry in SHARED._entries.items() if key[0] == "trace"]
    assert traces
    SHARED.clear()
    gc.collect()
    assert all(trace() is None for trace in traces)  # while the session (`at`) is still alive
