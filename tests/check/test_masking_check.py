"""--part masking: a correct 15% / 80-10-10 function passes; one that masks special tokens, one that masks 15% of all
positions (padding included), one that labels every position and one without the 10/10 are named."""

from __future__ import annotations

from pathlib import Path

import pytest

from bertviz_lite.check import CheckRequest, check_files
from bertviz_lite.check.masking_check import share

MASKING = Path(__file__).parent / "learners" / "masking"
EXPECTED = {
    "correct": [],
    "masks_special": ["masks-special", "masks-padding"],
    "masks_padding": ["masks-special", "masks-padding"],
    "labels_everywhere": ["labels-every-position"],
    "all_masked": ["split-80-10-10"],
}


@pytest.fixture(scope="module")
def reports():
    found = check_files([CheckRequest(MASKING / f"{name}.py", "masking") for name in EXPECTED])
    return dict(zip(EXPECTED, found, strict=True))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_masking_function_gets_its_findings(reports, name):
    report = reports[name]
    assert report.codes == EXPECTED[name], report.to_text()
    assert report.verdict == ("differs" if EXPECTED[name] else "match")


def test_the_report_gives_the_measured_shares_with_an_interval(reports):
    text = reports["correct"].to_text()
    chosen = next(line for line in text.splitlines() if line.startswith("Note: masking.chosen"))
    assert "99.99% interval" in chosen and "BERT 15%" in chosen
    assert "masking.special: 0 of" in text


def test_the_function_is_found_by_its_name_or_as_the_one_taking_ids(reports):
    assert reports["masks_padding"].subject == "mask in masks_padding.py"
    assert reports["correct"].subject == "mask_tokens in correct.py"


def test_share_intervals_are_wilson_intervals():
    p, low, high = share(150, 1000)
    assert p == 0.15 and 0.11 < low < 0.112 and 0.198 < high < 0.2
    assert share(0, 100)[1] == 0.0
