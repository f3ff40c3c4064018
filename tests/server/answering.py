"""An app process answering a live class for students of its own (tests/server/test_live_class.py), run in a process
forked from a server that has imported the package once (multiprocessing's forkserver): each fresh Python paid 1.6 s
of CPU importing torch through the package's facade, before its first answer."""

from __future__ import annotations

import multiprocessing
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event

from bertviz_lite.server import class_joining


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


def forkserver() -> multiprocessing.context.ForkServerContext:
    """Processes forked from one server process that has imported this module (and so the package and torch)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    return context
