"""A live class: the lecturer's position and questions, students' answers, in the shared store.

The lecturer starts a class (`start_class`: a short join code and a lecturer secret, stored only as a digest;
at most MAX_CLASSES_PER_VISITOR live classes per visitor and MAX_CLASSES_PER_ADDRESS per client address),
moves it (`move`), asks a question (`ask`), hides a typed word (`hide_answer`), reveals the model's answer
(`reveal`), closes or reopens joining (`set_joining`), says how many students are expected (`set_expected`)
and ends it (`end_class`: its code, join link and lecturer key stop working at once). Students join and answer
in server/class_joining.py. Every write is committed before the function returns, so what a caller
acknowledged survives `kill -9`; every app process sees it (server/database.py: the machine's SQLite file, or
PostgreSQL for several machines). Ended
classes go KEEP_DAYS later, on a timer (`start_purge_timer`). The projector's numbers: server/class_results.py.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import threading
import time
from dataclasses import astuple, dataclass

from bertviz_lite.server import database

CODE_ALPHABET = "ACEFHJKMNPRTUVWXY34679"  # no look-alikes: none of 0 O D, 1 I L, 2 Z, 5 S, 8 B, 6 G
CODE_LENGTH = 6  # 22^6 ≈ 1.1e8 codes, against at most class_joining.WRONG_CODES_TOTAL guesses per window
JOIN_TOKEN_CHARS = 32  # the QR code's join token: 128 bits, so it needs no wrong-try limit
CLASS_HOURS = 4.0  # a class expires this long after it started
KEEP_DAYS = 7  # an expired class's answers stay this long for the lecturer's CSV, then go
PURGE_EVERY_S = 3600.0  # the purge timer's period (start_purge_timer)
MAX_CLASSES_PER_VISITOR = 3  # live classes one browser may lead at once …
MAX_CLASSES_PER_ADDRESS = 10  # … and one client address (a visitor who drops the cookie)
MAX_EXPECTED = 2_000  # the largest head count a lecturer may enter
MAX_TEXT_CHARS = 2_000  # a sentence of the pair
MAX_SOURCE_CHARS = 300  # the model's name or folder
CHOICE = "choice"
CLOZE = "cloze"
log = logging.getLogger(__name__)

# The tables as the first release made them (REAL then, DOUBLE PRECISION now: the same in SQLite; PostgreSQL's
# REAL is 4 bytes, which would round a time to minutes). {auto_id}: an id the store gives (server/database.py).
SCHEMA = """
CREATE TABLE IF NOT EXISTS class_sessions (
    code TEXT PRIMARY KEY, secret_digest TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL, source TEXT NOT NULL, text_a TEXT NOT NULL, text_b TEXT NOT NULL,
    step INTEGER NOT NULL, layer INTEGER NOT NULL, head INTEGER NOT NULL, question_id INTEGER,
    revealed INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS class_questions (
    id {auto_id}, code TEXT NOT NULL, kind TEXT NOT NULL, prompt TEXT NOT NULL, options TEXT NOT NULL,
    answer TEXT NOT NULL, explanation TEXT NOT NULL, step INTEGER NOT NULL, asked_at DOUBLE PRECISION NOT NULL);
CREATE INDEX IF NOT EXISTS class_questions_code ON class_questions (code);
CREATE TABLE IF NOT EXISTS class_students (
    student_id TEXT PRIMARY KEY, code TEXT NOT NULL, joined_at DOUBLE PRECISION NOT NULL);
CREATE INDEX IF NOT EXISTS class_students_code ON class_students (code);
CREATE TABLE IF NOT EXISTS class_answers (
    question_id INTEGER NOT NULL, student_id TEXT NOT NULL, answer TEXT NOT NULL,
    answered_at DOUBLE PRECISION NOT NULL, UNIQUE (question_id, student_id));
CREATE TABLE IF NOT EXISTS class_wrong_codes (client TEXT NOT NULL, at DOUBLE PRECISION NOT NULL);
CREATE INDEX IF NOT EXISTS class_wrong_codes_at ON class_wrong_codes (at);
CREATE INDEX IF NOT EXISTS class_wrong_codes_client ON class_wrong_codes (client, at);
CREATE TABLE IF NOT EXISTS class_hidden (
    question_id INTEGER NOT NULL, answer TEXT NOT NULL, UNIQUE (question_id, answer));
"""
ADDED_COLUMNS = {  # columns added after the first release (issue 30: owners, limits per address, the QR link)
    "class_sessions": {
        "owner": "TEXT NOT NULL DEFAULT ''",
        "owner_address": "TEXT NOT NULL DEFAULT ''",
        "join_token_digest": "TEXT NOT NULL DEFAULT ''",
        "joining_open": "INTEGER NOT NULL DEFAULT 1",
        "expected": "INTEGER NOT NULL DEFAULT 0",
    },
    "class_students": {
        "address": "TEXT NOT NULL DEFAULT ''"
    },  # a digest of the client address it joined from
    "class_answers": {"address": "TEXT NOT NULL DEFAULT ''"},
}
MIGRATIONS = (database.Migration(1, SCHEMA), database.Migration(2, added_columns=ADDED_COLUMNS))


class ClassError(ValueError):
    """A refusal said in words (wrong code, wrong secret, second answer, …): the page shows it as it is."""


@dataclass(frozen=True)
class Position:
    """Where the lecturer is: the model and pair, the walkthrough step (1-based), the layer and head."""

    source: str
    text_a: str
    text_b: str
    step: int = 1
    layer: int = 0
    head: int = 0


@dataclass(frozen=True)
class NewQuestion:
    """A question to the class: multiple choice (the model's answer is one option) or a free cloze (the
    model's top words in `options`, its first one the answer)."""

    kind: str
    prompt: str
    options: tuple[str, ...]
    answer: str
    explanation: str = ""


@dataclass(frozen=True)
class AskedQuestion(NewQuestion):
    id: int = 0


@dataclass(frozen=True)
class ClassView:
    """What a student's screen (or the projector) shows, read in one indexed SELECT."""

    code: str
    position: Position
    question: AskedQuestion | None
    revealed: bool
    version: int  # grows with every move, question and reveal: a screen redraws when it changes
    expires_at: float
    my_answer: str | None  # this student's answer to the current question
    joining_open: bool = True
    expected: int = 0  # the head count the lecturer entered (0: none)


def connect(store: database.Store = None) -> database.Connection:
    """This thread's connection to the shared store, the class tables made (or brought up to date) first."""
    database.ensure_schema("classroom", MIGRATIONS, store)
    return database.connection(store)


def now_or(now: float | None) -> float:
    """`now`, or the clock's time when it is None (tests pass a time)."""
    return time.time() if now is None else now


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def client_digest(who: str) -> str:
    """What the database keeps of a client address or a browser id: a short digest, never the value."""
    return digest(f"class-client:{who}")[:32]


def join_token(code: str, secret: str) -> str:
    """The QR code's join token of a class, derived from its lecturer's secret (only its digest is stored)."""
    return hmac.new(secret.encode(), f"join:{code}".encode(), hashlib.sha256).hexdigest()[:JOIN_TOKEN_CHARS]


def new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def normalise_code(text: str) -> str:
    """A typed code in upper case without spaces or dashes (so "ab3 k7x" finds AB3K7X)."""
    return "".join(ch for ch in str(text).upper() if ch.isalnum())[: CODE_LENGTH * 2]


def _checked_position(position: Position) -> Position:
    if len(position.text_a) > MAX_TEXT_CHARS or len(position.text_b) > MAX_TEXT_CHARS:
        raise ClassError(f"A sentence sent to the class may have at most {MAX_TEXT_CHARS} characters.")
    if len(position.source) > MAX_SOURCE_CHARS:
        raise ClassError(f"A class's model name may have at most {MAX_SOURCE_CHARS} characters.")
    return position


def _check_class_cap(db: database.Connection, owner: str, address: str, now: float) -> None:
    """At most MAX_CLASSES_PER_VISITOR live classes per visitor and MAX_CLASSES_PER_ADDRESS per address."""
    live = "SELECT COUNT(*) FROM class_sessions WHERE expires_at > ? AND {} = ?"
    if db.execute(live.format("owner"), (now, owner)).fetchone()[0] >= MAX_CLASSES_PER_VISITOR:
        raise ClassError(f"You lead {MAX_CLASSES_PER_VISITOR} classes already: end one (End class) first.")
    if db.execute(live.format("owner_address"), (now, address)).fetchone()[0] >= MAX_CLASSES_PER_ADDRESS:
        raise ClassError(
            f"{MAX_CLASSES_PER_ADDRESS} classes are live from your network already: end one first."
        )


def start_class(
    position: Position,
    *,
    owner: str = "",
    address: str = "",
    hours: float = CLASS_HOURS,
    now: float | None = None,
    store: database.Store = None,
) -> tuple[str, str]:
    """A new class at this position, led by visitor `owner` from client `address` (neither: the server itself, not
    capped): (join code, lecturer secret). Only digests of the secret, its join token, owner and address are stored."""
    now = now_or(now)
    position = _checked_position(position)
    secret = secrets.token_urlsafe(24)
    capped = bool(owner or address)
    db = connect(store)
    owner = client_digest(owner)
    address = client_digest(address)
    for _ in range(8):  # a code already in use is drawn again
        code = new_code()
        try:
            with database.transaction(store):
                _purge(db, now)
                if capped:
                    _check_class_cap(db, owner, address, now)
                db.execute(
                    "INSERT INTO class_sessions (code, secret_digest, created_at, expires_at, source, text_a, "
                    "text_b, step, layer, head, owner, owner_address, join_token_digest) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        code,
                        digest(secret),
                        now,
                        now + hours * 3600,
                        *astuple(position),  # source, text_a, text_b, step, layer, head: the columns' order
                        owner,
                        address,
                        digest(join_token(code, secret)),
                    ),
                )
            return code, secret
        except database.IntegrityError:
            continue
    raise ClassError("Could not draw a free join code; try again.")


def _purge(db: database.Connection, now: float) -> int:
    """Classes that ended more than KEEP_DAYS ago go, with their questions, students and answers; returns how many."""
    old = [
        row[0]
        for row in db.execute(
            "SELECT code FROM class_sessions WHERE expires_at < ?", (now - KEEP_DAYS * 86400,)
        )
    ]
    for code in old:
        for table in ("class_answers", "class_hidden"):
            db.execute(
                f"DELETE FROM {table} WHERE question_id IN (SELECT id FROM class_questions WHERE code = ?)",
                (code,),
            )
        for table in ("class_questions", "class_students", "class_sessions"):
            db.execute(f"DELETE FROM {table} WHERE code = ?", (code,))
    return len(old)


def purge(*, now: float | None = None, store: database.Store = None) -> int:
    """Remove the classes that ended more than KEEP_DAYS ago (the timer calls it); returns how many went."""
    db = connect(store)
    with database.transaction(store):
        return _purge(db, now_or(now))


def purge_every(every_s: float, stop: threading.Event, store: database.Store = None) -> None:
    """Purge now and every `every_s` seconds until `stop` is set (a busy or unreachable store: the next tick tries)."""
    while True:
        try:
            purge(store=store)
        except database.DatabaseError as err:
            log.warning("class purge failed: %s", err)
        if stop.wait(every_s):
            return


_purge_timer: list[threading.Thread] = []


def start_purge_timer(every_s: float = PURGE_EVERY_S) -> threading.Thread:
    """Once per process, a daemon thread that purges the shared store hourly (not only when a class starts)."""
    if not _purge_timer:
        _purge_timer.append(
            threading.Thread(
                target=purge_every,
                args=(every_s, threading.Event()),
                name="bertviz-lite-class-purge",
                daemon=True,
            )
        )
        _purge_timer[0].start()
    return _purge_timer[0]


def session(db: database.Connection, code: str) -> database.Row | None:
    """The class's row, ended or not (None for no such code)."""
    return db.execute("SELECT * FROM class_sessions WHERE code = ?", (code,)).fetchone()


def live_session(db: database.Connection, code: str, now: float) -> database.Row:
    """The class's row if it has not ended; else a refusal in words."""
    row = session(db, code)
    if row is None:
        raise ClassError("There is no class with this code.")
    if row["expires_at"] <= now:
        raise ClassError("This class has ended.")
    return row


def lecturer_session(db: database.Connection, code: str, secret: str) -> database.Row:
    """The class, if `secret` is its lecturer's; a wrong secret is refused in words."""
    row = session(db, code)
    if row is None or not hmac.compare_digest(row["secret_digest"], digest(str(secret))):
        raise ClassError("This is not the lecturer's key for this class: only its lecturer can lead it.")
    return row


def is_lecturer(code: str, secret: str, *, store: database.Store = None) -> bool:
    """Whether `secret` leads this class (a lecturer's private link is checked before it is kept)."""
    try:
        lecturer_session(connect(store), normalise_code(code), secret)
    except ClassError:
        return False
    return True


def _lead(code: str, secret: str, now: float | None, store: database.Store, change) -> int:
    """Run `change(db, session_row)` as the lecturer of a live class; bump and return the class's version."""
    now = now_or(now)
    db = connect(store)
    with database.transaction(store):
        row = lecturer_session(db, code, secret)
        if row["expires_at"] <= now:
            raise ClassError("This class has ended.")
        change(db, row)
        db.execute("UPDATE class_sessions SET version = version + 1 WHERE code = ?", (code,))
        return row["version"] + 1


def move(
    code: str, secret: str, position: Position, *, now: float | None = None, store: database.Store = None
) -> int:
    """The lecturer moves the class; another step ends the current question. Returns the new version."""
    position = _checked_position(position)

    def change(db, row):
        ended = row["step"] != position.step
        db.execute(
            "UPDATE class_sessions SET source = ?, text_a = ?, text_b = ?, step = ?, layer = ?, head = ?, "
            "question_id = CASE WHEN ? THEN NULL ELSE question_id END, revealed = CASE WHEN ? THEN 0 "
            "ELSE revealed END WHERE code = ?",
            (
                *astuple(position),
                ended,
                ended,
                code,
            ),
        )

    return _lead(code, secret, now, store, change)


def ask(
    code: str, secret: str, question: NewQuestion, *, now: float | None = None, store: database.Store = None
) -> int:
    """The lecturer asks the class a question (it becomes the current one, not revealed); returns its id."""
    if question.kind not in (CHOICE, CLOZE) or question.answer not in question.options:
        raise ClassError("A question needs the model's answer among its options.")
    asked: list[int] = []

    def change(db, row):
        question_id = db.execute(
            "INSERT INTO class_questions (code, kind, prompt, options, answer, explanation, step, "
            "asked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (
                code,
                question.kind,
                question.prompt,
                json.dumps(list(question.options)),
                question.answer,
                question.explanation,
                row["step"],
                now_or(now),
            ),
        ).fetchone()[0]
        asked.append(question_id)
        db.execute(
            "UPDATE class_sessions SET question_id = ?, revealed = 0 WHERE code = ?", (question_id, code)
        )

    _lead(code, secret, now, store, change)
    return asked[0]


