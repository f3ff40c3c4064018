"""The door in front of Streamlit's upload route: an upload is refused before its bytes are held.

Streamlit (1.67) takes a PUT to /_stcore/upload_file/{session}/{file id} of up to `server.maxUploadSize` (850 MB) for
any file id of any live session, whatever that session's page shows, and keeps each file in memory until the session
ends: one visitor could park 850 MB per request, as many times as they liked. The gate lets an upload in only when

- the session's page has shown an uploader (`allow`: the page declares its uploader's limit), and the upload is within
  that limit: by its Content-Length before any byte is read, and counted as the bytes arrive (chunked bodies);
- the session holds, with it, at most `SESSION_FILES` files and one limit's worth of bytes (a page lets go of an
  upload it has used, and the uploader deletes a file it replaces);
- its client address has fewer than `ADDRESS_UPLOADS` uploads in flight;
- every upload held or in flight in this process, with it, stays within the server's budget (BERTVIZ_LITE_UPLOAD_MEMORY_MB).

Refusals are HTTP answers (413 too large, 429 too many at once from one address, 503 the server's budget is spent);
the uploader shows them on the file. `wrap` puts the gate around Streamlit's PUT route (server/app_routes.py does it).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from bertviz_lite import limits
from bertviz_lite.server import settings

BUDGET_SETTING = "BERTVIZ_LITE_UPLOAD_MEMORY_MB"  # uploads held and in flight in one app process, in MB
DEFAULT_BUDGET_MB = 2 * limits.MAX_UPLOAD_MB  # two of the largest uploads at once
SESSION_FILES = 4  # files one session may hold at once (our uploaders take one file each)
ADDRESS_UPLOADS = 2  # uploads in flight from one client address
MULTIPART_FRAMING = limits.MB  # a multipart body is a little larger than the file it carries
MAX_SESSIONS = 10_000  # sessions whose limit is remembered (the oldest are forgotten first)
UPLOAD_PATH = "/_stcore/upload_file/"


@dataclass(frozen=True)
class Refusal:
    """Why an upload is refused: the HTTP status and one sentence."""

    status: int
    reason: str


@dataclass(frozen=True)
class Ticket:
    """An admitted upload: its address and the bytes reserved for it until `UploadGate.release`."""

    address: str
    reserved: int


def budget_bytes(environ: Mapping[str, str] = os.environ) -> int:
    """The server's upload budget in bytes (BERTVIZ_LITE_UPLOAD_MEMORY_MB, DEFAULT_BUDGET_MB when unset)."""
    return int(settings.positive_number(BUDGET_SETTING, DEFAULT_BUDGET_MB, environ) * limits.MB)


class UploadGate:
    """Which uploads may come in: the sessions' declared limits, the uploads in flight, the server's budget."""

    def __init__(self, budget: int | None = None) -> None:
        self.budget = budget_bytes() if budget is None else budget
        self._lock = threading.Lock()
        self._limits: OrderedDict[str, int] = OrderedDict()  # session id -> bytes its page's uploader allows
        self._in_flight: dict[str, int] = {}  # client address -> uploads in flight
        self._reserved = 0  # bytes reserved by uploads in flight

    def allow(self, session_id: str, limit_bytes: int) -> None:
        """A page showed `session_id` an uploader that takes files up to `limit_bytes`."""
        with self._lock:
            self._limits[session_id] = max(limit_bytes, self._limits.pop(session_id, 0))
            while len(self._limits) > MAX_SESSIONS:
                self._limits.popitem(last=False)

    def session_limit(self, session_id: str) -> int:
        """The largest upload `session_id` may make (0: its pages have shown no uploader)."""
        with self._lock:
            return self._limits.get(session_id, 0)

    def admit(
        self, session_id: str, address: str, declared: int | None, held: tuple[int, int], held_by_all: int
    ) -> Ticket | Refusal:
        """Let an upload in, or say why not. `declared`: its Content-Length (None: chunked);
        `held`: the files and bytes this session holds already; `held_by_all`: the bytes every session holds."""
        limit = self.session_limit(session_id)
        if limit <= 0:
            return Refusal(403, "This page takes no upload.")
        if declared is not None and declared > limit + MULTIPART_FRAMING:
            return Refusal(413, f"The file is larger than this page takes ({limit / limits.MB:.0f} MB).")
        files, held_bytes = held
        size = limit + MULTIPART_FRAMING if declared is None else declared
        if files >= SESSION_FILES or held_bytes + size > limit + MULTIPART_FRAMING:
            return Refusal(413, "You have an earlier upload on the server; remove it (×) first.")
        with self._lock:
            if self._in_flight.get(address, 0) >= ADDRESS_UPLOADS:
                return Refusal(429, "Too many uploads at once from your address; wait for one to finish.")
            if held_by_all + self._reserved + size > self.budget:
                return Refusal(503, "The server is taking as many uploads as it can; try again in a minute.")
            self._in_flight[address] = self._in_flight.get(address, 0) + 1
            self._reserved += size
        return Ticket(address, size)

    def release(self, ticket: Ticket) -> None:
        """An admitted upload has ended (stored or refused): its slot and reservation are free."""
        with self._lock:
            self._reserved -= ticket.reserved
            left = self._in_flight.get(ticket.address, 0) - 1
            if left > 0:
                self._in_flight[ticket.address] = left
            else:
                self._in_flight.pop(ticket.address, None)


GATE = UploadGate()  # one per app process: uploads land in the process that serves the session


class TooLarge(Exception):
    """The body grew past what the gate admitted."""


def _session_and_file(path: str) -> tuple[str, str] | None:
    rest = path.split(UPLOAD_PATH, 1)[1] if UPLOAD_PATH in path else ""
    parts = rest.split("/")
    return (parts[0], parts[1]) if len(parts) == 2 and all(parts) else None


def _declared_length(headers: list[tuple[bytes, bytes]]) -> int | None:
    for name, value in headers:
        if name.lower() == b"content-length":
            try:
                return max(0, int(value))
            except ValueError:
                return 10**15  # refused as too large: a body whose length cannot be read
    return None


async def _refuse(send: Callable, refusal: Refusal) -> None:
    body = refusal.reason.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _counted(receive: Callable, cap: int) -> Callable:
    """`receive` that raises TooLarge once more than `cap` body bytes have arrived."""
    seen = 0

    async def counted_receive():
        nonlocal seen
        message = await receive()
        seen += len(message.get("body", b""))
        if seen > cap:
            raise TooLarge
        return message

    return counted_receive


def wrap(
    route_app: Callable, held: Callable[[str], tuple[int, int]], held_by_all: Callable[[], int]
) -> Callable:
    """Streamlit's PUT upload route behind the gate. `held(session_id)`: (files, bytes) the session holds;
    `held_by_all()`: bytes every session holds (both read from Streamlit's upload manager)."""

    async def gated(scope, receive, send):
        ids = _session_and_file(scope.get("path", ""))
        if ids is None:
            return await route_app(scope, receive, send)
        address = (scope.get("client") or ("unknown",))[0]
        declared = _declared_length(scope.get("headers", []))
        answer = GATE.admit(ids[0], address, declared, held(ids[0]), held_by_all())
        if isinstance(answer, Refusal):
            return await _refuse(send, answer)
        try:
            await route_app(scope, _counted(receive, answer.reserved), send)
        except TooLarge:
            await _refuse(send, Refusal(413, "The file is larger than this page takes."))
        finally:
            GATE.release(answer)

    return gated
