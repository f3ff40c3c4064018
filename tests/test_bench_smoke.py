"""The bench scripts run and print their key=value lines (their figures are compared in the bench, not here)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def bench(script: str, *args: str) -> list[dict[str, str]]:
    """Run bench/<script> --quick; each output line as its key=value pairs."""
    out = subprocess.run([sys.executable, str(REPO / "bench" / script), "--quick", *args], capture_output=True,
                         text=True, check=True, cwd=REPO, timeout=300).stdout
    return [dict(re.findall(r"(\w+)=('[^']*'|\"[^\"]*\"|\S+)", line)) for line in out.splitlines() if "=" in line]


def test_train_memory_estimate_prints_the_ratio_of_each_form():
    *forms, summary = bench("train_memory_estimate.py")
    assert forms and all(float(form["estimate_mb"]) > 0 and float(form["measured_mb"]) > 0 for form in forms)
    assert summary["within_2x"] == "True"


def test_input_bounds_refuses_every_worst_input_within_1_s_of_cpu_and_100_mb():
    *cases, summary = bench("input_bounds.py")
    assert {"sentence_3mb", "your_sentences_1mb", "safetensors_800000_empty_tensors", "form_num_documents_1e9",
            "path_5000_chars"} <= {case["case"] for case in cases}
    assert [case["case"] for case in cases if case["within_budget"] != "True"] == []
    assert float(summary["worst_cpu_s"]) <= 1.0 and float(summary["worst_peak_mb"]) <= 100