def reveal(code: str, secret: str, *, now: float | None = None, store: database.Store = None) -> int:
    """The lecturer reveals the model's answer to the current question: answers close."""

    def change(db, row):
        if row["question_id"] is None:
            raise ClassError("There is no question to reveal: ask one first.")
        db.execute("UPDATE class_sessions SET revealed = 1 WHERE code = ?", (code,))

    return _lead(code, secret, now, store, change)


def set_joining(
    code: str, secret: str, open_: bool, *, now: float | None = None, store: database.Store = None
) -> int:
    """The lecturer closes (or reopens) joining: students already in stay; new ones are refused."""

    def change(db, row):
        db.execute("UPDATE class_sessions SET joining_open = ? WHERE code = ?", (int(bool(open_)), code))

    return _lead(code, secret, now, store, change)


def set_expected(
    code: str, secret: str, count: int, *, now: float | None = None, store: database.Store = None
) -> int:
    """The lecturer enters how many students are expected (the projector shows joined ones against it)."""
    if not 0 <= int(count) <= MAX_EXPECTED:
        raise ClassError(f"The expected head count must be from 0 to {MAX_EXPECTED}.")

    def change(db, row):
        db.execute("UPDATE class_sessions SET expected = ? WHERE code = ?", (int(count), code))

    return _lead(code, secret, now, store, change)


