"""Issue 30: oversize input on the pages is refused with a plain sentence, never a traceback, whatever the widget's
max_chars (a script, or a session value, can bypass it)."""

from __future__ import annotations

from bertviz_lite import limits
from pages_app.common._sidebar import OTHER_FOLDER
from tests.app.conftest import no_exception, run_app, texts


def test_a_3_mb_sentence_a_is_refused_on_the_tokens_page(tiny_folder):
    at = run_app({"model_picker": OTHER_FOLDER, "model_path": tiny_folder}, sentence_a="bank " * 600_000)
    no_exception(at)
    assert "Sentence A is 3,000,000 characters long; this server takes at most 20,000." in texts(at)
    boxes = {box.key: box for box in at.sidebar.text_input}
    # The sentences' boxes take any paste (a box's max_chars drops a longer one without a word): the page refuses it.
    assert boxes["sentence_a"].proto.max_chars == boxes["sentence_b"].proto.max_chars == 0
    assert boxes["model_path"].proto.max_chars == limits.MAX_PATH_CHARS


def test_a_5000_character_model_path_gets_the_plain_refusal(tiny_folder):
    at = run_app({"model_picker": OTHER_FOLDER, "model_path": "/" + "m" * 5000})
    no_exception(at)
    assert "Models can be loaded by path only from the server's checkpoints folder" in texts(at)


def test_a_megabyte_of_your_sentences_is_refused_on_meaning_in_context(tiny_folder):
    at = run_app(
        {"model_picker": OTHER_FOLDER, "model_path": tiny_folder},
        page="meaning_in_context",
        meaning_extra="bank " * 200_000,
    )
    no_exception(at)
    assert (
        "The text of your sentences is 1,000,000 characters long; this server takes at most 20,000."
        in texts(at)
    )
