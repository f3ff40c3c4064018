"""Your BERT in chromium, on a server listening on 127.0.0.1 (the gate allows it): a planted scale-dk file shows its
finding, the ladder and the failing stage side by side; the fixed file, checked again, matches BERT."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from devtools.server import ARTIFACTS
from tests.browser.driver import EXCEPTION, open_page, screenshot, wait_for_figure, wait_for_idle

pytestmark = [pytest.mark.browser]

HF_STYLE = Path(__file__).parents[1] / "check" / "learners" / "hf_style.py"
SQRT = "/ math.sqrt(self.head_size)"
DK = "/ self.head_size"


def test_a_planted_scale_dk_file_then_the_fixed_one(page, streamlit_url, tmp_path):
    learner = tmp_path / "bert.py"
    correct = HF_STYLE.read_text(encoding="utf-8")
    learner.write_text(correct.replace(SQRT, DK), encoding="utf-8")
    open_page(page, streamlit_url, "Your_BERT")
    box = page.locator(".st-key-build_file input")
    box.fill(str(learner))
    box.press("Enter")
    wait_for_idle(page)
    page.get_by_role("button", name="Check", exact=True).click()
    wait_for_figure(page, "stage_ladder")
    wait_for_figure(page, "stage_sides")
    main = page.locator('[data-testid="stMain"]')
    expect(main.get_by_text("differs from BERT")).to_be_visible()
    expect(main.get_by_text("scale-dk", exact=True)).to_be_visible()
    expect(main.get_by_text("divides the scores by d_k instead of sqrt(d_k)", exact=False)).to_be_visible()
    assert (
        page.locator(".st-key-stage_sides .heatmaplayer image").count() == 3
    )  # yours, BERT's, the difference
    screenshot(page, ARTIFACTS / "your_bert_scale_dk.png")
    learner.write_text(correct, encoding="utf-8")
    page.get_by_role("button", name="Check again").click()
    wait_for_idle(page)
    expect(main.get_by_text("matches BERT at every stage", exact=False)).to_be_visible()
    assert page.locator(EXCEPTION).count() == 0
