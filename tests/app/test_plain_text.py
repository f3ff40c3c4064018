"""Issue 22: Markdown from a link renders as text on the pages (no link, no remote image)."""

from __future__ import annotations

import re

from streamlit.testing.v1 import AppTest

from bertviz_lite.loading.run_folder import write_status
from tests.app.conftest import APP, PAGES
from tests.app.tiny_checkpoint import save_tiny
from tests.app.training_helpers import open_app, use_checkpoints_folder

LINK = "[Log in again](https://evil.example/login) ![x](http://127.0.0.1:8799/x.png)"
UNESCAPED = re.compile(r"(?<!\\)([\[\]<>]|:(?=\S))")


def test_a_run_link_with_markdown_is_quoted_as_text(monkeypatch, tmp_path):
    root = use_checkpoints_folder(monkeypatch, tmp_path / "checkpoints")
    save_tiny(root / "mine")
    write_status(root / "mine", state="finished", message="done", step=2, total_steps=2, checkpoint_step=2)
    at = open_app("pages_app/train/8_Train.py", query={"run": LINK})
    assert not at.exception
    warning = next(w.value for w in at.warning if "no run named" in w.value)
    quoted = warning.split("“", 1)[1].split("”", 1)[0]
    assert not UNESCAPED.search(quoted) and re.sub(r"\\(.)", r"\1", quoted) == LINK


def test_a_layer_link_with_markdown_is_quoted_as_text(tiny_folder):
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["layer"] = "[x](//evil.example)"
    at.switch_page(PAGES["attention"]).run()
    assert not at.exception
    notes = [w.value for w in at.warning if "layer" in w.value]
    assert notes and all("[x](" not in note and "\\[x\\](" in note for note in notes)


def _model_that_predicts(folder, token: str):
    """A tiny checkpoint whose vocabulary holds `token` (an uploaded vocab.txt could) and whose MLM head always
    guesses it first: the walkthrough's masked-word step must show it as text, not as a link or an image."""
    import torch
    from safetensors.torch import load_file, save_file

    save_tiny(folder)
    vocab = (folder / "vocab.txt").read_text(encoding="utf-8").split("\n")
    index = len(vocab) - 2  # the last token (the file ends with a newline)
    vocab[index] = token
    (folder / "vocab.txt").write_text("\n".join(vocab), encoding="utf-8")
    weights = load_file(folder / "model.safetensors")
    for name in ("cls.predictions.bias", "cls.predictions.decoder.bias"):
        weights[name] = torch.zeros_like(weights[name])
        weights[name][index] = 100.0
    save_file(weights, folder / "model.safetensors")
    return folder


def test_an_uploaded_vocab_token_is_text_at_the_walkthroughs_masked_word_step(tmp_path):
    from bertviz_lite.inspection import walkthrough as walk
    from pages_app.common._sidebar import OTHER_FOLDER
    from tests.app.conftest import charts, run_app

    token = "<b>[Log](https://evil.example)</b>"
    folder = _model_that_predicts(tmp_path / "evil", token)
    at = run_app(
        {"model_picker": OTHER_FOLDER, "model_path": str(folder)},
        "walkthrough",
        walk_step=walk.step_number("mlm"),
    )
    assert not at.exception
    options = [option for radio in at.radio for option in radio.options]
    assert "\\<b\\>\\[Log\\](https\\://evil.example)\\</b\\>" in options  # escaped Markdown: shown as text
    reveal = next(b for b in at.button if (b.key or "").startswith("walk_reveal_button"))
    at = reveal.click().run()
    shown = [
        el.value for kind in ("markdown", "caption", "success", "warning", "info") for el in getattr(at, kind)
    ]
    assert shown and not any("[Log](https://" in text for text in shown)  # nowhere as a live Markdown link
    labels = [
        str(label) for fig in charts(at).values() for trace in fig["data"] for label in trace.get("y") or []
    ]
    assert any(
        "Log" in label and "evil.example" in label for label in labels
    )  # the guess is in the chart ...
    assert (
        "&lt;b&gt;[Log](https://evil.example)&lt;/b&gt;" in labels
    )  # ... as text: plotly draws <b>, <a> from labels
