"""Students in a live class: join with the code or the QR code's link, answer once per question, within limits.

Every limit is kept per client address (what the server saw, through the balancer's X-Forwarded-For) and per
browser (the visitor cookie), so that one phone or one laptop with a script cannot fill a class, and so that a
guesser locks out only itself:

- a typed code: WRONG_CODES_PER_CLIENT wrong ones per address and per browser in WRONG_CODE_WINDOW_S, and
  WRONG_CODES_TOTAL from everyone (so codes cannot be enumerated): far more than one address can type;
- the QR code's link carries the class's join token (128 bits, server/live_class.py's `join_token`): it is not
  counted against the wrong-code limits, so a student with the link joins while codes are being guessed;
- JOINS_PER_ADDRESS new students per address in JOIN_WINDOW_S, and ANSWERS_PER_ADDRESS answers per question
  and address (one per student, as before); a closed class (the lecturer's Close joining) takes no new student.

Only digests of addresses and browser ids are stored (live_class.client_digest).
"""

from __future__ import annotations

import hashlib
import hmac
import unicodedata

from bertviz_lite.server import database
from bertviz_lite.server.live_class import (
    CHOICE,
    CLOZE,
    ClassError,
    client_digest,
    connect,
    digest,
    live_session,
    normalise_code,
    now_or,
    question_row,
    session,
)

WRONG_CODES_PER_CLIENT = 10  # wrong codes one address (and one browser) may type per window …
WRONG_CODES_TOTAL = 1_000  # … and all clients together: 100 addresses' worth, ~1e-5 of the code space
WRONG_CODE_WINDOW_S = 600.0
JOINS_PER_ADDRESS = 40  # new students from one address per window: a lecture hall's phones have their own
JOIN_WINDOW_S = 600.0
ANSWERS_PER_ADDRESS = JOINS_PER_ADDRESS  # answers to one question from one address
MAX_WORD_CHARS = 24  # a free-cloze answer: one word
MAX_TOKEN_CHARS = 64


def _keys(address: str, browser_id: str) -> tuple[str, str]:
    return f"a:{client_digest(address)}", f"c:{client_digest(browser_id)}"


def _too_many_wrong(db: database.Connection, keys: tuple[str, str], now: float) -> bool:
    since = now - WRONG_CODE_WINDOW_S
    mine = db.execute(
        "SELECT COUNT(*) FROM class_wrong_codes WHERE client IN (?, ?) AND at > ? GROUP BY client "
        "ORDER BY 1 DESC LIMIT 1",
        (*keys, since),
    ).fetchone()
    total = db.execute(
        "SELECT COUNT(*) FROM class_wrong_codes WHERE at > ? AND client LIKE 'a:%'", (since,)
    ).fetchone()[0]  # each wrong code is one row per address (and one per browser)
    return (mine is not None and mine[0] >= WRONG_CODES_PER_CLIENT) or total >= WRONG_CODES_TOTAL


def _count_wrong(db: database.Connection, keys: tuple[str, str], now: float) -> None:
    db.execute("DELETE FROM class_wrong_codes WHERE at < ?", (now - WRONG_CODE_WINDOW_S,))
    db.executemany("INSERT INTO class_wrong_codes (client, at) VALUES (?, ?)", [(key, now) for key in keys])


def _by_token(
    db: database.Connection, code: str, token: str
) -> tuple[database.Row | None, ClassError | None]:
    row = session(db, code)
    given = digest(str(token)[:MAX_TOKEN_CHARS])
    if (
        row is None
        or not row["join_token_digest"]
        or not hmac.compare_digest(row["join_token_digest"], given)
    ):
        return None, ClassError(
            "This join link is not valid (or its class has ended): type the code on the projector instead."
        )
    return row, None


