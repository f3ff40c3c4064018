"""Who may do what on a shared server: visitors own the runs and uploads they create; folders load from allowed roots.

A live class needs no login: each browser visitor gets a random id (kept in a cookie by the app) and the
folders it creates record a digest of that id in `owner.json`. A visitor may rename, delete or stop only
its own folders; the shipped checkpoints are read-only; runs started from a terminal (no owner file)
belong to the server. An admin token, when the server sets one, may do everything; a browser that gave it keeps a
signed admin cookie (`admin_cookie`, HttpOnly, ADMIN_COOKIE_HOURS) so that a reload is still the admin.

Settings (environment variables):
    BERTVIZ_LITE_ADMIN_TOKEN   a secret; a visitor who types it may change every run (default: none)
    BERTVIZ_LITE_MODEL_ROOTS   folders that "load a folder by path" may read, separated by the path
                               separator ':' (default: checkpoints/ and the Hugging Face cache)
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

from bertviz_lite.atomic import atomic_write_json, exclusive_lock
from bertviz_lite.inspection.explore import source_version
from bertviz_lite.limits import MAX_NAME_CHARS, MAX_PATH_CHARS
from bertviz_lite.loading import pretrained
from bertviz_lite.loading.run_folder import RunFolder, checkpoints_root, read_json_object
from bertviz_lite.server import database

ADMIN_TOKEN_SETTING = "BERTVIZ_LITE_ADMIN_TOKEN"
MODEL_ROOTS_SETTING = "BERTVIZ_LITE_MODEL_ROOTS"
REFUSED_PATH = (
    "Models can be loaded by path only from the server's checkpoints folder and Hugging Face cache "
    f"(the {MODEL_ROOTS_SETTING} setting adds folders); pick a model from the list instead."
)
_VISITOR_ID = re.compile(r"[A-Za-z0-9_-]{16,64}")
MAX_ALIASES = 8  # other ids one browser got from tabs opened at the same moment (kept in a second cookie)
ADMIN_WINDOW_S = 600.0  # wrong admin tokens are counted over the last 10 minutes
ADMIN_TRIES_PER_VISITOR = 5  # … at most this many per visitor (browser cookie) …
ADMIN_TRIES_PER_ADDRESS = 10  # … and per client address (a guesser who drops the cookie) …
ADMIN_TRIES_IN_TOTAL = 200  # … and from everyone together: 20 addresses' worth, out of one guesser's reach
ADMIN_COOKIE = "bvl_admin"  # admin_cookie's value, HttpOnly (set through server/cookie_handoff.py)
ADMIN_COOKIE_HOURS = 12.0  # a signed admin cookie lasts a teaching day
LOCAL_CLIENT = "local"  # the client address of a browser on the server's own machine
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Visitor:
    """One browser visitor: its random id, and whether it gave the admin token."""

    id: str
    admin: bool = False
    aliases: tuple[
        str, ...
    ] = ()  # ids the same browser was given by tabs opened at once: also this visitor's


def new_visitor_id() -> str:
    """A fresh random visitor id (URL- and cookie-safe)."""
    return secrets.token_urlsafe(18)


def is_visitor_id(value: object) -> bool:
    """Whether a value read back from a browser looks like an id we handed out."""
    return isinstance(value, str) and bool(_VISITOR_ID.fullmatch(value))


def aliases_from_cookie(value: object, own_id: str = "") -> tuple[str, ...]:
    """The valid ids of the alias cookie ("id1.id2"), at most MAX_ALIASES, without `own_id`."""
    if not isinstance(value, str):
        return ()
    ids = [part for part in value.split(".")[:MAX_ALIASES] if is_visitor_id(part) and part != own_id]
    return tuple(dict.fromkeys(ids))


def admin_token_configured() -> bool:
    """Whether the server has an admin token at all."""
    return bool(os.environ.get(ADMIN_TOKEN_SETTING, ""))


def is_admin_token(token: str | None) -> bool:
    """True when the server has an admin token and `token` equals it (compared in constant time)."""
    expected = os.environ.get(ADMIN_TOKEN_SETTING, "")
    return bool(expected) and bool(token) and hmac.compare_digest(token.encode(), expected.encode())


class AdminLockout(PermissionError):
    """Too many wrong admin tokens lately; the message says when to try again."""


ADMIN_FAILURES_SCHEMA = """
CREATE TABLE IF NOT EXISTS admin_failures (visitor TEXT NOT NULL, at DOUBLE PRECISION NOT NULL);
CREATE INDEX IF NOT EXISTS admin_failures_by_time ON admin_failures (at);
"""  # one row per wrong token, in the store every app process shares: N processes give no N x the tries
ADMIN_FAILURES_MIGRATIONS = (
    database.Migration(1, ADMIN_FAILURES_SCHEMA),
    database.Migration(2, added_columns={"admin_failures": {"address": "TEXT NOT NULL DEFAULT ''"}}),
)


def _admin_lock(db, who: str, address: str) -> float | None:
    """When the oldest counted try that locks this visitor or address (or everyone) was made; None: not locked."""
    for where, key, limit in (
        ("visitor = ?", (who,), ADMIN_TRIES_PER_VISITOR),
        ("address = ?", (address,), ADMIN_TRIES_PER_ADDRESS),
        ("1 = 1", (), ADMIN_TRIES_IN_TOTAL),
    ):
        tries = [
            row[0] for row in db.execute(f"SELECT at FROM admin_failures WHERE {where} ORDER BY at", key)
        ]
        if len(tries) >= limit:
            return tries[-limit]
    return None


def check_admin_token(visitor_id: str, token: str, now: float | None = None, *, address: str = "") -> bool:
    """is_admin_token, rate-limited: ADMIN_TRIES_PER_VISITOR wrong tokens per visitor, ADMIN_TRIES_PER_ADDRESS per
    client address and ADMIN_TRIES_IN_TOTAL from everyone in ADMIN_WINDOW_S, then AdminLockout (the token is not
    even compared). A guesser thus locks out its own browser and address, not the lecturer. Failures are logged.

    The wrong tries are counted in the shared database (server/database.py), so every app process behind a
    load balancer sees the same counts."""
    now = time.time() if now is None else now
    who = _digest(visitor_id)
    address = _digest(f"address:{address}")
    _admin_failures_table()
    with database.transaction() as db:  # one writer at a time: count and add as one step across processes
        db.execute("DELETE FROM admin_failures WHERE at <= ?", (now - ADMIN_WINDOW_S,))
        locked_since = _admin_lock(db, who, address)
        right = locked_since is None and is_admin_token(token)
        if right:
            db.execute("DELETE FROM admin_failures WHERE visitor = ?", (who,))
        elif locked_since is None:
            db.execute(
                "INSERT INTO admin_failures (visitor, at, address) VALUES (?, ?, ?)", (who, now, address)
            )
    if locked_since is not None:
        log.warning("admin token refused without checking: visitor %s or its address is locked out", who[:12])
        wait = locked_since + ADMIN_WINDOW_S - now
        raise AdminLockout(f"Too many wrong admin tokens: try again in {max(1, round(wait / 60))} min.")
    if not right:
        log.warning("wrong admin token from visitor %s, address %s", who[:12], address[:12])
    return right


def client_address(ip_address: str | None) -> str:
    """The key every per-address limit uses, from the address Streamlit saw (`st.context.ip_address`).

    Streamlit's uvicorn takes X-Forwarded-For (and X-Forwarded-Proto) only from a peer on 127.0.0.1 or ::1 (its
    FORWARDED_ALLOW_IPS default): behind `serve`'s haproxy, which sets the header itself, that is the real client;
    a browser elsewhere cannot forge it. Streamlit reports loopback as None: a browser on the server's machine."""
    return ip_address or LOCAL_CLIENT


