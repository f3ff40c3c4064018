"""app.py's first run starts one background warm-up per process: the default pair's trace, from the pages' caches."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from bertviz_lite.loading.pretrained import DEFAULT_MODEL
from bertviz_lite.loading.run_folder import CHECKPOINTS_DIR
from devtools.waiting import wait_until
from pages_app.common._ui import SHARED, context_for, get_trace
from pages_app.explore._warm_up import default_inputs, start_warm_up
from tests.app.conftest import APP, PAGES, no_exception

pytestmark = pytest.mark.skipif(
    not (CHECKPOINTS_DIR / DEFAULT_MODEL / "config.json").is_file(),
    reason=f"checkpoints/{DEFAULT_MODEL} is missing",
)


def test_the_first_run_warms_the_default_pairs_trace_for_the_next_visitors():
    start_warm_up.clear()  # as in a fresh process: no warm-up yet, and no trace of the default pair cached
    SHARED.clear()
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["sentence_a"] = (
        "Dogs bark at night."  # this visitor's page never traces the default pair
    )
    at.switch_page(PAGES["tokens"])
    at.run()
    no_exception(at)

    def warmed() -> bool:
        # What a page gets from the cache for the default pair; only the warm-up reads its prediction logits.
        trace = get_trace(context_for(default_inputs()))
        return "mlm_logits" in trace.__dict__ and "nsp_logits" in trace.__dict__

    wait_until(warmed, 60, "the warm-up to trace the default pair")
    assert get_trace(context_for(default_inputs())).tokens[:3] == ["[CLS]", "the", "cat"]
    thread = start_warm_up()  # one thread per process, however many runs ask
    assert start_warm_up() is thread and thread.name == "bertviz-warm-up"
    assert not thread.daemon, (
        "the process must wait for its warm-up at exit (a daemon thread in torch aborts it)"
    )
