"""Live class load: one `streamlit run app.py`, one lecturer and N students on the Live class page.

Every participant is a client of Streamlit's websocket protocol (as bench/live_class_load.py, whose request
builder and helpers this reuses), and behaves like a browser: it sends the fragment reruns that a
`st.fragment(run_every=…)` asks for (ForwardMsg auto_rerun) on their timer. The lecturer starts a class; the
students open `/class?class=CODE` (the QR code's link) with a small random jitter; the lecturer presses Next
--moves times; then asks the walkthrough's question and each student presses one answer.

    python bench/live_class.py [--students 100] [--moves 3] [--machines 2] [--workers 1] [--postgresql]

By default one `streamlit run app.py`. --workers W runs `serve --workers W` instead (its haproxy in front, SQLite);
--machines N (2 or more) runs N simulated machines (devtools/machines.py): each a `serve` with --workers app
processes (default 1) and a data/ of its own, sharing one PostgreSQL server, behind an outer haproxy sticky by a
machine cookie, and every participant connects through that balancer. They share this machine's cores: set against
one machine with as many workers, the figure is the software's overhead (a second balancer, PostgreSQL over TCP), not
what real separate machines would give.

Prints, as key=value lines:
  students=                  how many students were on the page when the lecturer started moving
  p95_follow_s=              from the lecturer's Next (request sent) until a student's page shows that step's
                             heading, over every student and move (nearest-rank p95)
  p95_answer_to_projector_s= from a student's answer (request sent) until the lecturer's live count includes it
                             (the k-th acknowledged answer counts as included once the projector shows >= k)
  errors=                    exceptions or st.error shown, timeouts, disconnects, answers refused
  answers_lost=              acknowledged answers ("Answer received" shown) missing from the database afterwards
  idle_poll_cpu_percent=     the app processes' CPU while the N students only poll (no moves), in % of one core
  current_select_us=         one live_class.current() (the students' poll: one indexed SELECT), in this process
  students_per_machine=      with --machines: how many students the outer balancer sent to each machine

Goals (issue 21): 100 students, p95 follow and answer-to-projector < 2 s, 0 errors, 0 answers lost.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from streamlit.proto.Alert_pb2 import Alert  # noqa: E402
from streamlit.proto.BackMsg_pb2 import BackMsg  # noqa: E402
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402
from websockets.asyncio.client import connect  # noqa: E402

from bench._smoke import add_smoke_flag  # noqa: E402
from bench.live_class_load import CLIENT, LOOPBACK, describe_machine, percentile, rerun_request  # noqa: E402
from bertviz_lite.server import class_results, database, haproxy  # noqa: E402
from bertviz_lite.server import live_class as live  # noqa: E402
from devtools.machines import running_machines  # noqa: E402
from devtools.server import ARTIFACTS, free_port, start_streamlit, stop, wait_until_healthy  # noqa: E402

PAGE = "class"  # url_path of pages_app/live_class/11_Live_class.py
STEP_HEADING = re.compile(r"Step (\d+) of \d+")
JOIN_CODE = re.compile(r"bvl-join-code[^>]*>([A-Z0-9]+)<")
ANSWERS = re.compile(r"(\d+) of (\d+)")


@dataclass
class Participant:
    """One websocket session and what its screen showed, with the times (perf_counter) it showed them."""

    name: str
    query: str = ""
    address: str = (
        ""  # the X-Forwarded-For it claims (Streamlit's uvicorn trusts it from 127.0.0.1): its phone's own
    )
    steps: dict[int, float] = field(default_factory=dict)  # step number -> first time its heading arrived
    widget_ids: dict[str, str] = field(default_factory=dict)  # user key -> widget id
    page_hash: str = ""
    join_code: str = ""
    acknowledged: float | None = None  # "Answer received" arrived
    counts: list[tuple[float, int]] = field(default_factory=list)  # the projector's (time, answers so far)
    errors: list[str] = field(default_factory=list)
    finished: asyncio.Event = field(default_factory=asyncio.Event)
    ws: object = None
    timers: dict[str, asyncio.Task] = field(default_factory=dict)
    machine: str = ""  # with --machines: the machine the outer balancer sent it to

    def note(self, msg: ForwardMsg) -> None:
        now = time.perf_counter()
        kind = msg.WhichOneof("type")
        if kind == "navigation":
            self.page_hash = msg.navigation.page_script_hash
        elif kind == "auto_rerun" and msg.auto_rerun.fragment_id not in self.timers:
            self.timers[msg.auto_rerun.fragment_id] = asyncio.create_task(
                self.poll(msg.auto_rerun.fragment_id, msg.auto_rerun.interval)
            )
        elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            self.note_element(msg.delta.new_element, now)
        elif kind == "script_finished":
            self.finished.set()

    def note_element(self, element, now: float) -> None:
        kind = element.WhichOneof("type")
        widget = getattr(getattr(element, kind), "id", "") if kind in ("button", "selectbox") else ""
        if widget:
            self.widget_ids[widget.rsplit("-", 1)[-1]] = widget
        if kind == "heading" and (step := STEP_HEADING.search(element.heading.body)):
            self.steps.setdefault(int(step.group(1)), now)
        elif kind == "html" and (code := JOIN_CODE.search(element.html.body)):
            self.join_code = code.group(1)
        elif kind == "alert" and "Answer received" in element.alert.body:
            self.acknowledged = self.acknowledged or now
        elif kind == "alert" and element.alert.format in (Alert.ERROR, Alert.WARNING):
            self.errors.append(f"{self.name}: shown: {element.alert.body[:160]}")
        elif kind == "exception":
            self.errors.append(f"{self.name}: exception: {element.exception.message[:160]}")
        elif kind == "metric" and element.metric.label == "Answers so far":
            self.counts.append((now, int(ANSWERS.search(element.metric.body).group(1))))

    async def send(self, back: BackMsg) -> float:
        self.finished.clear()
        sent = time.perf_counter()
        await self.ws.send(back.SerializeToString())
        return sent

    async def click(self, key: str) -> float:
        """Press the button with this user key (a rerun with its trigger set), as a browser does."""
        back = rerun_request(page_hash=self.page_hash)
        back.rerun_script.query_string = self.query
        state = back.rerun_script.widget_states.widgets.add()
        state.id = self.widget_ids[key]
        state.trigger_value = True
        return await self.send(back)

    async def poll(self, fragment_id: str, interval: float) -> None:
        """A browser's timer for st.fragment(run_every=…): a fragment-scoped rerun every `interval` s."""
        while True:
            await asyncio.sleep(interval)
            back = rerun_request(page_hash=self.page_hash)
            back.rerun_script.query_string = self.query
            back.rerun_script.fragment_id = fragment_id
            back.rerun_script.is_auto_rerun = True
            await self.ws.send(back.SerializeToString())

    async def read(self) -> None:
        async for raw in self.ws:
            msg = ForwardMsg()
            msg.ParseFromString(raw)
            self.note(msg)

    async def open(self, port: int, timeout: float) -> None:
        headers = {"X-Forwarded-For": self.address} if self.address else None
        self.ws = await connect(
            f"ws://{LOOPBACK}:{port}/_stcore/stream",
            subprotocols=["streamlit"],
            max_size=None,
            proxy=None,
            ping_interval=None,
            open_timeout=timeout,
            additional_headers=headers,
        )
        self.machine = self.ws.response.headers.get(haproxy.MACHINE_HEADER, "")
        asyncio.create_task(self.read())
        back = rerun_request(page_name=PAGE)
        back.rerun_script.query_string = self.query
        await self.send(back)
        await asyncio.wait_for(self.finished.wait(), timeout)

    async def close(self) -> None:
        for task in self.timers.values():
            task.cancel()
        await self.ws.close()