def _admin_cookie_key() -> bytes:
    """The admin cookie's signing key, derived from the admin token: a new token voids every admin cookie."""
    return hashlib.sha256(
        f"bertviz-lite admin cookie:{os.environ.get(ADMIN_TOKEN_SETTING, '')}".encode()
    ).digest()


def admin_cookie(now: float | None = None) -> str:
    """A signed admin cookie value, EXPIRY.SIGNATURE, valid ADMIN_COOKIE_HOURS (only when a token is set)."""
    if not admin_token_configured():
        raise PermissionError("This server has no admin token, so there is no admin cookie.")
    expiry = int((time.time() if now is None else now) + ADMIN_COOKIE_HOURS * 3600)
    return f"{expiry}.{hmac.new(_admin_cookie_key(), str(expiry).encode(), hashlib.sha256).hexdigest()}"


def is_admin_cookie(value: object, now: float | None = None) -> bool:
    """Whether `value` is an unexpired admin cookie signed with this server's admin token."""
    expiry, _, signature = value.partition(".") if isinstance(value, str) else ("", "", "")
    if (
        not admin_token_configured()
        or not expiry.isdigit()
        or int(expiry) <= (time.time() if now is None else now)
    ):
        return False
    expected = hmac.new(_admin_cookie_key(), expiry.encode(), hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, signature)