def end_class(code: str, secret: str, *, now: float | None = None, store: database.Store = None) -> int:
    """The lecturer ends the class now: its code, join link and lecturer key stop working at once (the answers stay
    for the CSV until the purge)."""

    def change(db, row):
        db.execute(
            "UPDATE class_sessions SET expires_at = ?, joining_open = 0 WHERE code = ?", (now_or(now), code)
        )

    return _lead(code, secret, now, store, change)


def hide_answer(
    code: str,
    secret: str,
    question_id: int,
    answer: str,
    hidden: bool = True,
    *,
    now: float | None = None,
    store: database.Store = None,
) -> int:
    """The lecturer hides a typed word of a question from the class's chart and CSV (or shows it again)."""

    def change(db, row):
        if (
            db.execute(
                "SELECT 1 FROM class_questions WHERE id = ? AND code = ?", (question_id, code)
            ).fetchone()
            is None
        ):
            raise ClassError("This question is not one of this class's.")
        if hidden:
            db.execute(
                "INSERT INTO class_hidden (question_id, answer) VALUES (?, ?) ON CONFLICT DO NOTHING",
                (question_id, answer),
            )
        else:
            db.execute("DELETE FROM class_hidden WHERE question_id = ? AND answer = ?", (question_id, answer))

    return _lead(code, secret, now, store, change)


