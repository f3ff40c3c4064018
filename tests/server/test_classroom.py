"""A live class in the shared SQLite file: students follow the lecturer, answer once, and nothing acknowledged is lost."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest

from bertviz_lite.server import class_joining, class_results, classroom, database
from bertviz_lite.server.classroom import CHOICE, CLOZE, ClassError, NewQuestion, Position
from devtools.waiting import wait_until

PAIR = Position("all-MiniLM-L6-v2", "The cat sat on the [MASK].", "It was warm.", step=1, layer=0, head=0)
NSP = NewQuestion(
    CHOICE, "Will the model say that sentence B follows sentence A?", ("Yes", "No"), "Yes", "91%."
)


@pytest.fixture
def db(tmp_path):
    yield tmp_path / "class.sqlite3"
    database.close_all()


def students(db, code, count, start=0):
    return [
        class_joining.join(code, f"browser-{i}", f"10.0.0.{i}", path=db) for i in range(start, start + count)
    ]


def test_students_follow_the_lecturer_and_a_wrong_secret_cannot_move_the_class(db):
    code, secret = classroom.start_class(PAIR, path=db)
    assert len(code) == classroom.CODE_LENGTH and set(code) <= set(classroom.CODE_ALPHABET)
    (student,) = students(db, code, 1)
    before = classroom.current(code.lower(), student, path=db)
    assert before.position == PAIR and before.question is None
    classroom.move(code, secret, Position(PAIR.source, "A dog barked.", "", step=4, layer=1, head=2), path=db)
    after = classroom.current(code, student, path=db)
    assert (after.position.text_a, after.position.step, after.position.head) == ("A dog barked.", 4, 2)
    assert after.version > before.version
    with pytest.raises(ClassError, match="only its lecturer"):
        classroom.move(code, "not-the-secret", PAIR, path=db)
    with pytest.raises(ClassError, match="only its lecturer"):
        classroom.ask(code, secret + "x", NSP, path=db)
    assert classroom.current(code, path=db).position.step == 4
    stored = database.connection(db).execute("SELECT secret_digest FROM class_sessions").fetchone()[0]
    assert secret not in stored and stored == classroom.digest(secret)


def test_counts_and_distribution_match_the_answers_and_a_second_answer_is_refused(db):
    code, secret = classroom.start_class(PAIR, path=db)
    ids = students(db, code, 5)
    question = classroom.ask(code, secret, NSP, path=db)
    for student, choice in zip(ids, ["Yes", "No", "No", "Yes", "No"], strict=True):
        assert class_joining.answer(code, student, question, choice, path=db) == choice
    with pytest.raises(ClassError, match="already answered"):
        class_joining.answer(code, ids[0], question, "No", path=db)
    asked = classroom.current(code, ids[0], path=db)
    assert asked.my_answer == "Yes" and class_results.answer_count(question, path=db) == 5
    spread = class_results.distribution(asked.question, path=db)
    assert spread.answers == (("No", 3), ("Yes", 2)) and spread.model_answer == "Yes"
    classroom.reveal(code, secret, path=db)
    late = students(db, code, 1, start=9)[0]
    with pytest.raises(ClassError, match="revealed"):
        class_joining.answer(code, late, question, "Yes", path=db)
    with pytest.raises(ClassError, match="one of the answers"):
        class_joining.answer(code, late, classroom.ask(code, secret, NSP, path=db), "Maybe", path=db)


def test_free_cloze_words_are_normalised_length_limited_and_exported_without_formulas(db):
    code, secret = classroom.start_class(PAIR, path=db)
    ids = students(db, code, 4)
    top = ("mat", "floor", "bed", "sofa", "chair")
    question = classroom.ask(
        code, secret, NewQuestion(CLOZE, "What will BERT put in place of [MASK]?", top, "mat"), path=db
    )
    assert class_joining.answer(code, ids[0], question, "  Mat ", path=db) == "mat"
    class_joining.answer(code, ids[1], question, "MAT", path=db)
    class_joining.answer(code, ids[2], question, "=HYPERLINK(x)", path=db)
    with pytest.raises(ClassError, match="one word"):
        class_joining.answer(code, ids[3], question, "x" * (class_joining.MAX_WORD_CHARS + 1), path=db)
    with pytest.raises(ClassError, match="one word"):
        class_joining.answer(code, ids[3], question, "two words", path=db)
    spread = class_results.distribution(classroom.current(code, path=db).question, path=db)
    assert spread.answers == (("mat", 2), ("=hyperlink(x)", 1))
    lines = class_results.results_csv(code, secret, path=db).splitlines()
    assert lines[0] == ",".join(class_results.RESULT_COLUMNS)
    assert lines[1].endswith(",mat,mat,2,0.6667") and ",'=hyperlink(x),1," in lines[2]
    with pytest.raises(ClassError):
        class_results.results_csv(code, "wrong", path=db)


def test_wrong_codes_are_rate_limited_per_client_and_in_total(db, monkeypatch):
    code, _ = classroom.start_class(PAIR, path=db)
    wrong = (
        "A" * classroom.CODE_LENGTH if code != "A" * classroom.CODE_LENGTH else "C" * classroom.CODE_LENGTH
    )
    for _ in range(class_joining.WRONG_CODES_PER_CLIENT):
        with pytest.raises(ClassError, match="no class with this code"):
            class_joining.join(wrong, "guesser", "6.6.6.6", now=1000.0, path=db)
    with pytest.raises(
        ClassError, match="Too many wrong codes"
    ):  # even the right code, so guessing learns nothing
        class_joining.join(code, "guesser", "6.6.6.6", now=1000.0, path=db)
    assert class_joining.join(
        code, "someone", "7.7.7.7", now=1000.0, path=db
    )  # another client is not blocked
    assert class_joining.join(
        code, "guesser", "6.6.6.6", now=1000.0 + class_joining.WRONG_CODE_WINDOW_S + 1, path=db
    )
    monkeypatch.setattr(class_joining, "WRONG_CODES_TOTAL", 15)
    for client in range(15):
        with pytest.raises(ClassError):
            class_joining.join(wrong, f"b{client}", f"client-{client}", now=5000.0, path=db)
    with pytest.raises(ClassError, match="Too many wrong codes"):
        class_joining.join(code, "fresh", "8.8.8.8", now=5000.0, path=db)


def test_a_class_expires(db):
    code, secret = classroom.start_class(PAIR, hours=1, now=0.0, path=db)
    (student,) = [class_joining.join(code, "b", "c", now=10.0, path=db)]
    question = classroom.ask(code, secret, NSP, now=20.0, path=db)
    assert classroom.current(code, now=3599.0, path=db) is not None
    assert classroom.current(code, now=3601.0, path=db) is None
    for refused in (
        lambda: class_joining.join(code, "late", "c", now=3601.0, path=db),
        lambda: classroom.move(code, secret, PAIR, now=3601.0, path=db),
        lambda: class_joining.answer(code, student, question, "Yes", now=3601.0, path=db),
    ):
        with pytest.raises(ClassError, match="ended"):
            refused()
    assert class_results.results_rows(code, secret, path=db)[0]["students"] == 0  # the CSV is still there …
    classroom.start_class(PAIR, now=3600 + classroom.KEEP_DAYS * 86400 + 1, path=db)
    with pytest.raises(ClassError):  # … until KEEP_DAYS later
        class_results.results_rows(code, secret, path=db)


def test_a_flood_of_answers_from_one_student_changes_nothing_for_the_others(db):
    code, secret = classroom.start_class(PAIR, path=db)
    flooder, *others = students(db, code, 4)
    question = classroom.ask(code, secret, NSP, path=db)
    for other in others:
        class_joining.answer(code, other, question, "No", path=db)
    class_joining.answer(code, flooder, question, "Yes", path=db)
    refused = 0
    for _ in range(200):
        try:
            class_joining.answer(code, flooder, question, "Yes", path=db)
        except ClassError:
            refused += 1
    assert refused == 200
    spread = class_results.distribution(classroom.current(code, path=db).question, path=db)
    assert spread.answers == (("No", 3), ("Yes", 1))
    with pytest.raises(ClassError, match="Join the class first"):  # an id made up by hand is not a student
        class_joining.answer(code, "0" * 32, question, "Yes", path=db)


ANSWERING = textwrap.dedent("""
    import sys
    from bertviz_lite.server import class_joining
    path, code, question = sys.argv[1], sys.argv[2], int(sys.argv[3])
    for i in range(10_000):
        address = f"10.0.{i // 250}.{i % 250}"  # phones of their own: one address is limited
        student = class_joining.join(code, f"killed-{i}", address, path=path)
        class_joining.answer(code, student, question, "Yes" if i % 3 else "No", address=address, path=path)
        print(i, flush=True)  # acknowledged: answer() returned
""")


def test_every_acknowledged_answer_survives_kill_9(db):
    code, secret = classroom.start_class(PAIR, path=db)
    question = classroom.ask(code, secret, NSP, path=db)
    process = subprocess.Popen(
        [sys.executable, "-c", ANSWERING, str(db), code, str(question)], stdout=subprocess.PIPE, text=True
    )
    acknowledged = [process.stdout.readline() for _ in range(40)]
    process.send_signal(signal.SIGKILL)
    process.wait()
    acknowledged += process.stdout.read().splitlines()  # lines already printed before the kill
    acked = [int(line) for line in acknowledged if line.strip()]
    assert process.returncode == -signal.SIGKILL and len(acked) >= 40
    fresh = (
        "from bertviz_lite.server import class_results as r; import sys; print(r.answer_count(int(sys.argv[2]), "
        "path=sys.argv[1]))"
    )
    counted = int(
        subprocess.run(
            [sys.executable, "-c", fresh, str(db), str(question)], capture_output=True, text=True, check=True
        ).stdout
    )
    assert counted >= len(acked) == max(acked) + 1
    view = wait_until(lambda: classroom.current(code, path=db), 5, "the class after the kill")
    assert view.question.id == question and not view.revealed  # the session resumes where it was
