"""Check a learner's own BERT against ours, stage by stage, and name the mistake (`python -m bertviz_lite.check`).

Their code runs in a child process under a time and a memory limit (check/worker.py); the comparison, the reference
with one known mistake at a time (check/mistakes.py) and the report run here.
"""

from bertviz_lite.check.checker import CheckRequest, check_file, check_files
from bertviz_lite.check.mistakes import CODES, MISTAKES, mistake
from bertviz_lite.check.report import Report

__all__ = ["CODES", "MISTAKES", "CheckRequest", "Report", "check_file", "check_files", "mistake"]