async def wait_for(condition, timeout: float, what: str, errors: list[str]) -> bool:
    deadline = time.perf_counter() + timeout
    while not condition():
        if time.perf_counter() > deadline:
            errors.append(f"timeout: {what}")
            return False
        await asyncio.sleep(0.02)
    return True


async def join_students(port: int, code: str, count: int, args, rng: random.Random) -> list[Participant]:
    # Each phone has its own address on a lecture hall's Wi-Fi (one address is limited: issue 30).
    students = [
        Participant(f"student {i}", query=f"class={code}", address=f"10.{i // 250}.{i % 250}.1")
        for i in range(count)
    ]

    async def arrive(student: Participant) -> None:
        await asyncio.sleep(rng.uniform(0, args.jitter))
        try:
            await student.open(port, args.timeout)
        except (OSError, TimeoutError, asyncio.TimeoutError) as err:
            student.errors.append(f"{student.name}: could not open the page: {err!r}")

    await asyncio.gather(*(arrive(s) for s in students))
    return students


async def moves(lecturer: Participant, students: list[Participant], args, errors: list[str]) -> list[float]:
    """The lecturer presses Next; the seconds until each student's page shows the new step."""
    follow = []
    for move in range(args.moves):
        step = move + 2
        sent = await lecturer.click("class_next")
        await wait_for(
            lambda s=step: all(s in student.steps for student in students),
            args.timeout,
            f"every student showing step {step}",
            errors,
        )
        follow += [student.steps[step] - sent for student in students if step in student.steps]
    return follow


