"""The Live class page: a lecturer starts a class, a student joins and follows, answers once, the projector counts."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from bertviz_lite.inspection import walkthrough as walk
from bertviz_lite.server import class_joining, class_results, database, live_class
from pages_app.common._sidebar import OTHER_FOLDER
from tests.app.conftest import APP, array, no_exception

PAGE = "pages_app/live_class/11_Live_class.py"
NSP_STEP = walk.step_number("nsp")


@pytest.fixture(autouse=True)
def class_database(monkeypatch, tmp_path):
    monkeypatch.setenv(database.DATA_DIR_SETTING, str(tmp_path / "data"))
    yield
    database.close_all()


def open_class(tiny_folder: str | None = None, **query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    if tiny_folder:
        at.session_state["model_picker"] = OTHER_FOLDER
        at.session_state["model_path"] = tiny_folder
    at.query_params.update(query)
    at.run()
    at.switch_page(PAGE).run()
    no_exception(at)
    return at


def answers_so_far(at: AppTest) -> str:
    return next(metric.value for metric in at.metric if metric.label == "Answers so far")


def shown(at: AppTest) -> str:
    return " | ".join(
        el.value
        for kind in ("subheader", "markdown", "success", "warning", "error", "info")
        for el in getattr(at, kind)
    )


def test_a_student_follows_the_lecturer_answers_once_and_the_projector_counts(tiny_folder):
    lecturer = open_class(tiny_folder)
    lecturer.button(key="class_start").click().run()
    code, secret = lecturer.session_state["class_lead"]
    assert any(code in el.value for el in lecturer.html) and lecturer.get(
        "image"
    )  # the join code and its QR code
    student = open_class()
    student.text_input(key="class_code").input(code.lower())
    next(b for b in student.button if b.label == "Join the class").click().run()
    no_exception(student)
    assert f"Step 1 of {len(walk.STEPS)}" in student.subheader[0].value
    assert not [
        w for w in (*student.main.button, *student.main.selectbox) if w.key and w.key.startswith("class_")
    ]  # no controls

    lecturer.selectbox(key="class_step").set_value(NSP_STEP).run()
    lecturer.button(key="class_ask_choice").click().run()
    no_exception(lecturer)
    assert answers_so_far(lecturer) == "0 of 1"
    student.run()  # what the student's polling fragment does when the class's version changed
    assert student.subheader[0].value.startswith(f"Step {NSP_STEP} of {len(walk.STEPS)}")
    options = [b for b in student.button if b.key and b.key.startswith("class_option_")]
    assert [b.label for b in options] == list(walk.NSP_OPTIONS)
    options[1].click().run()
    assert f"Answer received: **{walk.NSP_OPTIONS[1]}**" in shown(student)
    question = live_class.current(code).question
    with pytest.raises(
        live_class.ClassError, match="already answered"
    ):  # a second answer (another tab's click)
        class_joining.answer(code, student.session_state["class_joined"][1], question.id, walk.NSP_OPTIONS[0])

    lecturer.run()
    assert answers_so_far(lecturer) == "1 of 1"
    lecturer.button(key="class_reveal").click().run()
    bars = json.loads(lecturer.get("plotly_chart")[0].proto.spec)["data"][0]
    drawn = {
        label.removesuffix(" ← model"): count
        for label, count in zip(bars["y"], array(bars["x"]), strict=True)
    }
    assert drawn == {walk.NSP_OPTIONS[0]: 0, walk.NSP_OPTIONS[1]: 1}
    student.run()
    assert question.explanation in shown(student)
    rows = class_results.results_rows(code, secret)
    assert {(row["class_answer"], row["students"]) for row in rows} == {
        (walk.NSP_OPTIONS[0], 0),
        (walk.NSP_OPTIONS[1], 1),
    }


def test_a_join_link_joins_and_a_wrong_code_or_lecturer_link_is_refused(tiny_folder):
    code, _ = live_class.start_class(live_class.Position(tiny_folder, "The cat sat.", "It slept."))
    student = open_class(**{"class": code})
    assert "The cat sat." in shown(student) and student.session_state["class_joined"][0] == code
    stranger = open_class(**{"class": "XXXXXX"})
    assert "no class with this code" in shown(stranger)
    impostor = open_class(**{"class": code, "lead": "not-the-secret"})
    assert "not valid" in shown(impostor) and "class_lead" not in impostor.session_state


def test_a_free_cloze_shows_the_class_words_beside_the_model_top_5_and_typed_words_as_text(tiny_folder):
    lecturer = open_class(tiny_folder)
    lecturer.button(key="class_start").click().run()
    code, _ = lecturer.session_state["class_lead"]
    lecturer.selectbox(key="class_step").set_value(walk.step_number("mlm")).run()
    lecturer.button(key="class_ask_cloze").click().run()
    no_exception(lecturer)
    words = {}
    for index, word in enumerate(["Mat", "mat", "[x](http://e.example)"]):
        student = open_class(**{"class": code})
        student.text_input(key=f"class_word_{live_class.current(code).question.id}").input(word)
        next(b for b in student.button if b.label == "Send").click().run()
        words[index] = shown(student)
    assert (
        "Answer received: **mat**" in words[0] and "**\\[x\\](http\\://e.example)**" in words[2]
    )  # escaped, not a link
    lecturer.button(key="class_reveal").click().run()
    figure = json.loads(lecturer.get("plotly_chart")[0].proto.spec)
    mine, model = figure["data"][:2]
    assert list(mine["y"]) == ["mat", "[x](http://e.example)"] and list(array(mine["x"])) == [2, 1]
    assert len(model["y"]) == 5 and model["y"][0] == live_class.current(code).question.answer


def test_a_class_moved_to_a_smaller_model_at_the_one_head_step_does_not_crash_the_phones(tiny_folder):
    """Issue 30's reproduction: layer 5 / head 11 of MiniLM kept when the lecturer switched to a 2-layer model."""
    code, secret = live_class.start_class(
        live_class.Position(
            tiny_folder,
            "The cat sat on the [MASK].",
            "It slept.",
            step=walk.step_number("one_head"),
            layer=5,
            head=11,
        )
    )
    student = open_class(**{"class": code})
    no_exception(student)
    assert student.subheader[0].value.startswith(f"Step {walk.step_number('one_head')} of {len(walk.STEPS)}")
    lecturer = open_class(tiny_folder, **{"class": code, "lead": secret})
    no_exception(lecturer)
    assert (lecturer.selectbox(key="class_layer").value, lecturer.selectbox(key="class_head").value) == (0, 0)
    lecturer.button(key="class_ask_choice").click().run()
    no_exception(lecturer)
    assert live_class.current(code).position.layer < 2


