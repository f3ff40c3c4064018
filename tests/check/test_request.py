"""What a learner types on the Your BERT page, checked as text before anything runs."""

from __future__ import annotations

import pytest

from bertviz_lite.check.request import MAX_PATH_CHARS, check_request, start_skeleton


def test_a_typed_file_and_class_become_a_request(tmp_path):
    learner = tmp_path / "bert.py"
    learner.write_text("", encoding="utf-8")
    request = check_request(f"  {learner} ", " MyBERT ")
    assert request.file == learner.resolve() and request.class_name == "MyBERT" and request.part == "model"
    assert check_request(str(learner)).class_name is None


@pytest.mark.parametrize(
    ("path", "klass", "sentence"),
    [
        ("", "", "Type the path of your .py file."),
        ("x" * (MAX_PATH_CHARS + 1) + ".py", "", f"at most {MAX_PATH_CHARS} characters"),
        ("notes.txt", "", "Give your model's .py file"),
        ("missing.py", "", "There is no file missing.py."),
        ("bert.py", "Bert; import os", "one Python identifier"),
    ],
)
def test_what_cannot_be_checked_is_one_sentence(tmp_path, monkeypatch, path, klass, sentence):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bert.py").write_text("", encoding="utf-8")
    with pytest.raises(ValueError, match=None) as error:
        check_request(path, klass)
    assert sentence in str(error.value)


def test_a_skeleton_never_overwrites(tmp_path):
    path = start_skeleton(str(tmp_path / "my_bert"))
    assert path.name == "bert.py" and "TODO" in path.read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="already exists"):
        start_skeleton(str(tmp_path / "my_bert"))
    with pytest.raises(ValueError, match="a folder for the skeleton"):
        start_skeleton("  ")
