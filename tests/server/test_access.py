"""Ownership on a shared server: visitors own what they create, shipped checkpoints are read-only, paths are fenced."""

from __future__ import annotations

import os
import pwd

import pytest

from bertviz_lite.loading import pretrained, run_folder
from bertviz_lite.server import access
from bertviz_lite.server.access import Visitor


@pytest.fixture
def root(monkeypatch, tmp_path):
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    monkeypatch.setattr(run_folder, "CHECKPOINTS_DIR", folder)
    monkeypatch.delenv(access.MODEL_ROOTS_SETTING, raising=False)
    monkeypatch.delenv(access.ADMIN_TOKEN_SETTING, raising=False)
    return folder


def test_visitor_ids_are_random_and_recognised():
    ids = {access.new_visitor_id() for _ in range(50)}
    assert len(ids) == 50 and all(access.is_visitor_id(i) for i in ids)
    assert not access.is_visitor_id("short") and not access.is_visitor_id("../../etc/passwd-xxxxxxxxxxxx")
    assert not access.is_visitor_id(None)


def test_only_the_owner_or_an_admin_may_change_a_folder(root, monkeypatch):
    a = Visitor(access.new_visitor_id())
    b = Visitor(access.new_visitor_id())
    run = root / "a-run"
    run.mkdir()
    access.record_owner(run, a)
    assert access.may_change(run, a) and not access.may_change(run, b)
    assert (
        access.is_owner(run, a) and a.id not in (run / run_folder.OWNER_FILE).read_text()
    )  # a digest, not the id
    with pytest.raises(PermissionError, match="another visitor's"):
        access.check_may_change(run, b, "delete")
    assert access.may_change(run, Visitor(b.id, admin=True))
    assert access.may_change(run, None)  # the server itself (CLI)


def test_terminal_runs_belong_to_the_server_and_shipped_checkpoints_to_nobody(root):
    visitor = Visitor(access.new_visitor_id(), admin=True)
    (root / "from-terminal").mkdir()
    assert not access.may_change(root / "from-terminal", Visitor(access.new_visitor_id()))
    shipped = root / pretrained.DEMO
    shipped.mkdir()
    assert not access.may_change(shipped, visitor) and not access.may_change(shipped, None)
    with pytest.raises(PermissionError, match="read-only"):
        access.check_may_change(shipped, visitor, "rename")


def test_admin_token_needs_a_server_setting(monkeypatch):
    assert not access.is_admin_token("anything")
    monkeypatch.setenv(access.ADMIN_TOKEN_SETTING, "s3cret-token")
    assert (
        access.is_admin_token("s3cret-token")
        and not access.is_admin_token("s3cret")
        and not access.is_admin_token(None)
    )


def test_folders_load_only_from_allowed_roots_and_say_the_same_either_way(root, tmp_path, monkeypatch):
    inside = root / "mine"
    inside.mkdir()
    assert access.check_model_folder(inside) == inside.resolve()
    messages = set()
    for outside in ("/root/.ssh", "/no/such/folder", str(tmp_path), str(root / ".." / "elsewhere")):
        with pytest.raises(ValueError) as err:
            access.check_model_folder(outside)
        messages.add(str(err.value))
    assert len(messages) == 1 and "/root" not in messages.pop()
    link = root / "link"
    link.symlink_to(tmp_path)  # a symlink inside the root that points out of it is outside
    with pytest.raises(ValueError):
        access.check_model_folder(link)
    monkeypatch.setenv(access.MODEL_ROOTS_SETTING, str(tmp_path))
    assert access.check_model_folder(tmp_path / "x") == (tmp_path / "x").resolve()


def test_model_sources_are_names_or_fenced_folders(root):
    (root / "mine").mkdir()
    access.check_model_source(pretrained.MINILM)
    access.check_model_source("mine")
    access.check_model_source(str(root / "mine"))
    for source in ("bertviz_lite", "../checkpoints", "/etc", "~", "mine/../../x"):
        with pytest.raises(ValueError, match="only from the server's checkpoints folder"):
            access.check_model_source(source)


def test_odd_paths_get_the_one_plain_refusal_before_any_file_system_call(root, monkeypatch):
    # Issue 30: these gave "This app has encountered an error" (the path was stat-ed before the fence).
    touched = []
    for name in ("stat", "lstat", "readlink", "listdir"):
        real = getattr(os, name)
        monkeypatch.setattr(
            os, name, lambda path, *a, _real=real, **k: touched.append(str(path)) or _real(path, *a, **k)
        )
    monkeypatch.setattr(pwd, "getpwnam", lambda name: touched.append(name) or pytest.fail("a user looked up"))
    odd = (
        "~nosuchuser123/model",
        "/proc/1/root/x",
        "a" * 5000,
        "/" + "a" * 5000,
        "x/" * 3000,
        "nul\0byte",
        str(root) + "/" + "b" * 5000,
    )
    for source in odd:
        with pytest.raises(ValueError) as refused:
            access.check_model_source(source)
        assert str(refused.value) == access.REFUSED_PATH
    assert not [
        path
        for path in touched
        if "nosuchuser" in path or "/proc/1" in path or "aaaa" in path or "bbbb" in path
    ]


def test_a_lecturer_claims_their_run_on_a_second_browser_with_the_owners_link(root):
    laptop, projector, student = (Visitor(access.new_visitor_id()) for _ in range(3))
    run = root / "lecture"
    run.mkdir()
    access.record_owner(run, laptop)
    assert access.claim_code(run, projector) is None  # only the owner sees the code
    code = access.claim_code(run, laptop)
    assert code and code == access.claim_code(run, laptop) and laptop.id not in code
    assert code not in (run / "owner.json").read_text()  # the folder keeps only its digest
    with pytest.raises(PermissionError, match="does not fit lecture"):
        access.claim(run, student, "0" * 32)
    assert not access.may_change(run, student)
    assert "yours on this browser too" in access.claim(run, projector, code)
    assert access.may_change(run, projector) and access.may_change(run, laptop)
    assert "already yours" in access.claim(run, projector, code)
    assert access.claim_code(run, projector) is None  # a claimer does not hand the run on


def test_a_terminal_run_has_no_claim_link(root):
    run = root / "cli"
    run.mkdir()
    with pytest.raises(PermissionError):
        access.claim(run, Visitor(access.new_visitor_id()), "")
