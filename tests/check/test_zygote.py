"""Each job runs in a fork of the checker's zygote (check/zygote.py): what one job leaves in its process is gone for
the next, a fork is the child a fresh python was (same limits, descriptors, environment), a zygote that dies or cannot
start leaves the job to a fresh python, and the zygote ends with its parent's pipe, taking its running children."""

from __future__ import annotations

import json
import re
import sys
import time
from dataclasses import asdict
from pathlib import Path

import pytest
from safetensors.torch import save_file

from bertviz_lite.check import CheckRequest, check_file, check_files, sandbox, zygote_client
from bertviz_lite.check.reference import check_config, sentence_pairs
from bertviz_lite.check.zygote_client import COMMAND, Zygote, ZygoteLost, Zygotes
from tests.check.zygotes import our_zygotes

LEARNERS = Path(__file__).parent / "learners"
ROOT = Path(__file__).resolve().parents[2]
READY_S = 60.0  # a zygote importing torch and forking, on a busy machine


def test_what_a_job_leaves_in_its_process_is_gone_for_the_next_job():
    left, looked = check_files(
        [CheckRequest(LEARNERS / "leaves_traces.py"), CheckRequest(LEARNERS / "looks_for_traces.py")]
    )
    # its softmax of nothing ran in its own job: the traces were there to be left
    assert left.verdict == "differs", left.to_text()
    assert looked.verdict == "match", looked.to_text()


def _described(report) -> dict:
    """What describes_its_process.py's forward raised: the description of the process it ran in."""
    assert report.codes == ["exception"], report.to_text()
    return json.loads(re.search(r"RuntimeError: (\{.*?\})", report.findings[0].message).group(1))


def test_a_fork_of_the_zygote_is_the_child_a_fresh_python_was_and_one_that_cannot_start_leaves_it_to_one(
    monkeypatch, caplog
):
    warm = _described(check_file(LEARNERS / "describes_its_process.py"))
    never_starts = Zygotes(command=(sys.executable, "-c", "raise SystemExit(7)"))
    monkeypatch.setattr(zygote_client, "ZYGOTES", never_starts)
    fresh = _described(check_file(LEARNERS / "describes_its_process.py"))
    never_starts.close()
    assert (warm.pop("zygote"), fresh.pop("zygote")) == (True, False)
    assert warm == fresh
    assert warm["leader"] and warm["core"] == [0, 0] and warm["stdio"] == ["null", "child.log", "child.log"]
    said = [r.getMessage() for r in caplog.records]
    assert any("zygote" in line and "runs again in a fresh python" in line for line in said), said


def test_a_zygote_killed_during_a_job_leaves_the_job_to_a_fresh_python_and_the_next_check_to_a_new_zygote(
    caplog,
):
    report = check_file(LEARNERS / "kills_the_zygote.py")
    assert report.verdict == "match", report.to_text()
    said = [r.getMessage() for r in caplog.records]
    assert any("ended while its child" in line and "runs again in a fresh python" in line for line in said), (
        said
    )
    assert our_zygotes() == []  # the killed one, reaped
    assert check_file(LEARNERS / "hf_style.py").verdict == "match"
    assert len(our_zygotes()) == 1  # a new one, and only one
    assert any("exited with code -9" in r.getMessage() for r in caplog.records)


@pytest.fixture
def hanging_job(tmp_path) -> Path:
    """A job folder as the sandbox writes it, whose job never returns (it turns off its alarm and sleeps)."""
    config = check_config()
    ids, segments = sentence_pairs(config)
    save_file({}, str(tmp_path / "ours.safetensors"))
    save_file({"input_ids": ids, "token_type_ids": segments}, str(tmp_path / "inputs.safetensors"))
    job = {"file": str(LEARNERS / "hangs_ignoring_alarm.py"), "part": "model"}
    request = {
        "config": asdict(config),
        "jobs": [job],
        "time_limit": 600.0,
        "memory_limit": sandbox.MEMORY_LIMIT_BYTES,
    }
    (tmp_path / "request.json").write_text(json.dumps(request))
    return tmp_path


def test_the_zygote_ends_with_its_stdin_and_stops_the_children_still_running(hanging_job):
    env = sandbox._child_env()
    zygote = Zygote(COMMAND, env, cwd=str(ROOT))
    child = zygote.fork(hanging_job, env)
    deadline = time.monotonic() + READY_S
    while not (hanging_job / sandbox.READY).exists() and time.monotonic() < deadline:
        assert zygote.process.poll() is None, "the zygote ended before its child was ready"
        time.sleep(sandbox.POLL_S)
    assert child.pid and Path(f"/proc/{child.pid}").exists(), "the child never got to its job"
    zygote.process.stdin.close()  # as the kernel does when the server process ends
    assert zygote.process.wait(timeout=READY_S) == 0
    assert not Path(f"/proc/{child.pid}").exists()  # killed and reaped before the zygote exited
    with pytest.raises(ZygoteLost):
        child.wait(timeout=READY_S)
