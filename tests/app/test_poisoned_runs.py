"""Issue 22: one poisoned run folder (huge numbers, wrong types, huge files) never breaks a shared page,
and its owner (or the admin) can still delete it from the Checkpoints page."""

from __future__ import annotations

import json

import pytest

from bertviz_lite.loading.run_folder import MetricsWriter, write_status
from bertviz_lite.server import access
from tests.app.tiny_checkpoint import save_tiny
from tests.app.training_helpers import VISITOR_A, VISITOR_B, open_app, use_checkpoints_folder

CHECKPOINTS = "pages_app/train/10_Checkpoints.py"
COMPARE = "pages_app/train/9_Compare_runs.py"
HUGE = "9" * 400  # a 400-digit number: json parses it as an int no float can hold


def _poisoned(root, name: str, metrics: str | None = None, train_args: str | None = None):
    save_tiny(root / name)
    if metrics is not None:
        (root / name / "metrics.jsonl").write_text(metrics)
    if train_args is not None:
        (root / name / "train_args.json").write_text(train_args)
    access.record_owner(root / name, access.Visitor(VISITOR_B))  # uploaded by visitor B


@pytest.fixture
def root(monkeypatch, tmp_path):
    root = use_checkpoints_folder(monkeypatch, tmp_path / "checkpoints")
    save_tiny(root / "good")
    writer = MetricsWriter(root / "good")
    writer.write({"split": "train", "step": 10, "mlm_loss": 3.5, "nsp_loss": 0.6})
    writer.write({"split": "train", "step": 20, "mlm_loss": 3.0, "nsp_loss": 0.5})
    writer.close()
    json.dump(
        {"args": {"lr": 0.001}, "config": {"hidden_size": 32}}, (root / "good" / "train_args.json").open("w")
    )
    write_status(root / "good", state="finished", message="done", step=20, total_steps=20, checkpoint_step=20)
    good_line = '{"split": "train", "step": 5, "mlm_loss": 2.0}\n'
    _poisoned(root, "huge-loss", good_line + f'{{"split": "train", "step": 10, "mlm_loss": {HUGE}}}\n')
    _poisoned(root, "huge-step", good_line + f'{{"split": "train", "step": {HUGE}, "mlm_loss": 1.0}}\n')
    _poisoned(root, "wrong-types", good_line, train_args='{"config": [1, 2], "args": "x"}')
    many = "".join(
        f'{{"split": "train", "step": {i}, "mlm_loss": {1 + 1 / (i + 1)}}}\n' for i in range(40_000)
    )
    _poisoned(root, "long-curve", many)
    (root / "huge-status").mkdir()
    (root / "huge-status" / "status.json").write_text(
        f'{{"state": "finished", "step": {HUGE}, "total_steps": "x", "pid": [1], "eta_s": {HUGE}}}'
    )
    access.record_owner(root / "huge-status", access.Visitor(VISITOR_B))
    return root


def test_checkpoints_renders_with_poisoned_folders_and_the_owner_deletes_one(root):
    at = open_app(CHECKPOINTS, visitor=VISITOR_B)
    assert not at.exception
    table = at.dataframe[0].value.set_index("name")
    assert {"good", "huge-loss", "huge-step", "wrong-types", "long-curve", "huge-status"} <= set(table.index)
    assert table.loc["huge-loss", "mlm_loss"] == 2.0  # the 400-digit value was skipped, the line before kept
    at.selectbox(key="ckpt_selected").set_value("huge-loss").run()
    at.checkbox(key="ckpt_confirm_delete").check().run()
    at.button(key="ckpt_delete").click().run()
    assert not at.exception and not (root / "huge-loss").exists()
    at.selectbox(key="ckpt_selected").set_value("huge-status").run()
    at.checkbox(key="ckpt_confirm_delete").check().run()
    at.button(key="ckpt_delete").click().run()
    assert not at.exception and not (root / "huge-status").exists()


def test_the_admin_deletes_a_poisoned_upload_of_another_visitor(root, monkeypatch):
    monkeypatch.setenv(access.ADMIN_TOKEN_SETTING, "teacher-secret-1")
    at = open_app(CHECKPOINTS, visitor=VISITOR_A)
    at.selectbox(key="ckpt_selected").set_value("wrong-types").run()
    at.text_input(key="admin_token").set_value("teacher-secret-1").run()
    at.checkbox(key="ckpt_confirm_delete").check().run()
    at.button(key="ckpt_delete").click().run()
    assert not at.exception and not (root / "wrong-types").exists()


def test_compare_runs_renders_every_poisoned_run(root):
    at = open_app(COMPARE)
    assert not at.exception
    names = ["good", "huge-loss", "huge-step", "wrong-types", "long-curve"]
    at.multiselect(key="compare_runs").set_value(names).run()
    assert not at.exception
    from tests.app.training_helpers import traces

    curves = traces(at, "compare_chart")
    assert curves["huge-loss"] == ([5], [2.0]) and curves["huge-step"] == ([5], [2.0])
    assert len(curves["long-curve"][0]) <= 2000  # drawn downsampled, first and last step kept
    assert curves["long-curve"][0][0] == 0 and curves["long-curve"][0][-1] == 39_999
    notes = " ".join(caption.value for caption in at.caption)
    assert "huge-loss" in notes and "skipped" in notes
    table = at.dataframe[0].value
    assert "wrong-types" in table.columns


def test_the_train_page_shows_a_run_with_a_poisoned_status(root):
    (root / "huge-loss" / "status.json").write_text(
        f'{{"state": "finished", "step": {HUGE}, "message": "done"}}'
    )
    for name in ["huge-status", "huge-loss"]:
        at = open_app("pages_app/train/8_Train.py", query={"run": name})
        assert not at.exception and at.selectbox(key="train_run").value == name
