"""A live class in chromium: one lecturer at 1280 × 720, two students on phones (390 × 844) in their own contexts."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from bertviz_lite.inspection import walkthrough as walk
from devtools.server import ARTIFACTS
from tests.browser.driver import (
    EXCEPTION,
    NEEDS_DEFAULT_MODEL,
    choose_option,
    open_page,
    screenshot,
    wait_for_figure,
    wait_for_idle,
)

pytestmark = [pytest.mark.browser, NEEDS_DEFAULT_MODEL]
PHONE = {"width": 390, "height": 844}
YES, NO = walk.NSP_OPTIONS
NSP = walk.STEPS[walk.step_number("nsp") - 1]
# The class's answers as the projector's chart draws them: {answer: students}.
_BARS = """() => {
  const gd = document.querySelector('.st-key-class_distribution .js-plotly-plot');
  const bars = gd._fullData[0];
  return Object.fromEntries(Array.from(bars.y, (label, i) => [label.replace(' ← model', ''), Number(bars.x[i])]));
}"""


def _student(visitor, url: str, code: str):
    page = visitor(viewport=PHONE, is_mobile=True, has_touch=True)
    page.goto(f"{url}/class?class={code}")
    page.get_by_text(f"Step 1 of {len(walk.STEPS)}").wait_for(timeout=60_000)
    wait_for_idle(page)
    return page


def _answer(page, option: str) -> None:
    page.get_by_role("button", name=option, exact=True).click()
    page.get_by_text(f"Answer received: {option}").wait_for(timeout=10_000)


def test_students_follow_the_lecturer_answer_once_and_the_projector_counts(
    visitor, streamlit_url, second_streamlit_url
):
    """The lecturer and the first student on one server, the second student on another sharing its database (as two
    processes behind a balancer: second_streamlit_url)."""
    lecturer = visitor(viewport={"width": 1280, "height": 720})
    open_page(lecturer, streamlit_url, "class")
    lecturer.get_by_role("button", name="Start a class").click()
    code = lecturer.locator(".bvl-join-code").inner_text(timeout=30_000).strip()
    wait_for_idle(lecturer)
    first = _student(visitor, streamlit_url, code)
    second = _student(visitor, second_streamlit_url, code)
    first_again = first.context.new_page()  # the same phone in a second tab: the same student
    first_again.goto(f"{streamlit_url}/class?class={code}")
    first_again.get_by_text(f"Step 1 of {len(walk.STEPS)}").wait_for(timeout=30_000)

    choose_option(lecturer, "class_step", NSP.title)
    lecturer.get_by_role("button", name="Ask the question").click()
    wait_for_idle(lecturer)
    for phone in (first, second, first_again):  # no click: their screens follow
        phone.get_by_role("button", name=YES, exact=True).wait_for(timeout=10_000)
        expect(
            phone.get_by_text(f"Step {walk.STEPS.index(NSP) + 1} of {len(walk.STEPS)}: {NSP.title}")
        ).to_be_visible()
    screenshot(second, ARTIFACTS / "class_student_question.png", max_height=844)
    _answer(first, YES)
    _answer(second, NO)
    first_again.get_by_role("button", name=NO, exact=True).click()
    first_again.get_by_text("already answered this question").wait_for(timeout=10_000)
    expect(first_again.get_by_text(f"Answer received: {YES}")).to_be_visible()
    # The first phone's part is done (its two tabs): left open, each would draw the reveal and look for moves.
    for phone in (first, first_again):
        assert phone.locator(EXCEPTION).count() == 0
    first_again.close()
    first.goto("about:blank")

    lecturer.locator('[data-testid="stMetricValue"]', has_text="2 of 2").wait_for(timeout=10_000)
    lecturer.get_by_role("button", name="Reveal the model's answer").click()
    wait_for_figure(lecturer, "class_distribution")
    assert lecturer.evaluate(_BARS) == {YES: 1, NO: 1}
    wait_for_figure(second, "class_distribution")  # the phones show the class's answers after the reveal
    assert second.evaluate(_BARS) == {YES: 1, NO: 1}
    for page in (lecturer, second):
        assert page.locator(EXCEPTION).count() == 0
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    screenshot(lecturer, ARTIFACTS / "class_lecturer.png", max_height=720)
    screenshot(second, ARTIFACTS / "class_student.png", max_height=844)
    second.goto("about:blank")  # done: else it would look for a move every second meanwhile
    lecturer.reload()  # a new session: the lecturer's cookie brings the class back where it was
    lecturer.get_by_role("button", name="Reveal the model's answer").or_(
        lecturer.locator(".bvl-join-code")
    ).first.wait_for(timeout=30_000)
    expect(lecturer.locator(".bvl-join-code")).to_have_text(code)
    expect(
        lecturer.get_by_text(f"Step {walk.STEPS.index(NSP) + 1} of {len(walk.STEPS)}: {NSP.title}")
    ).to_be_visible()
