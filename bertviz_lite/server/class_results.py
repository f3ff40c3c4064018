"""A live class's numbers for the projector and the lecturer's CSV: answer counts, the class's distribution.

Reads what server/live_class.py wrote; students appear only as counts, never by id. A word the lecturer hid
(live_class.hide_answer) is left out of the class's chart and the CSV; `distribution(…, with_hidden=True)` is the
lecturer's own view before the reveal.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

from bertviz_lite.server import database, live_class
from bertviz_lite.text.display import plain_cell

RESULT_COLUMNS = ("question", "step", "kind", "prompt", "model_answer", "class_answer", "students", "share")


@dataclass(frozen=True)
class Distribution:
    """The class's answers to one question: (answer, students) from most to fewest, and the model's answer."""

    answers: tuple[tuple[str, int], ...]
    model_answer: str
    total: int

    def count(self, answer: str) -> int:
        return dict(self.answers).get(answer, 0)


def _db(store: database.Store):
    return live_class.connect(store)


def hidden_answers(question_id: int, *, store: database.Store = None) -> frozenset[str]:
    """The words the lecturer hid from this question's chart."""
    rows = _db(store).execute("SELECT answer FROM class_hidden WHERE question_id = ?", (question_id,))
    return frozenset(row[0] for row in rows)


def answer_count(question_id: int, *, store: database.Store = None) -> int:
    """How many students have answered this question (the projector's live count)."""
    return (
        _db(store)
        .execute("SELECT COUNT(*) FROM class_answers WHERE question_id = ?", (question_id,))
        .fetchone()[0]
    )


def student_count(code: str, *, store: database.Store = None) -> int:
    """How many students have joined the class."""
    return _db(store).execute("SELECT COUNT(*) FROM class_students WHERE code = ?", (code,)).fetchone()[0]


def distribution(
    question: live_class.AskedQuestion, *, with_hidden: bool = False, store: database.Store = None
) -> Distribution:
    """The class's answers to a question, without the words the lecturer hid (unless `with_hidden`); a multiple
    choice lists every option, answered or not."""
    rows = (
        _db(store)
        .execute(
            "SELECT answer, COUNT(*) FROM class_answers WHERE question_id = ? GROUP BY answer", (question.id,)
        )
        .fetchall()
    )
    hidden = frozenset() if with_hidden else hidden_answers(question.id, store=store)
    counts = {answer: count for answer, count in rows if answer not in hidden}
    if question.kind == live_class.CHOICE:
        counts = {option: counts.get(option, 0) for option in question.options}
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return Distribution(tuple(ordered), question.answer, sum(counts.values()))


def class_questions(
    code: str, secret: str, *, store: database.Store = None
) -> list[tuple[live_class.AskedQuestion, int]]:
    """Every question the class was asked, in order, with its step (the lecturer's secret needed)."""
    db = _db(store)
    live_class.lecturer_session(db, code, secret)
    rows = db.execute("SELECT * FROM class_questions WHERE code = ? ORDER BY id", (code,)).fetchall()
    return [(live_class.asked_question(row), row["step"]) for row in rows]


def results_rows(code: str, secret: str, *, store: database.Store = None) -> list[dict]:
    """One row per question and answer given (a question nobody answered: one row with no answer)."""
    rows = []
    for number, (question, step) in enumerate(class_questions(code, secret, store=store), start=1):
        spread = distribution(question, store=store)
        for answer, students in spread.answers or (("", 0),):
            rows.append(
                {
                    "question": number,
                    "step": step,
                    "kind": question.kind,
                    "prompt": question.prompt,
                    "model_answer": question.answer,
                    "class_answer": answer,
                    "students": students,
                    "share": round(students / spread.total, 4) if spread.total else 0.0,
                }
            )
    return rows


def results_csv(code: str, secret: str, *, store: database.Store = None) -> str:
    """results_rows as CSV text; a typed answer that would start a spreadsheet formula is kept as text."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=RESULT_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in results_rows(code, secret, store=store):
        writer.writerow({key: plain_cell(value) for key, value in row.items()})
    return out.getvalue()