def _admin_failures_table() -> None:
    database.ensure_schema("admin_failures", ADMIN_FAILURES_MIGRATIONS)


def forget_admin_failures() -> None:
    """Clear the failure counts of every process (waiting ADMIN_WINDOW_S does the same)."""
    _admin_failures_table()
    with database.transaction() as db:
        db.execute("DELETE FROM admin_failures")


def _digest(visitor_id: str) -> str:
    return hashlib.sha256(visitor_id.encode()).hexdigest()


def record_owner(folder: str | os.PathLike, visitor: Visitor | None) -> None:
    """Mark `folder` as created by `visitor` (no visitor: the server's, e.g. a terminal run)."""
    if visitor is not None:
        atomic_write_json(RunFolder(folder).owner, {"owner": _digest(visitor.id)})


def is_owner(folder: str | os.PathLike, visitor: Visitor) -> bool:
    """Whether `visitor` (or a tab it opened at the same time) created `folder`, or claimed it with its owner's
    claim link (another device)."""
    record = read_json_object(RunFolder(folder).owner) or {}
    mine = [_digest(visitor_id) for visitor_id in (visitor.id, *visitor.aliases)]
    owners = [
        str(record.get("owner", "")),
        *(str(o) for o in record.get("claimed_by", []) if isinstance(o, str)),
    ]
    return any(hmac.compare_digest(owner, digest) for owner in owners for digest in mine)


# ---- claiming a run on a second device ------------------------------------------------------------
# A lecturer starts a run on a laptop and presents from another browser. The owner's page shows a claim
# link with a code derived from the owner's secret id (HMAC), so the code reveals nothing of the id; the run
# folder keeps only the code's digest. Whoever opens the link becomes an owner too (Stop, Rename, Delete).
MAX_CLAIMS = 8  # browsers that may claim one run (a lecturer's devices, not a class)
CLAIM_FIELD = "claim"


def claim_code(folder: str | os.PathLike, visitor: Visitor) -> str | None:
    """The claim code of `folder` for its owner (None for anyone else); its digest is recorded on first use."""
    run = RunFolder(folder)
    record = read_json_object(run.owner) or {}
    if not record.get("owner") or not hmac.compare_digest(str(record["owner"]), _digest(visitor.id)):
        return None
    code = hmac.new(visitor.id.encode(), f"claim:{Path(folder).name}".encode(), hashlib.sha256).hexdigest()[
        :32
    ]
    if record.get(CLAIM_FIELD) != _digest(code):
        with _owner_lock(folder):  # read again under the lock: a claim may have just added an owner
            atomic_write_json(
                run.owner, {**(read_json_object(run.owner) or record), CLAIM_FIELD: _digest(code)}
            )
    return code


def claim(folder: str | os.PathLike, visitor: Visitor, code: str) -> str:
    """Make `visitor` an owner of `folder` with its claim code; raises PermissionError in plain words."""
    with _owner_lock(folder):  # two browsers claiming at once, through two app workers: neither claim is lost
        return _claim(RunFolder(folder), visitor, code)


@contextmanager
def _owner_lock(folder: str | os.PathLike) -> Iterator[None]:
    """Read, change and write owner.json as one step among every app process (a flock on the run folder)."""
    with exclusive_lock(folder) if Path(folder).is_dir() else nullcontext():
        yield


def _claim(run: RunFolder, visitor: Visitor, code: str) -> str:
    folder = run.path
    record = read_json_object(run.owner) or {}
    expected = str(record.get(CLAIM_FIELD, ""))
    if not expected or not isinstance(code, str) or not hmac.compare_digest(expected, _digest(code[:64])):
        raise PermissionError(
            f"This claim link does not fit {Path(folder).name}: ask its owner for the link "
            "their Train page shows, or type the admin token."
        )
    if is_owner(folder, visitor):
        return f"{Path(folder).name} is already yours on this browser."
    claimed = [o for o in record.get("claimed_by", []) if isinstance(o, str)]
    if len(claimed) >= MAX_CLAIMS:
        raise PermissionError(f"{Path(folder).name} has been claimed by {MAX_CLAIMS} browsers already.")
    atomic_write_json(run.owner, {**record, "claimed_by": [*claimed, _digest(visitor.id)]})
    return f"{Path(folder).name} is yours on this browser too: you may stop, rename and delete it."


