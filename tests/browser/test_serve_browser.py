"""Two app workers behind HAProxy (`python -m bertviz_lite.serve --workers 2`): a visitor stays on one worker, a
run started through one worker is stopped through the other, a killed worker comes back, and stopping serve leaves
no process behind.

The worker that answered is named in the X-Bertviz-Lite-Worker header haproxy adds to every answer.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import http.cookiejar
import os
import signal
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

from bertviz_lite.loading.run_folder import CHECKPOINTS_DIR
from bertviz_lite.runs import lifecycle
from bertviz_lite.server import haproxy
from bertviz_lite.server.balancer import WORKER_SETTING
from devtools.server import REPO, free_port, serve_command
from devtools.waiting import wait_until
from tests.browser.driver import wait_for_idle
from tests.browser.test_training_browser import QUIET, start_run

pytestmark = pytest.mark.browser
VISITOR_ID = "serve-test-visitor-0123456789"


def children_of(pid: int) -> list[int]:
    """Live processes whose parent is `pid` (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                found.append(int(stat.parent.name))
    return found


@dataclass
class Balanced:
    url: str
    serve: subprocess.Popen
    out: Path

    def worker_pid(self, index: int) -> int:
        """The pid of worker `index` (its environment names it)."""
        marker = f"{WORKER_SETTING}={index}".encode()
        return next(
            pid
            for pid in children_of(self.serve.pid)
            if marker in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        )


@pytest.fixture(scope="module")
def balanced(tmp_path_factory):
    """haproxy in front of two workers, started as a user would; on teardown, SIGTERM and no process left behind."""
    if haproxy.haproxy_binary() is None:
        pytest.skip(haproxy.INSTALL_HINT)
    run_dir = tmp_path_factory.mktemp("serve")
    port = free_port()
    out = run_dir / "serve.out"
    with open(out, "w") as handle:
        serve = subprocess.Popen(
            serve_command(2, port, run_dir),
            cwd=REPO,
            stdout=handle,
            stderr=subprocess.STDOUT,
        )
    children = []
    try:
        wait_until(
            lambda: serve.poll() is not None or "open http://" in out.read_text(), 120, "serve to say open"
        )
        assert serve.poll() is None, out.read_text()
        assert len(children_of(serve.pid)) == 3, out.read_text()  # two workers and haproxy
        yield Balanced(f"http://127.0.0.1:{port}", serve, out)
    finally:
        children = children_of(serve.pid)
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(timeout=30) == 0, out.read_text()
    assert "Stopping haproxy and the workers" in out.read_text()
    assert children and not [
        pid for pid in children if Path(f"/proc/{pid}").exists()
    ]  # no orphans, no zombies


def in_own_loop(coroutine):
    """asyncio.run in a thread of its own: Playwright's sync API keeps an event loop running in this one."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def get(opener, url: str) -> str:
    with opener.open(url, timeout=30) as response:
        return response.headers[haproxy.WORKER_HEADER]


def test_a_visitor_stays_on_one_worker_and_new_visitors_are_spread(balanced):
    balanced_url = balanced.url
    plain = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    assert {get(plain, f"{balanced_url}/") for _ in range(6)} == {"w0", "w1"}  # no cookie: both workers serve
    jar = http.cookiejar.CookieJar()
    browser = urllib.request.build_opener(
        urllib.request.ProxyHandler({}), urllib.request.HTTPCookieProcessor(jar)
    )
    first = get(browser, f"{balanced_url}/")
    assert [c.value for c in jar if c.name == haproxy.COOKIE] == [first]
    paths = ["/", "/Attention", "/_stcore/health", "/_stcore/host-config"] * 5
    assert {get(browser, f"{balanced_url}{path}") for path in paths} == {first}

    async def stream_worker() -> str:  # the websocket carries the same cookie to the same worker
        url = balanced_url.replace("http://", "ws://") + "/_stcore/stream"
        async with connect(
            url,
            subprotocols=["streamlit"],
            proxy=None,
            additional_headers={"Cookie": f"{haproxy.COOKIE}={first}"},
        ) as ws:
            return ws.response.headers[haproxy.WORKER_HEADER]

    assert in_own_loop(stream_worker()) == first


def page_on_worker(page, url: str, worker: str):
    """A new browser session of the one visitor in `page`, its balancer cookie pinned to `worker`; who served it."""
    page.context.add_cookies(
        [
            {"name": name, "value": value, "url": url}
            for name, value in ((haproxy.COOKIE, worker), ("bvl_visitor", VISITOR_ID))
        ]
    )
    response = page.goto(url)
    page.locator('[data-testid="stMain"] [data-testid="stHeading"]').first.wait_for(timeout=60_000)
    wait_for_idle(page)
    return response.headers[haproxy.WORKER_HEADER.lower()]


def test_a_run_started_through_one_worker_is_stopped_through_the_other(balanced, page, run_name):
    balanced_url = balanced.url
    # An earlier test's run may still be saving its last step: wait for the slot (the browser tests run one by one).
    wait_until(lambda: not lifecycle.active_runs(CHECKPOINTS_DIR), 120, "no run training in checkpoints/")
    assert page_on_worker(page, f"{balanced_url}/train", "w0") == "w0"
    start_run(page, run_name, QUIET)
    assert lifecycle.run_state(CHECKPOINTS_DIR / run_name).active

    # The visitor opens the run again with its cookie naming the other worker: a new session there. (In the same
    # tab: a second tab would keep watching the run through w0, redrawing its curves, until the end of the test.)
    assert page_on_worker(page, f"{balanced_url}/train?run={run_name}", "w1") == "w1"
    page.locator(".st-key-train_stop button").first.click()  # w1 sees w0's run as this visitor's
    page.get_by_text("Stopped at step").wait_for(timeout=60_000)
    assert lifecycle.run_state(CHECKPOINTS_DIR / run_name).state == "stopped"


def test_a_worker_that_dies_is_started_again_and_its_cookie_leads_back_to_it(balanced):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    opener.addheaders = [("Cookie", f"{haproxy.COOKIE}=w1")]
    os.kill(balanced.worker_pid(1), signal.SIGKILL)
    wait_until(
        lambda: "worker 1 exited with code -9: starting it again" in balanced.out.read_text(), 30, "a restart"
    )
    assert get(opener, f"{balanced.url}/_stcore/health") in {
        "w0",
        "w1",
    }  # meanwhile haproxy sends it elsewhere
    wait_until(lambda: get(opener, f"{balanced.url}/_stcore/health") == "w1", 60, "worker 1 back in haproxy")


def test_each_worker_was_warmed_and_the_warm_up_path_is_closed_to_visitors(balanced):
    plain = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with pytest.raises(urllib.error.HTTPError) as refused:  # a full script run on request is serve's alone
        plain.open(f"{balanced.url}{haproxy.WARM_UP_PATH}", timeout=30)
    assert refused.value.code == 403
    assert "2 of 2 workers warmed up in" in balanced.out.read_text()  # each ran app.py once before "open"
