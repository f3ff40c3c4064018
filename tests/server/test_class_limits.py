"""Issue 30: a live class nobody can stuff or lock, and that its lecturer controls (close, head count, end, hide)."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from bertviz_lite.server import class_joining, class_results, classroom, database
from bertviz_lite.server.classroom import CHOICE, CLOZE, ClassError, NewQuestion, Position
from devtools.waiting import wait_until

PAIR = Position("all-MiniLM-L6-v2", "The cat sat on the [MASK].", "It was warm.")
NSP = NewQuestion(CHOICE, "Does B follow A?", ("Yes", "No"), "Yes")
CLOZE_QUESTION = NewQuestion(CLOZE, "What will BERT put in place of [MASK]?", ("mat", "floor", "bed"), "mat")


@pytest.fixture
def db(tmp_path):
    yield tmp_path / "class.sqlite3"
    database.close_all()


def wrong_code(code: str) -> str:
    return "A" * classroom.CODE_LENGTH if code != "A" * classroom.CODE_LENGTH else "C" * classroom.CODE_LENGTH


def test_200_fresh_visitor_ids_from_one_address_cannot_fill_a_class(db):
    """The reproduction: 200 fresh visitor ids joined one class and answered in 0.14 s."""
    code, secret = classroom.start_class(PAIR, path=db)
    question = classroom.ask(code, secret, NSP, path=db)
    joined, refused = [], []
    for i in range(200):
        try:
            joined.append(class_joining.join(code, f"fresh-{i}", "203.0.113.7", path=db))
        except ClassError as err:
            refused.append(str(err))
    assert len(joined) == class_joining.JOINS_PER_ADDRESS and "Too many students joined" in refused[0]
    for student in joined:
        class_joining.answer(code, student, question, "No", address="203.0.113.7", path=db)
    assert class_results.student_count(code, path=db) == class_joining.JOINS_PER_ADDRESS
    assert class_results.answer_count(question, path=db) == class_joining.JOINS_PER_ADDRESS
    assert class_joining.join(code, "a-real-student", "198.51.100.2", path=db)  # another address still joins


def test_answers_from_one_address_are_capped_per_question(db, monkeypatch):
    code, secret = classroom.start_class(PAIR, path=db)
    students = [class_joining.join(code, f"s{i}", f"10.0.0.{i}", path=db) for i in range(5)]
    question = classroom.ask(code, secret, NSP, path=db)
    monkeypatch.setattr(
        class_joining, "ANSWERS_PER_ADDRESS", 3
    )  # students who joined elsewhere, one network now
    given = [
        class_joining.answer(code, s, question, "Yes", address="10.9.9.9", path=db) for s in students[:3]
    ]
    with pytest.raises(ClassError, match="Too many answers came from this network"):
        class_joining.answer(code, students[3], question, "Yes", address="10.9.9.9", path=db)
    assert given == ["Yes"] * 3
    assert class_joining.answer(code, students[4], question, "No", address="10.0.0.4", path=db) == "No"


def test_30_fresh_ids_guessing_10_wrong_codes_do_not_lock_out_a_real_student(db):
    """The reproduction: 30 fresh ids x 10 wrong join codes, then a real student with the right code (and the QR
    link) was refused for 10 minutes."""
    code, secret = classroom.start_class(PAIR, path=db)
    for guesser in range(30):
        for _ in range(10):
            with pytest.raises(ClassError):
                class_joining.join(
                    wrong_code(code), f"guesser-{guesser}", "203.0.113.66", now=1000.0, path=db
                )
    with pytest.raises(ClassError, match="Too many wrong codes"):  # the guessers' address is stopped …
        class_joining.join(code, "guesser-31", "203.0.113.66", now=1000.0, path=db)
    assert class_joining.join(
        code, "student", "198.51.100.20", now=1000.0, path=db
    )  # … a student elsewhere is not
    token = classroom.join_token(code, secret)  # … and the QR link joins even from the guessers' network
    assert class_joining.join(code, "neighbour", "203.0.113.66", token=token, now=1000.0, path=db)


def test_the_qr_link_joins_while_codes_are_guessed_from_many_addresses(db, monkeypatch):
    code, secret = classroom.start_class(PAIR, path=db)
    monkeypatch.setattr(class_joining, "WRONG_CODES_TOTAL", 50)
    for address in range(5):
        for guess in range(class_joining.WRONG_CODES_PER_CLIENT):
            with pytest.raises(ClassError):
                class_joining.join(
                    wrong_code(code), f"bot-{address}-{guess}", f"10.6.6.{address}", now=5.0, path=db
                )
    with pytest.raises(ClassError, match="Too many wrong codes"):  # everyone's limit: typed codes wait …
        class_joining.join(code, "student", "198.51.100.9", now=6.0, path=db)
    token = classroom.join_token(code, secret)
    assert class_joining.join(
        code, "student", "198.51.100.9", token=token, now=6.0, path=db
    )  # … the link does not
    with pytest.raises(ClassError, match="join link is not valid"):
        class_joining.join(code, "student2", "198.51.100.9", token="0" * len(token), now=6.0, path=db)
    assert len(token) * 4 >= 128  # hex: 128 bits, nothing to guess


def test_the_lecturer_closes_joining_counts_heads_and_ends_the_class(db):
    code, secret = classroom.start_class(PAIR, path=db)
    early = class_joining.join(code, "early", "10.0.0.1", path=db)
    classroom.set_expected(code, secret, 25, path=db)
    classroom.set_joining(code, secret, False, path=db)
    view = classroom.current(code, path=db)
    assert (view.joining_open, view.expected) == (False, 25)
    with pytest.raises(ClassError, match="closed joining"):
        class_joining.join(code, "late", "10.0.0.2", path=db)
    with pytest.raises(ClassError, match="closed joining"):
        class_joining.join(code, "late", "10.0.0.2", token=classroom.join_token(code, secret), path=db)
    assert class_joining.join(code, "early", "10.0.0.1", path=db) == early  # a reload of a student already in
    classroom.set_joining(code, secret, True, path=db)
    assert class_joining.join(code, "late", "10.0.0.2", path=db)
    with pytest.raises(ClassError, match="from 0 to"):
        classroom.set_expected(code, secret, 10**6, path=db)
    question = classroom.ask(code, secret, NSP, path=db)
    classroom.end_class(code, secret, path=db)
    assert classroom.current(code, path=db) is None
    for refused in (
        lambda: class_joining.join(code, "new", "10.0.0.3", path=db),
        lambda: class_joining.join(
            code, "new", "10.0.0.3", token=classroom.join_token(code, secret), path=db
        ),
        lambda: class_joining.answer(code, early, question, "Yes", path=db),
        lambda: classroom.move(code, secret, PAIR, path=db),
        lambda: classroom.reveal(code, secret, path=db),
    ):
        with pytest.raises(ClassError, match="ended|not valid"):
            refused()
    assert class_results.results_rows(code, secret, path=db)  # the CSV stays for the lecturer


def test_the_lecturer_hides_a_typed_word_before_the_reveal(db):
    code, secret = classroom.start_class(PAIR, path=db)
    students = [class_joining.join(code, f"s{i}", f"10.0.1.{i}", path=db) for i in range(4)]
    question = classroom.ask(code, secret, CLOZE_QUESTION, path=db)
    for student, word in zip(students, ["mat", "mat", "rude", "=hyperlink(x)"], strict=True):
        class_joining.answer(code, student, question, word, path=db)
    asked = classroom.current(code, path=db).question
    classroom.hide_answer(code, secret, question, "rude", path=db)
    classroom.hide_answer(code, secret, question, "=hyperlink(x)", path=db)
    assert class_results.distribution(asked, path=db).answers == (("mat", 2),)
    assert dict(class_results.distribution(asked, with_hidden=True, path=db).answers) == {
        "mat": 2,
        "rude": 1,
        "=hyperlink(x)": 1,
    }
    assert "rude" not in class_results.results_csv(code, secret, path=db)
    classroom.hide_answer(code, secret, question, "rude", hidden=False, path=db)
    assert class_results.distribution(asked, path=db).count("rude") == 1
    with pytest.raises(ClassError, match="only its lecturer"):
        classroom.hide_answer(code, "not-the-secret", question, "mat", path=db)


def test_classes_per_visitor_and_address_and_the_source_are_capped(db):
    for _ in range(classroom.MAX_CLASSES_PER_VISITOR):
        classroom.start_class(PAIR, owner="visitor-1", address="10.0.0.1", path=db)
    with pytest.raises(ClassError, match="End class"):
        classroom.start_class(PAIR, owner="visitor-1", address="10.0.0.1", path=db)
    others = classroom.MAX_CLASSES_PER_ADDRESS - classroom.MAX_CLASSES_PER_VISITOR
    for i in range(others):
        classroom.start_class(PAIR, owner=f"fresh-{i}", address="10.0.0.1", path=db)
    with pytest.raises(ClassError, match="from your network"):
        classroom.start_class(PAIR, owner="yet-another", address="10.0.0.1", path=db)
    code, secret = classroom.start_class(PAIR, owner="visitor-2", address="10.0.0.2", path=db)
    classroom.end_class(code, secret, path=db)  # an ended class no longer counts
    for _ in range(classroom.MAX_CLASSES_PER_VISITOR):
        classroom.start_class(PAIR, owner="visitor-2", address="10.0.0.2", path=db)
    for _ in range(
        classroom.MAX_CLASSES_PER_ADDRESS + 1
    ):  # the server itself (a script, the bench): not capped
        classroom.start_class(PAIR, path=db)
    with pytest.raises(ClassError, match="model name"):
        classroom.start_class(Position("x" * (classroom.MAX_SOURCE_CHARS + 1), "a", "b"), path=db)


def test_ended_classes_are_purged_on_a_timer_not_only_when_a_class_starts(db):
    code, secret = classroom.start_class(PAIR, hours=1, now=0.0, path=db)
    class_joining.join(code, "s", "10.0.0.1", now=1.0, path=db)
    stop = threading.Event()
    timer = threading.Thread(target=classroom.purge_every, args=(0.05, stop, db), daemon=True)
    timer.start()
    try:
        rows = lambda: database.connection(db).execute("SELECT COUNT(*) FROM class_sessions").fetchone()[0]  # noqa: E731
        wait_until(lambda: rows() == 0, 10, "the timer's purge")
    finally:
        stop.set()
        timer.join(5)
    assert not timer.is_alive()
    assert database.connection(db).execute("SELECT COUNT(*) FROM class_students").fetchone()[0] == 0


def test_an_older_class_file_gets_the_new_columns(tmp_path):
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as old:  # the tables as the previous release made them
        old.executescript(classroom.SCHEMA)
        old.execute(
            "INSERT INTO class_sessions (code, secret_digest, created_at, expires_at, source, text_a, text_b, "
            "step, layer, head) VALUES ('KKKKKK', 'x', 0, 9e99, 's', 'a', 'b', 1, 0, 0)"
        )
    view = classroom.current("KKKKKK", path=path)
    assert view.joining_open and view.expected == 0
    database.close_all()
