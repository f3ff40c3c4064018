"""Other app processes for the tests of shared state (tests/server/test_live_class.py and test_shared_state.py,
tests/runs/test_runs.py), forked from one server that has imported the package once (multiprocessing's forkserver):
each fresh Python paid 1.6 s of CPU importing torch through the package's facade before its first line of work.
A forked process finds its settings in its environment, as one started with them would (`environment`: the server's
own environment is the one it had when it started)."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
from collections.abc import Mapping
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event

from bertviz_lite.atomic import exclusive_lock
from bertviz_lite.runs import lifecycle
from bertviz_lite.server import access, class_joining


def forkserver() -> multiprocessing.context.ForkServerContext:
    """Processes forked from one server process that has imported this module (and so the package and torch)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    return context


def answer_as_students(
    store, code: str, question: int, phone: int, count: int, go: Event, acks: Connection
) -> None:
    """Once `go` is set, join and answer for `count` students, sending each index on `acks` once answer() returned."""
    acks.send("ready")
    go.wait()  # every process starts answering at the same moment
    for i in range(count):
        address = f"10.{phone}.{i // 250}.{i % 250}"  # phones of their own: one address is limited
        student = class_joining.join(code, f"phone-{phone}-{i}", address, store=store)
        class_joining.answer(code, student, question, "Yes" if i % 3 else "No", address=address, store=store)
        acks.send(i)  # acknowledged: answer() returned


def guess_admin_tokens(environment: Mapping[str, str], visitor_id: str, token: str, talk: Connection) -> None:
    """Three wrong admin tokens; then, once told, the right one: what it says (a lockout's sentence, or "accepted")."""
    os.environ.clear()
    os.environ.update(environment)
    talk.send([access.check_admin_token(visitor_id, "guess") for _ in range(3)])
    talk.recv()
    try:
        access.check_admin_token(visitor_id, token)
        talk.send("accepted")
    except access.AdminLockout as err:
        talk.send(str(err))


def launch_and_exit(environment: Mapping[str, str], options: dict, launch: dict, reply: Connection) -> None:
    """lifecycle.launch_run(options, **launch), replying the run's name, then the end of the process (as an app
    restarted mid-run)."""
    os.environ.clear()
    os.environ.update(environment)
    reply.send(lifecycle.launch_run(options, **launch).name)


def in_another_app_process(context, target, *args):
    """What target(*args, reply) replies, run in a process forked from the server, once that process has ended well."""
    replies, reply = context.Pipe(duplex=False)
    process = context.Process(target=target, args=(*args, reply))
    process.start()
    reply.close()
    process.join(timeout=60)
    assert process.exitcode == 0, f"{target.__name__} ended with {process.exitcode}"
    return replies.recv()


def hold_folder_lock(folder: str, talk: Connection) -> None:
    """Hold the folder's lock until the test closes its end of `talk`."""
    with exclusive_lock(folder):
        talk.send("held")
        with contextlib.suppress(EOFError):
            talk.recv()
