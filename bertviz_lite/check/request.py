"""What a learner types on the Your BERT page (a file's path, a class, a folder for the skeleton), checked as text."""

from __future__ import annotations

from pathlib import Path

from bertviz_lite.check.checker import CheckRequest
from bertviz_lite.check.skeleton import write_skeleton

MAX_PATH_CHARS = 400
MAX_CLASS_CHARS = 80


def _path(text: str, what: str) -> Path:
    text = text.strip()
    if not text:
        raise ValueError(f"Type the path of {what}.")
    if len(text) > MAX_PATH_CHARS or "\x00" in text:
        raise ValueError(f"A path here has at most {MAX_PATH_CHARS} characters.")
    return Path(text).expanduser()


def check_request(path_text: str, class_text: str = "") -> CheckRequest:
    """The checker's request for a typed path and class; a ValueError with one sentence for what cannot be one."""
    path = _path(path_text, "your .py file")
    if path.suffix != ".py":
        raise ValueError(
            "Give your model's .py file (for a folder's progress: python -m bertviz_lite.check FOLDER)."
        )
    if not path.is_file():
        raise ValueError(f"There is no file {path}.")
    class_name = class_text.strip() or None
    if class_name and (len(class_name) > MAX_CLASS_CHARS or not class_name.isidentifier()):
        raise ValueError("A class name is one Python identifier, such as Bert or MyBERT.")
    return CheckRequest(path.resolve(), "model", class_name)


def start_skeleton(folder_text: str) -> Path:
    """The exercise's outline written into a typed folder (check/skeleton.py); never over an existing file."""
    try:
        return write_skeleton(_path(folder_text, "a folder for the skeleton"))
    except OSError as error:  # FileExistsError's sentence, a folder that cannot be made
        raise ValueError(str(error)) from None
