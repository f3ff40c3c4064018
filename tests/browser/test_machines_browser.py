"""Two app machines behind one balancer, simulated here (devtools/machines.py): two `serve`s with their own ports,
workers and data/, sharing one PostgreSQL and checkpoints/, behind an outer haproxy sticky by the `bvl_machine`
cookie. A run started through machine A is watched and stopped through machine B; a lecturer on A and students on
A and B share one class and one projector; machine A dies and no acknowledged answer is lost, the class goes on
through B.

A browser is pinned to a machine by its `bvl_machine` cookie, as the outer balancer would have set it; the machine
that answered is named in the X-Bertviz-Lite-Machine header.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from bertviz_lite.inspection import walkthrough as walk
from bertviz_lite.loading.run_folder import CHECKPOINTS_DIR
from bertviz_lite.runs import lifecycle
from bertviz_lite.server import haproxy
from devtools.machines import running_machines
from devtools.postgresql import fresh_schema
from devtools.waiting import wait_until
from tests.browser.driver import EXCEPTION, NEEDS_DEFAULT_MODEL, choose_option, wait_for_idle
from tests.browser.test_training_browser import QUIET, start_run, wait_for_run_to_show

pytestmark = [pytest.mark.browser, NEEDS_DEFAULT_MODEL]
VISITOR_ID = "machines-test-visitor-0123456789"
YES, NO = walk.NSP_OPTIONS
NSP = walk.STEPS[walk.step_number("nsp") - 1]
STEPS = len(walk.STEPS)
A = haproxy.machine_name(0)
B = haproxy.machine_name(1)


@pytest.fixture(scope="module")
def machines(postgresql_server):
    """Machines A and B (one worker each) behind the outer balancer, on a fresh schema of the session's server."""
    if haproxy.haproxy_binary() is None:
        pytest.skip(haproxy.INSTALL_HINT)
    with running_machines(2, 1, database_url=fresh_schema(postgresql_server)) as cluster:
        yield cluster


def on_machine(
    visitor, url: str, machine: str, path: str, visitor_id: str | None = None, page=None, **context
):
    """A new browser session pinned to `machine` by its balancer cookie (and a visitor id, if given), in `page` or a
    new visitor's tab: the page, after its first run, and the machine that served it."""
    page = page or visitor(**({"viewport": {"width": 1280, "height": 800}} | context))
    cookies = {haproxy.MACHINE_COOKIE: machine, **({"bvl_visitor": visitor_id} if visitor_id else {})}
    page.context.add_cookies([{"name": name, "value": value, "url": url} for name, value in cookies.items()])
    response = page.goto(f"{url}/{path}")
    page.locator('[data-testid="stMain"] [data-testid="stHeading"]').first.wait_for(timeout=90_000)
    wait_for_idle(page)
    return page, response.headers[haproxy.MACHINE_HEADER.lower()]


def test_a_run_started_through_machine_a_is_watched_and_stopped_through_machine_b(
    machines, visitor, run_name
):
    wait_until(lambda: not lifecycle.active_runs(CHECKPOINTS_DIR), 120, "no run training in checkpoints/")
    starter, served = on_machine(visitor, machines.url, A, "train", VISITOR_ID)
    assert served == A
    start_run(starter, run_name, QUIET)
    assert starter.locator(EXCEPTION).count() == 0

    # The visitor opens the run again with its cookie naming B: a new session there. (In the same tab, as the serve
    # test does: a second tab would keep watching the run through A, refreshing its panel, until the end of the test.)
    watcher, served = on_machine(visitor, machines.url, B, f"train?run={run_name}", VISITOR_ID, page=starter)
    assert served == B
    wait_for_run_to_show(watcher)  # B shows A's run training, from the run folder both share
    watcher.locator(".st-key-train_stop button").first.click()
    watcher.get_by_text("Stopped at step").wait_for(timeout=60_000)
    assert lifecycle.run_state(CHECKPOINTS_DIR / run_name).state == "stopped"
    assert watcher.locator(EXCEPTION).count() == 0


def _student(visitor, url: str, machine: str, code: str):
    phone = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
    page, served = on_machine(visitor, url, machine, f"class?class={code}", **phone)
    page.get_by_text(f"Step 1 of {STEPS}").or_(
        page.get_by_text(f"Step {walk.step_number('nsp')} of {STEPS}: {NSP.title}")
    ).first.wait_for(timeout=60_000)
    return page, served


def _answer(page, option: str) -> None:
    page.get_by_role("button", name=option, exact=True).click()
    page.get_by_text(f"Answer received: {option}").wait_for(timeout=20_000)


def _projector_counts(lecturer, answers: int) -> None:
    lecturer.locator('[data-testid="stMetricValue"]', has_text=f"{answers} of").wait_for(timeout=60_000)


def test_answers_through_both_machines_reach_one_projector_and_machine_a_dying_loses_none(machines, visitor):
    lecturer, served = on_machine(visitor, machines.url, A, "class")
    assert served == A
    lecturer.get_by_role("button", name="Start a class").click()
    code = lecturer.locator(".bvl-join-code").inner_text(timeout=30_000).strip()
    wait_for_idle(lecturer)
    on_a, served_a = _student(visitor, machines.url, A, code)
    on_b, served_b = _student(visitor, machines.url, B, code)
    assert (served_a, served_b) == (A, B)
    choose_option(lecturer, "class_step", NSP.title)
    lecturer.get_by_role("button", name="Ask the question").click()
    wait_for_idle(lecturer)
    for phone in (on_a, on_b):  # both machines' students follow the lecturer on A
        phone.get_by_role("button", name=YES, exact=True).wait_for(timeout=20_000)
    _answer(on_a, YES)
    _answer(on_b, NO)
    _projector_counts(lecturer, 2)  # the projector on A counts the answer given through B

    machines.machines[0].die()  # machine A: serve, haproxy and worker killed at once
    lecturer.reload()  # a new session; A is gone, so the balancer sends it to B (its lead cookie comes along)
    lecturer.get_by_text(f"Step {walk.step_number('nsp')} of {STEPS}: {NSP.title}").wait_for(timeout=90_000)
    _projector_counts(lecturer, 2)  # both acknowledged answers are there, the one given through A included
    on_a.reload()  # on B now, the same student (its visitor cookie), with its answer
    expect(on_a.get_by_text(f"Answer received: {YES}")).to_be_visible(timeout=60_000)
    late, served = _student(visitor, machines.url, A, code)  # its cookie names A: the balancer sends it to B
    assert served == B
    _answer(late, YES)
    _projector_counts(lecturer, 3)  # the class goes on through B
    for page in (lecturer, on_a, on_b, late):
        assert page.locator(EXCEPTION).count() == 0
