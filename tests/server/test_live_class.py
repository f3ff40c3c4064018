"""A live class in the shared SQLite file: students follow the lecturer, answer once, and nothing acknowledged is lost."""

from __future__ import annotations

import contextlib
import signal

import pytest

from bertviz_lite.server import class_joining, class_results, database, live_class
from bertviz_lite.server.live_class import CHOICE, CLOZE, ClassError, NewQuestion, Position
from devtools.waiting import wait_until
from tests.server.app_processes import answer_as_students, forkserver

PAIR = Position("all-MiniLM-L6-v2", "The cat sat on the [MASK].", "It was warm.", step=1, layer=0, head=0)
NSP = NewQuestion(
    CHOICE, "Will the model say that sentence B follows sentence A?", ("Yes", "No"), "Yes", "91%."
)


def students(store, code, count, start=0):
    return [
        class_joining.join(code, f"browser-{i}", f"10.0.0.{i}", store=store)
        for i in range(start, start + count)
    ]


def test_students_follow_the_lecturer_and_a_wrong_secret_cannot_move_the_class(store):
    code, secret = live_class.start_class(PAIR, store=store)
    assert len(code) == live_class.CODE_LENGTH and set(code) <= set(live_class.CODE_ALPHABET)
    (student,) = students(store, code, 1)
    before = live_class.current(code.lower(), student, store=store)
    assert before.position == PAIR and before.question is None
    live_class.move(
        code, secret, Position(PAIR.source, "A dog barked.", "", step=4, layer=1, head=2), store=store
    )
    after = live_class.current(code, student, store=store)
    assert (after.position.text_a, after.position.step, after.position.head) == ("A dog barked.", 4, 2)
    assert after.version > before.version
    with pytest.raises(ClassError, match="only its lecturer"):
        live_class.move(code, "not-the-secret", PAIR, store=store)
    with pytest.raises(ClassError, match="only its lecturer"):
        live_class.ask(code, secret + "x", NSP, store=store)
    assert live_class.current(code, store=store).position.step == 4
    stored = database.connection(store).execute("SELECT secret_digest FROM class_sessions").fetchone()[0]
    assert secret not in stored and stored == live_class.digest(secret)


def test_counts_and_distribution_match_the_answers_and_a_second_answer_is_refused(store):
    code, secret = live_class.start_class(PAIR, store=store)
    ids = students(store, code, 5)
    question = live_class.ask(code, secret, NSP, store=store)
    for student, choice in zip(ids, ["Yes", "No", "No", "Yes", "No"], strict=True):
        assert class_joining.answer(code, student, question, choice, store=store) == choice
    with pytest.raises(ClassError, match="already answered"):
        class_joining.answer(code, ids[0], question, "No", store=store)
    asked = live_class.current(code, ids[0], store=store)
    assert asked.my_answer == "Yes" and class_results.answer_count(question, store=store) == 5
    spread = class_results.distribution(asked.question, store=store)
    assert spread.answers == (("No", 3), ("Yes", 2)) and spread.model_answer == "Yes"
    live_class.reveal(code, secret, store=store)
    late = students(store, code, 1, start=9)[0]
    with pytest.raises(ClassError, match="revealed"):
        class_joining.answer(code, late, question, "Yes", store=store)
    with pytest.raises(ClassError, match="one of the answers"):
        class_joining.answer(code, late, live_class.ask(code, secret, NSP, store=store), "Maybe", store=store)


def test_free_cloze_words_are_normalised_length_limited_and_exported_without_formulas(store):
    code, secret = live_class.start_class(PAIR, store=store)
    ids = students(store, code, 4)
    top = ("mat", "floor", "bed", "sofa", "chair")
    question = live_class.ask(
        code, secret, NewQuestion(CLOZE, "What will BERT put in place of [MASK]?", top, "mat"), store=store
    )
    assert class_joining.answer(code, ids[0], question, "  Mat ", store=store) == "mat"
    class_joining.answer(code, ids[1], question, "MAT", store=store)
    class_joining.answer(code, ids[2], question, "=HYPERLINK(x)", store=store)
    with pytest.raises(ClassError, match="one word"):
        class_joining.answer(code, ids[3], question, "x" * (class_joining.MAX_WORD_CHARS + 1), store=store)
    with pytest.raises(ClassError, match="one word"):
        class_joining.answer(code, ids[3], question, "two words", store=store)
    spread = class_results.distribution(live_class.current(code, store=store).question, store=store)
    assert spread.answers == (("mat", 2), ("=hyperlink(x)", 1))
    lines = class_results.results_csv(code, secret, store=store).splitlines()
    assert lines[0] == ",".join(class_results.RESULT_COLUMNS)
    assert lines[1].endswith(",mat,mat,2,0.6667") and ",'=hyperlink(x),1," in lines[2]
    with pytest.raises(ClassError):
        class_results.results_csv(code, "wrong", store=store)


