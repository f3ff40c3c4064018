"""Smoke test of bench/check_speed.py: it runs one check and prints its key=value lines (the figures are the bench's,
never asserted here)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # a child process and the bench's own: ~10 s on a busy machine
def test_the_check_speed_bench_prints_its_figures():
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "check_speed.py"), "--repeats", "1"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    values = dict(line.split("=", 1) for line in done.stdout.split() if "=" in line)
    assert values["verdict"] == "match"
    for key in ("check_s", "torch_import_s", "forward_ms", "ratio_check_to_forward"):
        assert float(values[key]) > 0
    assert values["goal_check_under_5_s"] in ("met", "NOT met")