def is_shipped(folder: str | os.PathLike) -> bool:
    """The checkpoints that come with the repository, which nobody changes from the app."""
    path = Path(folder)
    return (
        path.name in pretrained.SHIPPED_CHECKPOINTS and path.parent.resolve() == checkpoints_root().resolve()
    )


def may_change(folder: str | os.PathLike, visitor: Visitor | None) -> bool:
    """Whether `visitor` may rename, delete or stop `folder` (None: the server itself, e.g. the CLI)."""
    if is_shipped(folder):
        return False
    return visitor is None or visitor.admin or is_owner(folder, visitor)


def check_may_change(folder: str | os.PathLike, visitor: Visitor | None, action: str) -> None:
    """Raise PermissionError in plain words unless `visitor` may `action` ("rename", "delete", "stop") it."""
    if may_change(folder, visitor):
        return
    name = Path(folder).name
    if is_shipped(folder):
        raise PermissionError(f"{name} ships with the app and is read-only: you cannot {action} it.")
    raise PermissionError(
        f"You can only {action} runs and uploads you started yourself; {name} is another visitor's."
    )


def _configured_roots() -> list[Path]:
    """The folders the setting names, else checkpoints/ and the HF cache, as configured (not resolved)."""
    setting = os.environ.get(MODEL_ROOTS_SETTING, "")
    if setting.strip():
        return [Path(p).expanduser() for p in setting.split(os.pathsep) if p.strip()]
    return [checkpoints_root(), pretrained.huggingface_cache_dir()]


def allowed_model_roots() -> list[Path]:
    """The folders a model may be loaded from by path: the setting's, else checkpoints/ and the HF cache."""
    return [root.resolve() for root in _configured_roots()]


def check_model_source(source: str) -> None:
    """Let the packaged model and checkpoint names through; fence every other source with check_model_folder."""
    plain_name = (
        len(source) <= MAX_NAME_CHARS
        and bool(re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", source))
        and ".." not in source
    )
    if source == pretrained.MINILM or (plain_name and (checkpoints_root() / source).is_dir()):
        return
    check_model_folder(source)


def fenced_version(source: str) -> str:
    """explore.source_version of a source the fence lets through; "refused" for one it refuses, whose files are not
    looked at (a 5,000-character path crashed every page when its version was read first)."""
    try:
        check_model_source(source)
    except ValueError:
        return "refused"  # the page's load says why
    return source_version(source)


def check_model_folder(path: str | os.PathLike) -> Path:
    """The resolved folder if it lies inside an allowed root, else ValueError.

    The path is fenced by its text first (length, another user's home, outside every root): nothing on the
    file system is touched for a path refused there. The message is the same whatever the reason, so it reveals
    nothing about the server's files.
    """
    written = _written_path(os.fspath(path))
    roots = allowed_model_roots()
    if written is None or not _inside(written, [*roots, *map(_absolute, _configured_roots())]):
        raise ValueError(REFUSED_PATH)
    try:
        resolved = written.resolve()  # symlinks followed: a link inside a root may point out of it
    except (OSError, RuntimeError):
        raise ValueError(REFUSED_PATH) from None
    if not _inside(resolved, roots):
        raise ValueError(REFUSED_PATH)
    return resolved


def _written_path(text: str) -> Path | None:
    """The absolute path a text names, by its text alone; None for one too long, with a NUL, or in another user's
    home (`~name/…`: expanding it would look the user up)."""
    if len(text) > MAX_PATH_CHARS or "\0" in text or (text.startswith("~") and text.split("/", 1)[0] != "~"):
        return None
    return _absolute(Path(text))


def _absolute(path: Path) -> Path:
    """`path` made absolute and normalised by its text (`~` is the server's home; `..` removed), no file read."""
    text = str(path)
    if text == "~" or text.startswith("~/"):
        text = os.path.expanduser("~") + text[1:]  # the server's own home, from $HOME
    return Path(os.path.normpath(os.path.abspath(text)))


def _inside(path: Path, roots: list[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)
