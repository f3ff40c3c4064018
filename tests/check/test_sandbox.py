"""The learner's code runs in a child process: an exception, a loop, a 10 GB allocation or a dying process becomes a
finding with their traceback's last frame (exit code 1), a file that cannot load or build an error (exit code 2)."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from bertviz_lite.check import CheckRequest, check_files
from tests.check.zygotes import our_zygotes

LEARNERS = Path(__file__).parent / "learners"
TIME_LIMIT_S = 2.0
pytestmark = pytest.mark.slow  # two jobs run to their time limit, nine forks of the zygote


class _Said(logging.Handler):
    """The log lines the checker writes (a job left to a fresh python says so)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture(scope="module")
def reports():
    """The failing files and a correct one after them, each in a fork of the zygote (a dying job costs only itself;
    the last one turns off the alarm and is killed on the wall clock)."""
    names = [
        "raises_in_forward",
        "raises_on_import",
        "no_model_class",
        "fixed_sizes",
        "hangs",
        "allocates",
        "exits",
        "hf_style",
        "hangs_ignoring_alarm",
    ]
    said = _Said()
    logging.getLogger("bertviz_lite.check").addHandler(said)
    started = time.monotonic()
    try:
        found = check_files(
            [CheckRequest(LEARNERS / f"{name}.py") for name in names], time_limit=TIME_LIMIT_S
        )
    finally:
        logging.getLogger("bertviz_lite.check").removeHandler(said)
    return dict(zip(names, found, strict=True)), time.monotonic() - started, said.lines


def test_an_exception_in_their_forward_is_a_finding_with_their_last_frame(reports):
    report = reports[0]["raises_in_forward"]
    assert (report.verdict, report.exit_code, report.codes) == ("differs", 1, ["exception"])
    message = report.findings[0].message
    assert "RuntimeError" in message and "raises_in_forward.py, line 13, in forward" in message


def test_a_file_that_raises_on_import_cannot_be_loaded(reports):
    report = reports[0]["raises_on_import"]
    assert (report.verdict, report.exit_code) == ("error", 2)
    assert "KeyError: 'hiden'" in report.findings[0].message and "line 6" in report.findings[0].message
    assert "Traceback" not in report.findings[0].message


def test_a_file_without_a_matching_class_says_which_classes_it_has(reports):
    report = reports[0]["no_model_class"]
    assert (report.verdict, report.exit_code) == ("error", 2)
    assert "Decoder, Encoder" in report.findings[0].message and "--class" in report.findings[0].message


def test_a_model_that_ignores_the_sizes_it_is_given_cannot_be_built(reports):
    report = reports[0]["fixed_sizes"]
    assert (report.verdict, report.exit_code) == ("error", 2)
    assert "30522 x 768" in report.findings[0].message and "build(config)" in report.findings[0].message


def test_a_loop_is_stopped_at_the_time_limit(reports):
    report = reports[0]["hangs"]
    assert report.codes == ["timeout"] and report.exit_code == 1
    assert "hangs.py, line 1" in report.findings[0].message  # the loop's own line, 13 or 14


def test_a_ten_gigabyte_allocation_is_refused_by_the_memory_limit(reports):
    report = reports[0]["allocates"]
    assert report.codes == ["memory"] and report.exit_code == 1
    assert "allocates.py, line 13" in report.findings[0].message


def test_a_process_that_dies_is_a_finding_and_the_next_file_is_still_checked(reports):
    assert reports[0]["exits"].codes == ["crashed"]
    assert "exit code 3" in reports[0]["exits"].findings[0].message
    assert reports[0]["hf_style"].verdict == "match"


def test_the_whole_batch_ends_within_its_time_limits(reports):
    # a time limit per job, three child start-ups, the rest in seconds: generous, as the machine may be busy
    assert reports[1] < 9 * TIME_LIMIT_S + 100


def test_a_loop_that_turns_off_the_alarm_is_killed_on_the_wall_clock(reports):
    report = reports[0]["hangs_ignoring_alarm"]
    assert report.codes == ["timeout"] and report.exit_code == 1


def test_every_job_ran_in_a_fork_of_the_zygote_so_its_limits_held_there(reports):
    assert reports[2] == []  # no job was left to a fresh python
    assert len(our_zygotes()) == 1
