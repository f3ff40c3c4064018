"""Issue 30: a live class nobody can stuff or lock, and that its lecturer controls (close, head count, end, hide)."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from bertviz_lite.server import class_joining, class_results, database, live_class, sqlite_store
from bertviz_lite.server.live_class import CHOICE, CLOZE, ClassError, NewQuestion, Position
from devtools.waiting import wait_until

PAIR = Position("all-MiniLM-L6-v2", "The cat sat on the [MASK].", "It was warm.")
NSP = NewQuestion(CHOICE, "Does B follow A?", ("Yes", "No"), "Yes")
CLOZE_QUESTION = NewQuestion(CLOZE, "What will BERT put in place of [MASK]?", ("mat", "floor", "bed"), "mat")


def wrong_code(code: str) -> str:
    return (
        "A" * live_class.CODE_LENGTH if code != "A" * live_class.CODE_LENGTH else "C" * live_class.CODE_LENGTH
    )


def test_200_fresh_visitor_ids_from_one_address_cannot_fill_a_class(store):
    """The reproduction: 200 fresh visitor ids joined one class and answered in 0.14 s."""
    code, secret = live_class.start_class(PAIR, store=store)
    question = live_class.ask(code, secret, NSP, store=store)
    joined = []
    refused = []
    for i in range(200):
        try:
            joined.append(class_joining.join(code, f"fresh-{i}", "203.0.113.7", store=store))
        except ClassError as err:
            refused.append(str(err))
    assert len(joined) == class_joining.JOINS_PER_ADDRESS and "Too many students joined" in refused[0]
    for student in joined:
        class_joining.answer(code, student, question, "No", address="203.0.113.7", store=store)
    assert class_results.student_count(code, store=store) == class_joining.JOINS_PER_ADDRESS
    assert class_results.answer_count(question, store=store) == class_joining.JOINS_PER_ADDRESS
    assert class_joining.join(
        code, "a-real-student", "198.51.100.2", store=store
    )  # another address still joins


def test_answers_from_one_address_are_capped_per_question(store, monkeypatch):
    code, secret = live_class.start_class(PAIR, store=store)
    students = [class_joining.join(code, f"s{i}", f"10.0.0.{i}", store=store) for i in range(5)]
    question = live_class.ask(code, secret, NSP, store=store)
    monkeypatch.setattr(
        class_joining, "ANSWERS_PER_ADDRESS", 3
    )  # students who joined elsewhere, one network now
    given = [
        class_joining.answer(code, s, question, "Yes", address="10.9.9.9", store=store) for s in students[:3]
    ]
    with pytest.raises(ClassError, match="Too many answers came from this network"):
        class_joining.answer(code, students[3], question, "Yes", address="10.9.9.9", store=store)
    assert given == ["Yes"] * 3
    assert class_joining.answer(code, students[4], question, "No", address="10.0.0.4", store=store) == "No"


def test_30_fresh_ids_guessing_10_wrong_codes_do_not_lock_out_a_real_student(store):
    """The reproduction: 30 fresh ids x 10 wrong join codes, then a real student with the right code (and the QR
    link) was refused for 10 minutes."""
    code, secret = live_class.start_class(PAIR, store=store)
    for guesser in range(30):
        for _ in range(10):
            with pytest.raises(ClassError):
                class_joining.join(
                    wrong_code(code), f"guesser-{guesser}", "203.0.113.66", now=1000.0, store=store
                )
    with pytest.raises(ClassError, match="Too many wrong codes"):  # the guessers' address is stopped …
        class_joining.join(code, "guesser-31", "203.0.113.66", now=1000.0, store=store)
    assert class_joining.join(
        code, "student", "198.51.100.20", now=1000.0, store=store
    )  # … a student elsewhere is not
    token = live_class.join_token(code, secret)  # … and the QR link joins even from the guessers' network
    assert class_joining.join(code, "neighbour", "203.0.113.66", token=token, now=1000.0, store=store)


def test_the_qr_link_joins_while_codes_are_guessed_from_many_addresses(store, monkeypatch):
    code, secret = live_class.start_class(PAIR, store=store)
    monkeypatch.setattr(class_joining, "WRONG_CODES_TOTAL", 50)
    for address in range(5):
        for guess in range(class_joining.WRONG_CODES_PER_CLIENT):
            with pytest.raises(ClassError):
                class_joining.join(
                    wrong_code(code), f"bot-{address}-{guess}", f"10.6.6.{address}", now=5.0, store=store
                )
    with pytest.raises(ClassError, match="Too many wrong codes"):  # everyone's limit: typed codes wait …
        class_joining.join(code, "student", "198.51.100.9", now=6.0, store=store)
    token = live_class.join_token(code, secret)
    assert class_joining.join(
        code, "student", "198.51.100.9", token=token, now=6.0, store=store
    )  # … the link does not
    with pytest.raises(ClassError, match="join link is not valid"):
        class_joining.join(code, "student2", "198.51.100.9", token="0" * len(token), now=6.0, store=store)
    assert len(token) * 4 >= 128  # hex: 128 bits, nothing to guess


def test_the_lecturer_closes_joining_counts_heads_and_ends_the_class(store):
    code, secret = live_class.start_class(PAIR, store=store)
    early = class_joining.join(code, "early", "10.0.0.1", store=store)
    live_class.set_expected(code, secret, 25, store=store)
    live_class.set_joining(code, secret, False, store=store)
    view = live_class.current(code, store=store)
    assert (view.joining_open, view.expected) == (False, 25)
    with pytest.raises(ClassError, match="closed joining"):
        class_joining.join(code, "late", "10.0.0.2", store=store)
    with pytest.raises(ClassError, match="closed joining"):
        class_joining.join(code, "late", "10.0.0.2", token=live_class.join_token(code, secret), store=store)
    assert (
        class_joining.join(code, "early", "10.0.0.1", store=store) == early
    )  # a reload of a student already in
    live_class.set_joining(code, secret, True, store=store)
    assert class_joining.join(code, "late", "10.0.0.2", store=store)
    with pytest.raises(ClassError, match="from 0 to"):
        live_class.set_expected(code, secret, 10**6, store=store)
    question = live_class.ask(code, secret, NSP, store=store)
    live_class.end_class(code, secret, store=store)
    assert live_class.current(code, store=store) is None
    for refused in (
        lambda: class_joining.join(code, "new", "10.0.0.3", store=store),
        lambda: class_joining.join(
            code, "new", "10.0.0.3", token=live_class.join_token(code, secret), store=store
        ),
        lambda: class_joining.answer(code, early, question, "Yes", store=store),
        lambda: live_class.move(code, secret, PAIR, store=store),
        lambda: live_class.reveal(code, secret, store=store),
    ):
        with pytest.raises(ClassError, match="ended|not valid"):
            refused()
    assert class_results.results_rows(code, secret, store=store)  # the CSV stays for the lecturer


def test_the_lecturer_hides_a_typed_word_before_the_reveal(store):
    code, secret = live_class.start_class(PAIR, store=store)
    students = [class_joining.join(code, f"s{i}", f"10.0.1.{i}", store=store) for i in range(4)]
    question = live_class.ask(code, secret, CLOZE_QUESTION, store=store)
    for student, word in zip(students, ["mat", "mat", "rude", "=hyperlink(x)"], strict=True):
        class_joining.answer(code, student, question, word, store=store)
    asked = live_class.current(code, store=store).question
    live_class.hide_answer(code, secret, question, "rude", store=store)
    live_class.hide_answer(code, secret, question, "=hyperlink(x)", store=store)
    assert class_results.distribution(asked, store=store).answers == (("mat", 2),)
    assert dict(class_results.distribution(asked, with_hidden=True, store=store).answers) == {
        "mat": 2,
        "rude": 1,
        "=hyperlink(x)": 1,
    }
    assert "rude" not in class_results.results_csv(code, secret, store=store)
    live_class.hide_answer(code, secret, question, "rude", hidden=False, store=store)
    assert class_results.distribution(asked, store=store).count("rude") == 1
    with pytest.raises(ClassError, match="only its lecturer"):
        live_class.hide_answer(code, "not-the-secret", question, "mat", store=store)


def test_classes_per_visitor_and_address_and_the_source_are_capped(store):
    for _ in range(live_class.MAX_CLASSES_PER_VISITOR):
        live_class.start_class(PAIR, owner="visitor-1", address="10.0.0.1", store=store)
    with pytest.raises(ClassError, match="End class"):
        live_class.start_class(PAIR, owner="visitor-1", address="10.0.0.1", store=store)
    others = live_class.MAX_CLASSES_PER_ADDRESS - live_class.MAX_CLASSES_PER_VISITOR
    for i in range(others):
        live_class.start_class(PAIR, owner=f"fresh-{i}", address="10.0.0.1", store=store)
    with pytest.raises(ClassError, match="from your network"):
        live_class.start_class(PAIR, owner="yet-another", address="10.0.0.1", store=store)
    code, secret = live_class.start_class(PAIR, owner="visitor-2", address="10.0.0.2", store=store)
    live_class.end_class(code, secret, store=store)  # an ended class no longer counts
    for _ in range(live_class.MAX_CLASSES_PER_VISITOR):
        live_class.start_class(PAIR, owner="visitor-2", address="10.0.0.2", store=store)
    for _ in range(
        live_class.MAX_CLASSES_PER_ADDRESS + 1
    ):  # the server itself (a script, the bench): not capped
        live_class.start_class(PAIR, store=store)
    with pytest.raises(ClassError, match="model name"):
        live_class.start_class(Position("x" * (live_class.MAX_SOURCE_CHARS + 1), "a", "b"), store=store)


def test_ended_classes_are_purged_on_a_timer_not_only_when_a_class_starts(store):
    code, secret = live_class.start_class(PAIR, hours=1, now=0.0, store=store)
    class_joining.join(code, "s", "10.0.0.1", now=1.0, store=store)
    stop = threading.Event()
    timer = threading.Thread(target=live_class.purge_every, args=(0.05, stop, store), daemon=True)
    timer.start()
    try:
        rows = lambda: database.connection(store).execute("SELECT COUNT(*) FROM class_sessions").fetchone()[0]  # noqa: E731
        wait_until(lambda: rows() == 0, 10, "the timer's purge")
    finally:
        stop.set()
        timer.join(5)
    assert not timer.is_alive()
    assert database.connection(store).execute("SELECT COUNT(*) FROM class_students").fetchone()[0] == 0


def test_a_class_file_of_the_release_before_schema_versions_is_brought_up_to_date(tmp_path):
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as old:  # the tables as the first release made them, without schema_versions
        old.executescript(live_class.SCHEMA.format_map(sqlite_store.WORDS))
        old.execute(
            "INSERT INTO class_sessions (code, secret_digest, created_at, expires_at, source, text_a, text_b, "
            "step, layer, head) VALUES ('KKKKKK', 'x', 0, 9e99, 's', 'a', 'b', 1, 0, 0)"
        )
    view = live_class.current("KKKKKK", store=path)
    assert view.joining_open and view.expected == 0
    versions = database.connection(path).execute(
        "SELECT version FROM schema_versions WHERE name = 'classroom'"
    )
    assert sorted(row[0] for row in versions) == [1, 2]
    database.close_all()