def question_row(db: database.Connection, question_id: int | None) -> AskedQuestion | None:
    """The question with this id (None for none)."""
    row = (
        None
        if question_id is None
        else db.execute("SELECT * FROM class_questions WHERE id = ?", (question_id,)).fetchone()
    )
    return None if row is None else asked_question(row)


def asked_question(row: database.Row, question_id: int | None = None) -> AskedQuestion:
    """A question as read back from its row (of class_questions, or of the current-class SELECT)."""
    return AskedQuestion(
        kind=row["kind"],
        prompt=row["prompt"],
        options=tuple(json.loads(row["options"])),
        answer=row["answer"],
        explanation=row["explanation"],
        id=row["id"] if question_id is None else question_id,
    )


_CURRENT = """
SELECT s.*, q.kind, q.prompt, q.options, q.answer, q.explanation, a.answer AS my_answer
FROM class_sessions s LEFT JOIN class_questions q ON q.id = s.question_id
LEFT JOIN class_answers a ON a.question_id = s.question_id AND a.student_id = ?
WHERE s.code = ?"""


def current(
    code: str, student_id: str = "", *, now: float | None = None, store: database.Store = None
) -> ClassView | None:
    """The class as a screen shows it (None for no such class or one that has ended): one indexed SELECT."""
    row = connect(store).execute(_CURRENT, (student_id, normalise_code(code))).fetchone()
    if row is None or row["expires_at"] <= now_or(now):
        return None
    position = Position(row["source"], row["text_a"], row["text_b"], row["step"], row["layer"], row["head"])
    question = None if row["question_id"] is None else asked_question(row, row["question_id"])
    return ClassView(
        row["code"],
        position,
        question,
        bool(row["revealed"]),
        row["version"],
        row["expires_at"],
        row["my_answer"],
        bool(row["joining_open"]),
        row["expected"],
    )