async def answers(
    lecturer: Participant, students: list[Participant], args, rng: random.Random, errors: list[str]
) -> tuple[list[float], int]:
    """The lecturer asks; every student presses an option; seconds until the projector counts each answer."""
    if not await wait_for(lambda: "class_ask_choice" in lecturer.widget_ids, args.timeout, "Ask", errors):
        return [], 0  # the lecturer's page never reached the step that asks (counted as an error)
    await lecturer.click("class_ask_choice")
    ready = await wait_for(
        lambda: all(any(k.startswith("class_option_") for k in s.widget_ids) for s in students),
        args.timeout,
        "every student showing the answer buttons",
        errors,
    )
    if not ready:
        return [], 0

    async def press(student: Participant) -> float:
        await asyncio.sleep(rng.uniform(0, args.jitter))
        option = rng.choice(sorted(k for k in student.widget_ids if k.startswith("class_option_")))
        return await student.click(option)

    sent = await asyncio.gather(*(press(s) for s in students))
    await wait_for(
        lambda: all(s.acknowledged for s in students), args.timeout, "every answer acknowledged", errors
    )
    acked = sorted((s.acknowledged, t) for s, t in zip(students, sent, strict=True) if s.acknowledged)
    await wait_for(
        lambda: lecturer.counts and lecturer.counts[-1][1] >= len(acked),
        args.timeout,
        "the projector counting every acknowledged answer",
        errors,
    )
    to_projector = []
    for rank, (_, sent_at) in enumerate(acked, start=1):
        shown = next((at for at, count in lecturer.counts if count >= rank and at >= sent_at), None)
        if shown is not None:
            to_projector.append(shown - sent_at)
    return to_projector, len(acked)


def cpu_seconds(pids: list[int]) -> float:
    """The CPU seconds these processes have used so far."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


async def session(port: int, server_pids: list[int], args) -> dict:
    rng = random.Random(args.seed)
    errors = []
    lecturer = Participant("lecturer")
    await lecturer.open(port, args.timeout)
    await lecturer.click("class_start")
    await wait_for(lambda: lecturer.join_code, args.timeout, "the join code", errors)
    lecturer.query = f"class={lecturer.join_code}"
    students = await join_students(port, lecturer.join_code, args.students, args, rng)
    await wait_for(
        lambda: all(1 in s.steps for s in students), args.timeout, "every student on step 1", errors
    )
    before = cpu_seconds(server_pids)
    await asyncio.sleep(args.idle)  # everyone only polls: the cost of following
    idle_cpu = (cpu_seconds(server_pids) - before) / args.idle * 100
    follow = await moves(lecturer, students, args, errors)
    to_projector, acknowledged = await answers(lecturer, students, args, rng, errors)
    question = live.current(lecturer.join_code).question
    counted = class_results.answer_count(question.id) if question else 0
    for participant in (lecturer, *students):
        errors += participant.errors
        await participant.close()
    return {
        "students": sum(1 in s.steps for s in students),
        "follow": follow,
        "to_projector": to_projector,
        "errors": errors,
        "answers_lost": max(0, acknowledged - counted),
        "idle_cpu": idle_cpu,
        "per_machine": {
            m: sum(s.machine == m for s in students) for m in sorted({s.machine for s in students})
        },
    }


def select_cost_us(repeats: int = 2000) -> float:
    """One student's poll (live_class.current) on the store this process uses, in µs."""
    code, _ = live.start_class(live.Position("x", "a", "b"))
    start = time.perf_counter()
    for _ in range(repeats):
        live.current(code, "0" * 32)
    return (time.perf_counter() - start) / repeats * 1e6


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=100)
    parser.add_argument("--moves", type=int, default=3, help="times the lecturer presses Next (from step 1)")
    parser.add_argument(
        "--jitter", type=float, default=2.0, help="students arrive and answer within this many s"
    )
    parser.add_argument("--idle", type=float, default=10.0, help="seconds of polling only, for its CPU cost")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--machines",
        type=int,
        default=1,
        help="simulated machines behind an outer haproxy (1: one streamlit)",
    )
    parser.add_argument(
        "--workers", type=int, default=0, help="app processes of each machine's serve (0: one streamlit run)"
    )
    parser.add_argument("--postgresql", action="store_true", help="one machine on PostgreSQL, not SQLite")
    add_smoke_flag(
        parser, argv, students=1, jitter=0.0, idle=0.1
    )  # the 3 moves reach step 4, the first that asks
    return parser.parse_args(argv)


