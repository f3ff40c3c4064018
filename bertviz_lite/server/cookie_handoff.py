"""Cookies parked for one fetch: how a page hands a secret to the browser as an HttpOnly cookie.

Page scripts cannot set an HttpOnly cookie; only an HTTP answer can. A page parks the cookie here under a
one-use nonce (`park`) and has the browser fetch the app's cookie route with the nonce; the route takes it
(`take`: once, within PARK_S seconds, in whichever app process answers) and sets it on its answer, HttpOnly,
SameSite=Strict, and Secure when the page came over HTTPS. The secret itself never appears in the page.
`app_routes.install` adds that route (ROUTE_PATH) to the app's own server; without one (AppTest) nothing is set.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass

from bertviz_lite.server import database
from bertviz_lite.server.access import ADMIN_COOKIE

ROUTE_PATH = "/_bvl/cookie"  # GET ?n=NONCE sets the cookie parked under NONCE
PARK_S = 120.0  # a parked cookie is fetched within this, or never
LEAD_COOKIE = "bvl_class_lead"  # CODE.SECRET of the class this browser leads (a reload still leads it)
COOKIE_NAMES = (LEAD_COOKIE, ADMIN_COOKIE)  # the only cookies the route sets
MAX_VALUE_CHARS = 512
SCHEMA = """
CREATE TABLE IF NOT EXISTS cookie_handoffs (
    nonce_digest TEXT PRIMARY KEY, name TEXT NOT NULL, value TEXT NOT NULL, max_age INTEGER NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL);
"""


@dataclass(frozen=True)
class ParkedCookie:
    """A cookie to set: its name, value and lifetime in seconds (0: delete it)."""

    name: str
    value: str
    max_age: int


def _db(store: database.Store):
    database.ensure_schema("cookie_handoffs", (database.Migration(1, SCHEMA),), store)
    return database.connection(store)


def _digest(nonce: str) -> str:
    return hashlib.sha256(nonce.encode()).hexdigest()


def park(cookie: ParkedCookie, *, now: float | None = None, store: database.Store = None) -> str:
    """Keep `cookie` for one fetch; returns the nonce that fetch must carry."""
    if cookie.name not in COOKIE_NAMES or len(cookie.value) > MAX_VALUE_CHARS or not 0 <= cookie.max_age:
        raise ValueError(
            f"The cookie route sets only {', '.join(COOKIE_NAMES)}, with a value of at most "
            f"{MAX_VALUE_CHARS} characters."
        )
    now = time.time() if now is None else now
    nonce = secrets.token_urlsafe(24)
    db = _db(store)
    with database.transaction(store):
        db.execute("DELETE FROM cookie_handoffs WHERE expires_at < ?", (now,))
        db.execute(
            "INSERT INTO cookie_handoffs (nonce_digest, name, value, max_age, expires_at) VALUES (?, ?, ?, ?, ?)",
            (_digest(nonce), cookie.name, cookie.value, cookie.max_age, now + PARK_S),
        )
    return nonce


def take(nonce: str, *, now: float | None = None, store: database.Store = None) -> ParkedCookie | None:
    """The cookie parked under `nonce`, removed as it is read (None for an unknown, used or stale nonce)."""
    now = time.time() if now is None else now
    db = _db(store)
    with database.transaction(store):
        row = db.execute(
            "SELECT * FROM cookie_handoffs WHERE nonce_digest = ?", (_digest(str(nonce)[:64]),)
        ).fetchone()
        if row is not None:
            db.execute("DELETE FROM cookie_handoffs WHERE nonce_digest = ?", (row["nonce_digest"],))
    if row is None or row["expires_at"] < now:
        return None
    return ParkedCookie(row["name"], row["value"], row["max_age"])


# ---- the route (server/app_routes.py puts it first in the router of Streamlit's Starlette app) ------------


def _secure(request) -> bool:
    """HTTPS as the browser sees it: uvicorn applies X-Forwarded-Proto only from 127.0.0.1 (our balancer)."""
    return request.url.scheme == "https"


async def hand_over(request):
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import Response

    cookie = await run_in_threadpool(take, request.query_params.get("n", ""))
    if cookie is None:
        return Response("This cookie link has been used or has expired.", status_code=404)
    response = Response(status_code=204, headers={"Cache-Control": "no-store"})
    response.set_cookie(
        cookie.name,
        cookie.value,
        max_age=cookie.max_age,
        path="/",
        httponly=True,
        samesite="strict",
        secure=_secure(request),
    )
    return response


def fetch_script(nonce: str) -> str:
    """The page's script that fetches a parked cookie (the answer sets it; the page never sees its value)."""
    return (
        f"<script>window.parent.fetch({ROUTE_PATH!r} + '?n=' + {nonce!r}, "
        "{credentials: 'same-origin', cache: 'no-store'});</script>"
    )
