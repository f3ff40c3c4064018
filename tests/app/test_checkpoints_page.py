"""The Checkpoints page in AppTest: the table, use on the explore pages, rename, delete, uploads good and bad."""

from __future__ import annotations

import pickle
import re

import pytest
import streamlit as st

from bertviz_lite.loading.run_folder import MetricsWriter, write_status
from bertviz_lite.runs import store
from bertviz_lite.runs import upload as zip_upload
from bertviz_lite.server import access, cookie_handoff, database
from tests.app.tiny_checkpoint import save_tiny, zip_of
from tests.app.training_helpers import VISITOR_A, VISITOR_B, open_app, use_checkpoints_folder

PAGE = "pages_app/train/10_Checkpoints.py"


@pytest.fixture
def root(monkeypatch, tmp_path):
    """A checkpoints folder with a finished run `mine` and a stand-in for the shipped demo-tiny."""
    root = use_checkpoints_folder(monkeypatch, tmp_path / "checkpoints")
    save_tiny(root / "mine")
    writer = MetricsWriter(root / "mine")
    writer.write(
        {"split": "train", "step": 20, "mlm_loss": 3.5, "nsp_loss": 0.6, "mlm_acc": 0.3, "nsp_acc": 0.7}
    )
    writer.write({"split": "eval", "step": 20, "eval_mlm_acc": 0.25, "eval_nsp_acc": 0.65})
    writer.close()
    write_status(root / "mine", state="finished", message="done", step=20, total_steps=20, checkpoint_step=20)
    access.record_owner(root / "mine", access.Visitor(VISITOR_A))  # visitor A trained it
    save_tiny(root / "demo-tiny")
    return root


def names(root) -> list[str]:
    return sorted(p.name for p in root.iterdir() if not p.name.startswith("."))


def select(at, name: str):
    return at.selectbox(key="ckpt_selected").set_value(name).run()


def test_the_table_lists_every_run_with_its_numbers(root):
    at = open_app(PAGE)
    assert not at.exception
    table = at.dataframe[0].value.set_index("name")
    assert sorted(table.index) == ["demo-tiny", "mine"]
    row = table.loc["mine"]
    assert (row["state"], row["steps"], row["mlm_loss"], row["eval_nsp_acc"]) == ("finished", 20, 3.5, 0.65)
    assert row["size_mb"] == round(store.folder_size(root / "mine") / 1e6, 2) > 0
    assert table.loc["demo-tiny", "state"] == "ready"
    assert list(at.dataframe[0].proto.column_order) == [
        "name",
        "state",
        "steps",
        "eval_mlm_acc",
        "eval_nsp_acc",
    ]
    at.toggle(key="ckpt_all_columns").set_value(True).run()
    assert list(at.dataframe[0].proto.column_order) == []  # every column


def test_use_on_explore_pages_sets_the_model_picker(root):
    at = select(open_app(PAGE), "mine")
    at.button(key="ckpt_use").click().run()
    assert at.session_state["model_picker"] == "mine" and at.selectbox(key="model_picker").value == "mine"
    at.switch_page("pages_app/explore/1_Tokens.py").run()
    assert not at.exception and not at.error
    assert any("2 layers · 4 heads · hidden 32" in caption.value for caption in at.sidebar.caption)


def test_rename_and_delete_with_confirmation(root):
    at = select(open_app(PAGE), "mine")
    at.text_input(key="ckpt_new_name").set_value("../../etc").run()
    at.button(key="ckpt_rename").click().run()
    assert at.error[0].value == "The run name '../../etc' must not contain a path separator"
    at.text_input(key="ckpt_new_name").set_value("demo-tiny").run()
    at.button(key="ckpt_rename").click().run()
    assert "already exists" in at.error[0].value and names(root) == ["demo-tiny", "mine"]
    at.text_input(key="ckpt_new_name").set_value("ours").run()
    at.button(key="ckpt_rename").click().run()
    assert names(root) == ["demo-tiny", "ours"] and at.selectbox(key="ckpt_selected").value == "ours"
    assert at.button(key="ckpt_delete").disabled  # nothing is deleted without the confirmation
    at.checkbox(key="ckpt_confirm_delete").check().run()
    at.button(key="ckpt_delete").click().run()
    assert names(root) == ["demo-tiny"] and at.success[0].value == "Deleted **ours**."


def test_demo_tiny_offers_no_rename_or_delete(root):
    at = select(open_app(PAGE), "demo-tiny")
    assert not [b for b in at.button if b.key in ("ckpt_rename", "ckpt_delete")]
    assert "demo-tiny ships with bertviz-lite: it cannot be renamed or deleted." in [i.value for i in at.info]


def upload(at, file_name: str, data: bytes, name: str | None = None):
    at.file_uploader[0].set_value((file_name, data, "application/zip")).run()
    if name is not None:
        at.text_input(key="ckpt_upload_name").set_value(name).run()
    return at.button(key="ckpt_add").click().run()