def on_machines(args) -> dict:
    """The session through `serve` on --machines simulated machines (behind an outer balancer, sharing PostgreSQL,
    when there are several)."""
    logs = ARTIFACTS / "live_classroom_machines"  # every machine's serve, haproxy and worker logs, kept
    shutil.rmtree(logs, ignore_errors=True)
    postgresql = args.machines > 1 or args.postgresql
    with running_machines(
        args.machines, args.workers, trust_clients=True, logs=logs, postgresql=postgresql
    ) as cluster:
        if cluster.database_url:
            os.environ[database.DATABASE_URL_SETTING] = (
                cluster.database_url
            )  # this script reads the same store
        else:
            os.environ[database.DATA_DIR_SETTING] = str(cluster.machines[0].folder / "data")
        app_pids = [pid for machine in cluster.machines for pid in machine.processes()]
        result = asyncio.run(session(int(cluster.url.rsplit(":", 1)[1]), app_pids, args))
        result["select_us"] = select_cost_us()
        database.close_all()
    return result


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print(describe_machine())
    print(
        f"Client: {CLIENT}; one lecturer and {args.students} students, {args.moves} moves, jitter {args.jitter:g} s"
    )
    args.workers = max(args.workers, 1) if args.machines > 1 else args.workers
    if args.workers:
        store = "PostgreSQL" if args.machines > 1 or args.postgresql else "SQLite"
        where = "behind an outer haproxy" if args.machines > 1 else "serve's haproxy in front"
        print(f"{args.machines} machine(s) × {args.workers} workers, {store}, {where}")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="live_classroom_") as data:
        os.environ[database.DATA_DIR_SETTING] = data  # the server and this script share one fresh database
        if args.workers:
            result = on_machines(args)
        else:
            port = free_port()
            server = start_streamlit(port, ARTIFACTS / "live_classroom_streamlit.log")
            try:
                wait_until_healthy(f"http://{LOOPBACK}:{port}", server)
                result = asyncio.run(session(port, [server.pid], args))
            finally:
                stop(server)
            result["select_us"] = select_cost_us()
        database.close_all()
    for error in result["errors"][:10]:
        print(f"  error: {error}")
    print(f"students={result['students']}")
    print(f"p95_follow_s={percentile(result['follow'], 95):.2f}")
    print(f"p95_answer_to_projector_s={percentile(result['to_projector'], 95):.2f}")
    print(f"errors={len(result['errors'])}")
    print(f"answers_lost={result['answers_lost']}")
    print(f"idle_poll_cpu_percent={result['idle_cpu']:.0f}")
    print(f"current_select_us={result['select_us']:.0f}")
    if args.machines > 1:
        print("students_per_machine=" + ",".join(f"{m}:{n}" for m, n in result["per_machine"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
