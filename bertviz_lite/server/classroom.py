"""A live class: the lecturer's position and questions, students' answers, in the shared SQLite file.

The lecturer starts a class (`start_class`: a short join code and a lecturer secret, stored only as a digest),
moves it (`move`), asks a question (`ask`) and reveals the model's answer (`reveal`); students join with the
code (`join`, wrong codes rate-limited) and answer once per question (`answer`, a UNIQUE constraint). Every
write is committed before the function returns, so what a caller acknowledged survives `kill -9`; every app
process on the machine sees it (server/database.py). The projector's numbers: server/class_results.py.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import sqlite3
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from bertviz_lite.server import database

CODE_ALPHABET = "ACEFHJKMNPRTUVWXY34679"  # no look-alikes: none of 0 O D, 1 I L, 2 Z, 5 S, 8 B, 6 G
CODE_LENGTH = 6  # 22^6 ≈ 1.1e8 codes, against at most WRONG_CODES_TOTAL guesses per window
CLASS_HOURS = 4.0  # a class expires this long after it started
KEEP_DAYS = 7  # an expired class's answers stay this long for the lecturer's CSV, then go
WRONG_CODES_PER_CLIENT = 10  # wrong codes one client may type per window …
WRONG_CODES_TOTAL = 300  # … and all clients together, so that codes cannot be enumerated
WRONG_CODE_WINDOW_S = 600.0
MAX_WORD_CHARS = 24  # a free-cloze answer: one word
MAX_TEXT_CHARS = 2_000  # a sentence of the pair
CHOICE, CLOZE = "choice", "cloze"

SCHEMA = """
CREATE TABLE IF NOT EXISTS class_sessions (
    code TEXT PRIMARY KEY, secret_digest TEXT NOT NULL, created_at REAL NOT NULL, expires_at REAL NOT NULL,
    source TEXT NOT NULL, text_a TEXT NOT NULL, text_b TEXT NOT NULL, step INTEGER NOT NULL,
    layer INTEGER NOT NULL, head INTEGER NOT NULL, question_id INTEGER, revealed INTEGER NOT NULL DEFAULT 0,
    version INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS class_questions (
    id INTEGER PRIMARY KEY, code TEXT NOT NULL, kind TEXT NOT NULL, prompt TEXT NOT NULL, options TEXT NOT NULL,
    answer TEXT NOT NULL, explanation TEXT NOT NULL, step INTEGER NOT NULL, asked_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS class_questions_code ON class_questions (code);
CREATE TABLE IF NOT EXISTS class_students (
    student_id TEXT PRIMARY KEY, code TEXT NOT NULL, joined_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS class_students_code ON class_students (code);
CREATE TABLE IF NOT EXISTS class_answers (
    question_id INTEGER NOT NULL, student_id TEXT NOT NULL, answer TEXT NOT NULL, answered_at REAL NOT NULL,
    UNIQUE (question_id, student_id));
CREATE TABLE IF NOT EXISTS class_wrong_codes (client TEXT NOT NULL, at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS class_wrong_codes_at ON class_wrong_codes (at);
CREATE INDEX IF NOT EXISTS class_wrong_codes_client ON class_wrong_codes (client, at);
"""


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


def _db(path: Path | None) -> sqlite3.Connection:
    database.ensure_schema("classroom", SCHEMA, path)
    return database.connection(path)


def _now(now: float | None) -> float:
    return time.time() if now is None else now


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def normalise_code(text: str) -> str:
    """A typed code in upper case without spaces or dashes (so "ab3 k7x" finds AB3K7X)."""
    return "".join(ch for ch in str(text).upper() if ch.isalnum())[: CODE_LENGTH * 2]


def _checked_position(position: Position) -> Position:
    if len(position.text_a) > MAX_TEXT_CHARS or len(position.text_b) > MAX_TEXT_CHARS:
        raise ClassError(f"A sentence sent to the class may have at most {MAX_TEXT_CHARS} characters.")
    return position


def start_class(position: Position, *, hours: float = CLASS_HOURS, now: float | None = None,
                path: Path | None = None) -> tuple[str, str]:
    """A new class at this position: (join code, lecturer secret). Only the secret's digest is stored."""
    now, position, secret = _now(now), _checked_position(position), secrets.token_urlsafe(24)
    db = _db(path)
    for _ in range(8):  # a code already in use is drawn again
        code = new_code()
        try:
            with database.transaction(path):
                _purge(db, now)
                db.execute("INSERT INTO class_sessions (code, secret_digest, created_at, expires_at, source, text_a, "
                           "text_b, step, layer, head) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           (code, digest(secret), now, now + hours * 3600, position.source, position.text_a,
                            position.text_b, position.step, position.layer, position.head))
            return code, secret
        except sqlite3.IntegrityError:
            continue
    raise ClassError("Could not draw a free join code; try again.")


def _purge(db: sqlite3.Connection, now: float) -> None:
    """Classes that ended more than KEEP_DAYS ago go, with their questions, students and answers."""
    old = [row[0] for row in db.execute("SELECT code FROM class_sessions WHERE expires_at < ?",
                                        (now - KEEP_DAYS * 86400,))]
    for code in old:
        db.execute("DELETE FROM class_answers WHERE question_id IN (SELECT id FROM class_questions WHERE code = ?)",
                   (code,))
        for table in ("class_questions", "class_students", "class_sessions"):
            db.execute(f"DELETE FROM {table} WHERE code = ?", (code,))


def _session(db: sqlite3.Connection, code: str) -> sqlite3.Row | None:
    return db.execute("SELECT * FROM class_sessions WHERE code = ?", (code,)).fetchone()


def _live_session(db: sqlite3.Connection, code: str, now: float) -> sqlite3.Row:
    row = _session(db, code)
    if row is None:
        raise ClassError("There is no class with this code.")
    if row["expires_at"] <= now:
        raise ClassError("This class has ended.")
    return row


def lecturer_session(db: sqlite3.Connection, code: str, secret: str) -> sqlite3.Row:
    """The class, if `secret` is its lecturer's; a wrong secret is refused in words."""
    row = _session(db, code)
    if row is None or not hmac.compare_digest(row["secret_digest"], digest(str(secret))):
        raise ClassError("This is not the lecturer's key for this class: only its lecturer can lead it.")
    return row


def is_lecturer(code: str, secret: str, *, path: Path | None = None) -> bool:
    """Whether `secret` leads this class (a lecturer's private link is checked before it is kept)."""
    try:
        lecturer_session(_db(path), normalise_code(code), secret)
    except ClassError:
        return False
    return True


def _lead(code: str, secret: str, now: float | None, path: Path | None, change) -> int:
    """Run `change(db, session_row)` as the lecturer of a live class; bump and return the class's version."""
    now, db = _now(now), _db(path)
    with database.transaction(path):
        row = lecturer_session(db, code, secret)
        if row["expires_at"] <= now:
            raise ClassError("This class has ended.")
        change(db, row)
        db.execute("UPDATE class_sessions SET version = version + 1 WHERE code = ?", (code,))
        return row["version"] + 1


def move(code: str, secret: str, position: Position, *, now: float | None = None, path: Path | None = None) -> int:
    """The lecturer moves the class; another step ends the current question. Returns the new version."""
    position = _checked_position(position)

    def change(db, row):
        ended = row["step"] != position.step
        db.execute("UPDATE class_sessions SET source = ?, text_a = ?, text_b = ?, step = ?, layer = ?, head = ?, "
                   "question_id = CASE WHEN ? THEN NULL ELSE question_id END, revealed = CASE WHEN ? THEN 0 "
                   "ELSE revealed END WHERE code = ?",
                   (position.source, position.text_a, position.text_b, position.step, position.layer, position.head,
                    ended, ended, code))

    return _lead(code, secret, now, path, change)


def ask(code: str, secret: str, question: NewQuestion, *, now: float | None = None, path: Path | None = None) -> int:
    """The lecturer asks the class a question (it becomes the current one, not revealed); returns its id."""
    if question.kind not in (CHOICE, CLOZE) or question.answer not in question.options:
        raise ClassError("A question needs the model's answer among its options.")
    asked: list[int] = []

    def change(db, row):
        cursor = db.execute("INSERT INTO class_questions (code, kind, prompt, options, answer, explanation, step, "
                            "asked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                            (code, question.kind, question.prompt, json.dumps(list(question.options)),
                             question.answer, question.explanation, row["step"], _now(now)))
        asked.append(cursor.lastrowid)
        db.execute("UPDATE class_sessions SET question_id = ?, revealed = 0 WHERE code = ?", (cursor.lastrowid, code))

    _lead(code, secret, now, path, change)
    return asked[0]


def reveal(code: str, secret: str, *, now: float | None = None, path: Path | None = None) -> int:
    """The lecturer reveals the model's answer to the current question: answers close."""
    def change(db, row):
        if row["question_id"] is None:
            raise ClassError("There is no question to reveal: ask one first.")
        db.execute("UPDATE class_sessions SET revealed = 1 WHERE code = ?", (code,))

    return _lead(code, secret, now, path, change)


def _too_many_wrong(db: sqlite3.Connection, client: str, now: float) -> bool:
    since = now - WRONG_CODE_WINDOW_S
    mine = db.execute("SELECT COUNT(*) FROM class_wrong_codes WHERE client = ? AND at > ?", (client, since))
    total = db.execute("SELECT COUNT(*) FROM class_wrong_codes WHERE at > ?", (since,))
    return mine.fetchone()[0] >= WRONG_CODES_PER_CLIENT or total.fetchone()[0] >= WRONG_CODES_TOTAL


def student_id_for(browser_id: str, code: str) -> str:
    """A student's id in one class, from their browser's id: the same browser is the same student."""
    return hashlib.sha256(f"{browser_id}:{code}".encode()).hexdigest()[:32]


def join(code: str, browser_id: str, client: str, *, now: float | None = None, path: Path | None = None) -> str:
    """A student joins with a typed code; returns their student id. Wrong codes are counted per client."""
    now, db, code = _now(now), _db(path), normalise_code(code)
    with database.transaction(path):
        if _too_many_wrong(db, client, now):
            refused = ClassError("Too many wrong codes were typed here just now: wait a few minutes and try again.")
        elif _session(db, code) is None:
            db.execute("DELETE FROM class_wrong_codes WHERE at < ?", (now - WRONG_CODE_WINDOW_S,))
            db.execute("INSERT INTO class_wrong_codes (client, at) VALUES (?, ?)", (client, now))
            refused = ClassError("There is no class with this code: check it on the projector.")
        else:
            _live_session(db, code, now)
            student = student_id_for(browser_id, code)
            db.execute("INSERT OR IGNORE INTO class_students (student_id, code, joined_at) VALUES (?, ?, ?)",
                       (student, code, now))
            return student
    raise refused  # after COMMIT: the wrong code is counted even though the join failed


def normalise_word(text: str) -> str:
    """A free-cloze answer as one lower-case word (NFKC, no control characters), or a refusal in words."""
    word = " ".join(unicodedata.normalize("NFKC", str(text)).split()).lower()
    word = "".join(ch for ch in word if unicodedata.category(ch)[0] != "C")
    if not word:
        raise ClassError("Type a word first.")
    if " " in word or len(word) > MAX_WORD_CHARS:
        raise ClassError(f"Type one word of at most {MAX_WORD_CHARS} characters.")
    return word


def answer(code: str, student_id: str, question_id: int, text: str, *, now: float | None = None,
           path: Path | None = None) -> str:
    """Record a student's answer to the current question (committed before returning); returns it as stored."""
    now, db = _now(now), _db(path)
    with database.transaction(path):
        row = _live_session(db, code, now)
        if db.execute("SELECT 1 FROM class_students WHERE student_id = ? AND code = ?", (student_id, code)).fetchone() \
                is None:
            raise ClassError("Join the class first.")
        question = _question(db, question_id)
        if question is None or row["question_id"] != question_id:
            raise ClassError("This question is closed: the lecturer has moved on.")
        if row["revealed"]:
            raise ClassError("Answers are closed: the model's answer has been revealed.")
        given = normalise_word(text) if question.kind == CLOZE else str(text)
        if question.kind == CHOICE and given not in question.options:
            raise ClassError("Pick one of the answers shown.")
        try:
            db.execute("INSERT INTO class_answers (question_id, student_id, answer, answered_at) VALUES (?, ?, ?, ?)",
                       (question_id, student_id, given, now))
        except sqlite3.IntegrityError:
            raise ClassError("You have already answered this question: one answer each.") from None
    return given


def _question(db: sqlite3.Connection, question_id: int | None) -> AskedQuestion | None:
    row = None if question_id is None else db.execute(
        "SELECT * FROM class_questions WHERE id = ?", (question_id,)).fetchone()
    return None if row is None else asked_question(row)


def asked_question(row: sqlite3.Row, question_id: int | None = None) -> AskedQuestion:
    """A question as read back from its row (of class_questions, or of the current-class SELECT)."""
    return AskedQuestion(kind=row["kind"], prompt=row["prompt"], options=tuple(json.loads(row["options"])),
                         answer=row["answer"], explanation=row["explanation"],
                         id=row["id"] if question_id is None else question_id)


_CURRENT = """
SELECT s.*, q.kind, q.prompt, q.options, q.answer, q.explanation, a.answer AS my_answer
FROM class_sessions s LEFT JOIN class_questions q ON q.id = s.question_id
LEFT JOIN class_answers a ON a.question_id = s.question_id AND a.student_id = ?
WHERE s.code = ?"""


def current(code: str, student_id: str = "", *, now: float | None = None, path: Path | None = None) -> ClassView | None:
    """The class as a screen shows it (None for no such class or one that has ended): one indexed SELECT."""
    row = _db(path).execute(_CURRENT, (student_id, normalise_code(code))).fetchone()
    if row is None or row["expires_at"] <= _now(now):
        return None
    position = Position(row["source"], row["text_a"], row["text_b"], row["step"], row["layer"], row["head"])
    question = None if row["question_id"] is None else asked_question(row, row["question_id"])
    return ClassView(row["code"], position, question, bool(row["revealed"]), row["version"], row["expires_at"],
                     row["my_answer"])