def test_the_qr_link_joins_and_the_projector_never_shows_the_lecturer_link(tiny_folder):
    lecturer = open_class(tiny_folder)
    lecturer.button(key="class_start").click().run()
    code, secret = lecturer.session_state["class_lead"]
    token = live_class.join_token(code, secret)
    assert f"join={token}" in str([image.proto for image in lecturer.get("image")])  # the QR code's caption
    assert secret not in str([el.value for el in lecturer.code])  # behind a click …
    lecturer.toggle(key="class_show_link").set_value(True).run()
    assert any(f"lead={secret}" in el.value for el in lecturer.code)
    presenter = open_class(tiny_folder, **{"class": code, "lead": secret, "present": "1"})
    assert not [t for t in presenter.toggle if t.key == "class_show_link"]  # … and never in presentation mode
    assert secret not in str([el.value for el in presenter.code])
    student = open_class(**{"class": code, "join": token})
    assert student.session_state["class_joined"][0] == code


def test_the_lecturer_closes_joining_enters_a_head_count_and_ends_the_class(tiny_folder):
    lecturer = open_class(tiny_folder)
    lecturer.button(key="class_start").click().run()
    code, secret = lecturer.session_state["class_lead"]
    lecturer.number_input(key="class_expected").set_value(30).run()
    assert next(m.value for m in lecturer.metric if m.label == "Students") == "0 of 30"
    lecturer.toggle(key="class_joining_True").set_value(False).run()
    no_exception(lecturer)
    late = open_class(**{"class": code})
    assert "closed joining" in shown(late)
    lecturer.toggle(key="class_joining_False").set_value(True).run()
    student = open_class(**{"class": code})
    assert student.session_state["class_joined"][0] == code
    lecturer.button(key="class_end").click().run()
    no_exception(lecturer)
    assert "This class has ended" in shown(lecturer) and live_class.current(code) is None
    student.run()
    assert "This class has ended" in shown(student)
    impostor = open_class(**{"class": code, "lead": secret})  # the lecturer's key stops working at once
    assert "not valid" in shown(impostor)


def test_the_lecturer_hides_a_typed_word_before_the_class_sees_it(tiny_folder):
    lecturer = open_class(tiny_folder)
    lecturer.button(key="class_start").click().run()
    code, _ = lecturer.session_state["class_lead"]
    lecturer.selectbox(key="class_step").set_value(walk.step_number("mlm")).run()
    lecturer.button(key="class_ask_cloze").click().run()
    question = live_class.current(code).question
    for word in ["mat", "rude"]:
        student = open_class(**{"class": code})
        student.text_input(key=f"class_word_{question.id}").input(word)
        next(b for b in student.button if b.label == "Send").click().run()
    lecturer.run()
    assert "rude" not in shown(lecturer)  # nothing typed is on the projector before a click
    lecturer.toggle(key=f"class_review_{question.id}").set_value(True).run()
    assert "rude · 1" in shown(lecturer)
    index = [word for word, _ in class_results.distribution(question, with_hidden=True).answers].index("rude")
    assert lecturer.button(key=f"class_hide_{question.id}_{index}").label == "Hide"
    lecturer.button(key=f"class_hide_{question.id}_{index}").click().run()  # one click
    assert class_results.hidden_answers(question.id) == {"rude"}
    lecturer.toggle(key=f"class_review_{question.id}").set_value(False).run()
    lecturer.button(key="class_reveal").click().run()
    mine = json.loads(lecturer.get("plotly_chart")[0].proto.spec)["data"][0]
    assert list(mine["y"]) == ["mat"]
    student.run()
    assert "rude" not in json.dumps([json.loads(c.proto.spec) for c in student.get("plotly_chart")])