def test_wrong_codes_are_rate_limited_per_client_and_in_total(store, monkeypatch):
    code, _ = live_class.start_class(PAIR, store=store)
    wrong = (
        "A" * live_class.CODE_LENGTH if code != "A" * live_class.CODE_LENGTH else "C" * live_class.CODE_LENGTH
    )
    for _ in range(class_joining.WRONG_CODES_PER_CLIENT):
        with pytest.raises(ClassError, match="no class with this code"):
            class_joining.join(wrong, "guesser", "6.6.6.6", now=1000.0, store=store)
    with pytest.raises(
        ClassError, match="Too many wrong codes"
    ):  # even the right code, so guessing learns nothing
        class_joining.join(code, "guesser", "6.6.6.6", now=1000.0, store=store)
    assert class_joining.join(
        code, "someone", "7.7.7.7", now=1000.0, store=store
    )  # another client is not blocked
    assert class_joining.join(
        code, "guesser", "6.6.6.6", now=1000.0 + class_joining.WRONG_CODE_WINDOW_S + 1, store=store
    )
    monkeypatch.setattr(class_joining, "WRONG_CODES_TOTAL", 15)
    for client in range(15):
        with pytest.raises(ClassError):
            class_joining.join(wrong, f"b{client}", f"client-{client}", now=5000.0, store=store)
    with pytest.raises(ClassError, match="Too many wrong codes"):
        class_joining.join(code, "fresh", "8.8.8.8", now=5000.0, store=store)


def test_a_class_expires(store):
    code, secret = live_class.start_class(PAIR, hours=1, now=0.0, store=store)
    (student,) = [class_joining.join(code, "b", "c", now=10.0, store=store)]
    question = live_class.ask(code, secret, NSP, now=20.0, store=store)
    assert live_class.current(code, now=3599.0, store=store) is not None
    assert live_class.current(code, now=3601.0, store=store) is None
    for refused in (
        lambda: class_joining.join(code, "late", "c", now=3601.0, store=store),
        lambda: live_class.move(code, secret, PAIR, now=3601.0, store=store),
        lambda: class_joining.answer(code, student, question, "Yes", now=3601.0, store=store),
    ):
        with pytest.raises(ClassError, match="ended"):
            refused()
    assert (
        class_results.results_rows(code, secret, store=store)[0]["students"] == 0
    )  # the CSV is still there …
    live_class.start_class(PAIR, now=3600 + live_class.KEEP_DAYS * 86400 + 1, store=store)
    with pytest.raises(ClassError):  # … until KEEP_DAYS later
        class_results.results_rows(code, secret, store=store)


def test_a_flood_of_answers_from_one_student_changes_nothing_for_the_others(store):
    code, secret = live_class.start_class(PAIR, store=store)
    flooder, *others = students(store, code, 4)
    question = live_class.ask(code, secret, NSP, store=store)
    for other in others:
        class_joining.answer(code, other, question, "No", store=store)
    class_joining.answer(code, flooder, question, "Yes", store=store)
    refused = 0
    for _ in range(200):
        try:
            class_joining.answer(code, flooder, question, "Yes", store=store)
        except ClassError:
            refused += 1
    assert refused == 200
    spread = class_results.distribution(live_class.current(code, store=store).question, store=store)
    assert spread.answers == (("No", 3), ("Yes", 1))
    with pytest.raises(ClassError, match="Join the class first"):  # an id made up by hand is not a student
        class_joining.answer(code, "0" * 32, question, "Yes", store=store)


EACH = 60  # answers from each app process that is not killed


def answering(context, store, code: str, question: int, phone: int, count: int, go) -> tuple:
    """An app process answering for `count` students of its own once `go` is set, and the pipe of its acknowledgements."""
    acks, sent = context.Pipe(duplex=False)
    process = context.Process(target=answer_as_students, args=(store, code, question, phone, count, go, sent))
    process.start()
    sent.close()  # the process holds the other end: the pipe ends when it does
    assert acks.recv() == "ready"
    return process, acks


def received(acks) -> list:
    """Every message the pipe holds until its process ended (a kill mid-send leaves no half message: one write)."""
    messages = []
    with contextlib.suppress(EOFError):
        while True:
            messages.append(acks.recv())
    return messages


def test_processes_answering_at_once_lose_no_acknowledged_answer_when_one_is_killed_mid_answer(store):
    code, secret = live_class.start_class(PAIR, store=store)
    question = live_class.ask(code, secret, NSP, store=store)
    context = forkserver()
    go = context.Event()
    (killed, killed_acks), *others = [
        answering(context, store, code, question, phone, 10_000 if phone == 0 else EACH, go)
        for phone in range(3)
    ]
    go.set()
    acked = [killed_acks.recv() for _ in range(40)]
    killed.kill()
    killed.join()
    acked += received(killed_acks)  # sent before the kill
    assert killed.exitcode == -signal.SIGKILL and len(acked) >= 40 and acked == list(range(len(acked)))
    for process, acks in others:
        process.join(timeout=120)
        assert process.exitcode == 0 and received(acks) == list(range(EACH))
    database.close_all()  # read back as a restarted app would, on a new connection
    counted = class_results.answer_count(question, store=store)
    assert (
        len(acked) + 2 * EACH <= counted <= len(acked) + 2 * EACH + 1
    )  # + the one killed before it could say so
    view = wait_until(lambda: live_class.current(code, store=store), 5, "the class after the kill")
    assert view.question.id == question and not view.revealed  # the session resumes where it was