def _by_code(
    db: database.Connection, code: str, keys: tuple[str, str], now: float
) -> tuple[database.Row | None, ClassError | None]:
    if _too_many_wrong(db, keys, now):
        return None, ClassError(
            "Too many wrong codes were typed here just now: wait a few minutes, or scan the "
            "QR code on the projector."
        )
    row = session(db, code)
    if row is None:
        _count_wrong(db, keys, now)
        return None, ClassError("There is no class with this code: check it on the projector.")
    return row, None


def _enrol(db: database.Connection, row: database.Row, browser_id: str, address: str, now: float) -> str:
    """Add the student (or find them again: a reload) within the class's and the address's limits."""
    code = live_session(db, row["code"], now)["code"]
    student = student_id_for(browser_id, code)
    if db.execute("SELECT 1 FROM class_students WHERE student_id = ?", (student,)).fetchone() is not None:
        return student
    if not row["joining_open"]:
        raise ClassError("The lecturer has closed joining for this class.")
    recent = db.execute(
        "SELECT COUNT(*) FROM class_students WHERE address = ? AND joined_at > ?",
        (address, now - JOIN_WINDOW_S),
    ).fetchone()[0]
    if recent >= JOINS_PER_ADDRESS:
        raise ClassError(
            "Too many students joined from this network just now: wait a few minutes and try again."
        )
    db.execute(
        "INSERT INTO class_students (student_id, code, joined_at, address) VALUES (?, ?, ?, ?)",
        (student, code, now, address),
    )
    return student


def student_id_for(browser_id: str, code: str) -> str:
    """A student's id in one class, from their browser's id: the same browser is the same student."""
    return hashlib.sha256(f"{browser_id}:{code}".encode()).hexdigest()[:32]


def join(
    code: str,
    browser_id: str,
    address: str,
    *,
    token: str = "",
    now: float | None = None,
    store: database.Store = None,
) -> str:
    """A student joins with a typed code, or with the QR link's `token`; returns their student id.

    `address` is the client address the server saw; wrong codes count per address and per browser."""
    now = now_or(now)
    db = connect(store)
    code = normalise_code(code)
    keys = _keys(address, browser_id)
    with database.transaction(store):
        row, refused = _by_token(db, code, token) if token else _by_code(db, code, keys, now)
        if row is not None:
            return _enrol(db, row, browser_id, client_digest(address), now)
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


def _check_open(db: database.Connection, row: database.Row, student_id: str, question_id: int):
    if (
        db.execute(
            "SELECT 1 FROM class_students WHERE student_id = ? AND code = ?", (student_id, row["code"])
        ).fetchone()
        is None
    ):
        raise ClassError("Join the class first.")
    question = question_row(db, question_id)
    if question is None or row["question_id"] != question_id:
        raise ClassError("This question is closed: the lecturer has moved on.")
    if row["revealed"]:
        raise ClassError("Answers are closed: the model's answer has been revealed.")
    return question


def answer(
    code: str,
    student_id: str,
    question_id: int,
    text: str,
    *,
    address: str = "",
    now: float | None = None,
    store: database.Store = None,
) -> str:
    """Record a student's answer to the current question (committed before returning); returns it as stored."""
    now = now_or(now)
    db = connect(store)
    address = client_digest(address)
    with database.transaction(store):
        question = _check_open(db, live_session(db, code, now), student_id, question_id)
        given = normalise_word(text) if question.kind == CLOZE else str(text)
        if question.kind == CHOICE and given not in question.options:
            raise ClassError("Pick one of the answers shown.")
        if (
            db.execute(
                "SELECT COUNT(*) FROM class_answers WHERE question_id = ? AND address = ?",
                (question_id, address),
            ).fetchone()[0]
            >= ANSWERS_PER_ADDRESS
        ):
            raise ClassError("Too many answers came from this network for this question.")
        try:
            db.execute(
                "INSERT INTO class_answers (question_id, student_id, answer, answered_at, address) "
                "VALUES (?, ?, ?, ?, ?)",
                (question_id, student_id, given, now, address),
            )
        except database.IntegrityError:
            raise ClassError("You have already answered this question: one answer each.") from None
    return given
