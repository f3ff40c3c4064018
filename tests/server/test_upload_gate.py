"""The upload gate's rules (server/upload_gate.py), without a server; tests/browser/test_upload_gate_browser.py
sends the hostile uploads to a real `streamlit run app.py`."""

from __future__ import annotations

import asyncio

import pytest

from bertviz_lite import limits
from bertviz_lite.server import upload_gate
from bertviz_lite.server.upload_gate import ADDRESS_UPLOADS, MULTIPART_FRAMING, Refusal, Ticket, UploadGate

CORPUS = 5_000_000
NOTHING_HELD = (0, 0)


def gate_for(session: str = "s", limit: int = CORPUS, budget: int = 10 * CORPUS) -> UploadGate:
    gate = UploadGate(budget=budget)
    gate.allow(session, limit)
    return gate


def test_a_session_whose_pages_showed_no_uploader_may_not_upload():
    answer = UploadGate(budget=10**9).admit("never-saw-an-uploader", "a", 10, NOTHING_HELD, 0)
    assert answer == Refusal(403, "This page takes no upload.")


def test_an_upload_over_the_pages_limit_is_refused_by_its_declared_length():
    gate = gate_for()
    answer = gate.admit("s", "a", 60 * limits.MB, NOTHING_HELD, 0)
    assert isinstance(answer, Refusal) and answer.status == 413 and "5 MB" in answer.reason
    assert isinstance(gate.admit("s", "a", CORPUS, NOTHING_HELD, 0), Ticket)


def test_a_chunked_upload_reserves_the_whole_limit():
    ticket = gate_for().admit("s", "a", None, NOTHING_HELD, 0)
    assert ticket == Ticket("a", CORPUS + MULTIPART_FRAMING)


def test_a_session_holds_one_limits_worth_of_files():
    gate = gate_for()
    answer = gate.admit("s", "a", 2 * limits.MB, (1, 4 * limits.MB), 0)
    assert isinstance(answer, Refusal) and answer.status == 413 and "earlier upload" in answer.reason
    assert isinstance(gate.admit("s", "a", 2 * limits.MB, (3, 0), 0), Ticket)
    assert isinstance(gate.admit("s", "a", 10, (upload_gate.SESSION_FILES, 0), 0), Refusal)


def test_uploads_in_flight_per_address_are_bounded_and_freed():
    gate = gate_for()
    tickets = [gate.admit("s", "a", 100, NOTHING_HELD, 0) for _ in range(ADDRESS_UPLOADS)]
    assert all(isinstance(t, Ticket) for t in tickets)
    assert gate.admit("s", "a", 100, NOTHING_HELD, 0) == Refusal(
        429, "Too many uploads at once from your address; wait for one to finish."
    )
    assert isinstance(gate.admit("s", "another address", 100, NOTHING_HELD, 0), Ticket)
    gate.release(tickets[0])
    assert isinstance(gate.admit("s", "a", 100, NOTHING_HELD, 0), Ticket)


def test_the_servers_budget_counts_what_is_held_and_in_flight():
    gate = gate_for(budget=3 * CORPUS)
    assert isinstance(gate.admit("s", "a", CORPUS, NOTHING_HELD, CORPUS), Ticket)
    full = gate.admit("s", "b", CORPUS, NOTHING_HELD, 2 * CORPUS)  # held 2, in flight 1: no room for a fourth
    assert isinstance(full, Refusal) and full.status == 503


def test_the_largest_limit_a_session_was_shown_holds():
    gate = gate_for(limit=CORPUS)
    gate.allow("s", 1000)
    assert gate.session_limit("s") == CORPUS


def test_the_budget_setting_is_read_and_checked():
    assert upload_gate.budget_bytes({}) == upload_gate.DEFAULT_BUDGET_MB * limits.MB
    assert upload_gate.budget_bytes({"BERTVIZ_LITE_UPLOAD_MEMORY_MB": "100"}) == 100 * limits.MB
    with pytest.raises(ValueError, match="BERTVIZ_LITE_UPLOAD_MEMORY_MB"):
        upload_gate.budget_bytes({"BERTVIZ_LITE_UPLOAD_MEMORY_MB": "-1"})


def _put(path: str, body: bytes, chunk: int, headers=()):
    """Send `body` through the gated ASGI app in chunks; returns (status, what the route read)."""
    sent = [body[i : i + chunk] for i in range(0, len(body), chunk)] or [b""]
    answers = []
    read = []

    async def receive():
        piece = sent.pop(0) if sent else b""
        return {"type": "http.request", "body": piece, "more_body": bool(sent)}

    async def send(message):
        answers.append(message)

    async def route(scope, receive, send):
        while True:
            message = await receive()
            read.append(len(message["body"]))
            if not message["more_body"]:
                break
        await send({"type": "http.response.start", "status": 204, "headers": []})

    scope = {"type": "http", "path": path, "client": ("10.0.0.1", 1), "headers": list(headers)}
    asyncio.run(upload_gate.wrap(route, lambda _session: NOTHING_HELD, lambda: 0)(scope, receive, send))
    return answers[0]["status"], sum(read)


def test_a_chunked_body_is_cut_off_once_it_passes_the_limit(monkeypatch):
    monkeypatch.setattr(upload_gate, "GATE", gate_for("sess", limit=limits.MB))
    status, read = _put("/_stcore/upload_file/sess/f1", b"x" * (20 * limits.MB), 65536)
    assert status == 413
    assert read <= limits.MB + MULTIPART_FRAMING  # of 20 MB sent: the route never saw more than the limit


def test_a_declared_length_over_the_limit_is_refused_before_a_byte_is_read(monkeypatch):
    monkeypatch.setattr(upload_gate, "GATE", gate_for("sess", limit=limits.MB))
    length = [(b"content-length", str(20 * limits.MB).encode())]
    assert _put("/_stcore/upload_file/sess/f1", b"x" * (20 * limits.MB), 65536, length) == (413, 0)


def test_the_gate_frees_its_slot_after_a_refused_or_stored_upload(monkeypatch):
    gate = gate_for("sess", limit=limits.MB)
    monkeypatch.setattr(upload_gate, "GATE", gate)
    for _ in range(ADDRESS_UPLOADS + 1):
        assert _put("/_stcore/upload_file/sess/f1", b"x" * 1000, 100)[0] == 204
        assert _put("/_stcore/upload_file/sess/f2", b"x" * (3 * limits.MB), 65536)[0] == 413
    assert gate.admit("sess", "10.0.0.1", 10, NOTHING_HELD, 0) == Ticket("10.0.0.1", 10)