def test_a_good_zip_is_added_and_hostile_ones_are_refused(root):
    good = store.checkpoint_zip(root / "mine")
    files = {
        name: (root / "mine" / name).read_bytes()
        for name in ("config.json", "vocab.txt", "model.safetensors")
    }
    at = upload(open_app(PAGE), "mine.zip", good)  # the suggested name is taken
    assert (
        at.error[0].value == "Upload refused: A checkpoint named 'mine' already exists: choose another name"
    )
    at.text_input(key="ckpt_upload_name").set_value("copy").run()
    at.button(key="ckpt_add").click().run()
    assert names(root) == ["copy", "demo-tiny", "mine"] and "copy" in at.dataframe[0].value["name"].tolist()

    pickled = zip_of({**files, "pytorch_model.bin": pickle.dumps({"w": 1})})
    at = upload(at, "evil.zip", pickled, "evil")
    assert at.error[0].value.startswith("Upload refused: Refused 'pytorch_model.bin': pickle-based files")
    disguised = zip_of({**files, "model.safetensors": pickle.dumps({"w": 1}, protocol=4)})
    at = upload(at, "evil2.zip", disguised, "evil")
    assert "it is a Python pickle" in at.error[0].value
    climbing = zip_of({**files, "../../outside.json": b"{}"})
    at = upload(at, "climb.zip", climbing, "climb")
    assert "paths with '..' are not allowed" in at.error[0].value
    at = upload(at, "broken.zip", good[: len(good) // 2], "broken")
    assert at.error[0].value.startswith("Upload refused: This is not a readable zip file")
    assert names(root) == ["copy", "demo-tiny", "mine"]
    assert not (root.parent / "outside.json").exists()


def test_another_visitor_cannot_rename_or_delete_but_the_admin_can(root, monkeypatch):
    at = select(open_app(PAGE, visitor=VISITOR_B), "mine")
    assert not at.exception
    assert not [b for b in at.button if b.key in ("ckpt_rename", "ckpt_delete")]
    assert any("on another browser" in info.value for info in at.info)
    with pytest.raises(PermissionError, match="another visitor's"):
        store.delete_checkpoint("mine", visitor=access.Visitor(VISITOR_B))
    assert names(root) == ["demo-tiny", "mine"]
    monkeypatch.setenv(access.ADMIN_TOKEN_SETTING, "teacher-secret-1")
    at = select(open_app(PAGE, visitor=VISITOR_B), "mine")
    at.text_input(key="admin_token").set_value("wrong").run()
    assert "not the admin token" in at.error[0].value
    at.text_input(key="admin_token").set_value("teacher-secret-1").run()
    at.text_input(key="ckpt_new_name").set_value("renamed-by-admin").run()
    at.button(key="ckpt_rename").click().run()
    assert names(root) == ["demo-tiny", "renamed-by-admin"]


def test_an_upload_belongs_to_its_uploader(root):
    data = store.checkpoint_zip(root / "mine")
    zip_upload.import_zip(data, "uploaded", owner=access.Visitor(VISITOR_B))
    assert access.may_change(root / "uploaded", access.Visitor(VISITOR_B))
    assert not access.may_change(root / "uploaded", access.Visitor(VISITOR_A))


def test_the_admin_stays_the_admin_after_a_reload(root, monkeypatch, tmp_path):
    """Issue 30: the admin state lived in the session only, so a reload (during a lockout, say) lost it."""
    monkeypatch.setenv(database.DATA_DIR_SETTING, str(tmp_path / "data"))
    monkeypatch.setenv(access.ADMIN_TOKEN_SETTING, "teacher-secret-1")
    at = select(open_app(PAGE, visitor=VISITOR_B), "mine")
    at.text_input(key="admin_token").set_value("teacher-secret-1").run()
    script = next(el.value for el in at.html if cookie_handoff.ROUTE_PATH in el.value)
    assert "teacher-secret-1" not in script  # the page holds a one-use nonce, not the cookie
    cookie = cookie_handoff.take(re.search(r"'\?n=' \+ '([^']+)'", script).group(1))
    assert cookie.name == access.ADMIN_COOKIE and access.is_admin_cookie(cookie.value)
    assert cookie.max_age == access.ADMIN_COOKIE_HOURS * 3600
    # A reload: a new session of the same browser, which now sends the cookie the route set.
    monkeypatch.setattr(
        type(st.context), "cookies", property(lambda self: {access.ADMIN_COOKIE: cookie.value})
    )
    again = select(open_app(PAGE, visitor=VISITOR_B), "mine")
    assert again.button(key="ckpt_rename") and "admin_token" not in [t.key for t in again.text_input]
    monkeypatch.setattr(type(st.context), "cookies", property(lambda self: {access.ADMIN_COOKIE: "1.forged"}))
    forged = select(open_app(PAGE, visitor=VISITOR_B), "mine")
    assert not [b for b in forged.button if b.key == "ckpt_rename"]
