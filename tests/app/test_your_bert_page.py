"""The Your BERT page in AppTest: off unless the gate allows it (the file never read), a planted scale-dk file's finding
and stage ladder, and the fixed file matching after Check again."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from bertviz_lite.server.balancer import WORKER_SETTING
from bertviz_lite.server.code_gate import ALLOW_CODE_SETTING
from pages_app.common._pages import BUILD, pages_in
from tests.app.conftest import APP, charts, no_exception

PAGE = next(page.script for page in pages_in(BUILD) if page.title == "Your BERT")
HF_STYLE = Path(__file__).parents[1] / "check" / "learners" / "hf_style.py"
SQRT = "/ math.sqrt(self.head_size)"
DK = "/ self.head_size"


def open_page(**state) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for key, value in state.items():
        at.session_state[key] = value
    at.switch_page(PAGE)
    return at.run()


@pytest.mark.parametrize("worker", [False, True])
def test_off_without_the_setting_in_one_sentence_and_the_file_never_read(monkeypatch, tmp_path, worker):
    monkeypatch.delenv(ALLOW_CODE_SETTING, raising=False)
    if worker:  # a serve worker: refused even were it listening on loopback
        monkeypatch.setenv(WORKER_SETTING, "0")
    marker = tmp_path / "imported"
    learner = tmp_path / "bert.py"
    learner.write_text(f"open({str(marker)!r}, 'w').close()\n", encoding="utf-8")
    at = open_page(build_file=str(learner))
    no_exception(at)
    assert [info.value for info in at.info] and at.info[0].value.startswith("Running your code is off:")
    assert ("many visitors" in at.info[0].value) == worker
    assert not [b for b in at.button if b.key in ("build_check", "build_again", "build_skeleton")]
    assert not [t for t in at.text_input if t.key.startswith("build_")] and not marker.exists()


def test_a_planted_scale_dk_file_is_named_then_fixed_and_checked_again(monkeypatch, tmp_path):
    monkeypatch.setenv(ALLOW_CODE_SETTING, "1")
    monkeypatch.delenv(WORKER_SETTING, raising=False)
    learner = tmp_path / "bert.py"
    correct = HF_STYLE.read_text(encoding="utf-8")
    assert SQRT in correct
    learner.write_text(correct.replace(SQRT, DK), encoding="utf-8")
    at = open_page()
    no_exception(at)
    at.text_input(key="build_file").set_value(str(learner))
    at.button(key="build_check").click().run()
    no_exception(at)
    assert "differs from BERT" in at.error[0].value
    findings = [m.value.replace("\\", "") for m in at.markdown if m.value.startswith("- **")]
    assert len(findings) == 1 and findings[0].startswith("- **scale-dk** at `layer.0.attention.probs`")
    assert (
        "divides the scores by d_k instead of sqrt(d_k)" in findings[0]
        and "math.sqrt(head_size)" in findings[0]
    )
    ladder = charts(at)["stage_ladder"]
    stages = ladder["data"][0]["y"]
    assert stages[0].startswith("embeddings.") and "layer.0.attention.probs" in stages
    assert ladder["layout"]["xaxis"]["type"] == "log"
    first = next(a for a in ladder["layout"]["annotations"] if a["text"] == "first difference")
    assert first["y"] == "layer.0.attention.probs"
    assert at.dataframe  # the weight mapping
    sides = charts(at)["stage_sides"]  # the first failing stage, yours beside BERT's and the difference
    assert at.selectbox(key="build_stage").value == "layer.0.attention.probs"
    assert [trace["type"] for trace in sides["data"]] == ["heatmap"] * 3
    assert sides["layout"]["title"]["text"] == "layer.0.attention.probs, pair 1, head 1"
    at.selectbox(key="build_head").set_value(3).run()
    assert charts(at)["stage_sides"]["layout"]["title"]["text"] == "layer.0.attention.probs, pair 1, head 3"
    at.selectbox(key="build_stage").set_value("layer.0.output").run()
    no_exception(at)
    assert charts(at)["stage_sides"]["layout"]["title"]["text"] == "layer.0.output, pair 1"
    assert at.selectbox(key="build_head").disabled  # a hidden state has no heads
    learner.write_text(correct, encoding="utf-8")  # fixed
    at.button(key="build_again").click().run()
    no_exception(at)
    assert not at.error and "matches BERT at every stage" in at.success[0].value
    assert all(
        a["text"] != "first difference" for a in charts(at)["stage_ladder"]["layout"].get("annotations", [])
    )


def test_a_skeleton_is_written_into_the_named_folder_and_becomes_the_file(monkeypatch, tmp_path):
    monkeypatch.setenv(ALLOW_CODE_SETTING, "1")
    at = open_page()
    at.text_input(key="build_skeleton_dir").set_value(str(tmp_path / "my_bert"))
    at.button(key="build_skeleton").click().run()
    no_exception(at)
    written = tmp_path / "my_bert" / "bert.py"
    assert written.is_file() and "TODO" in written.read_text(encoding="utf-8")
    assert at.text_input(key="build_file").value == str(written)
    at.button(key="build_skeleton").click().run()  # never over an existing file
    assert "already exists" in at.error[0].value.replace("\\", "")
