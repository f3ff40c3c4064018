"""State that several app processes behind a load balancer must see alike, checked with two OS processes:
the admin token's wrong tries (on both shared stores), the folder locks of uploads and claims, and a run's owner,
limit and Stop."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from bertviz_lite.atomic import exclusive_lock
from bertviz_lite.runs import lifecycle
from bertviz_lite.server import access
from devtools.waiting import wait_until
from tests.server.app_processes import (
    forkserver,
    guess_admin_tokens,
    hold_folder_lock,
    in_another_app_process,
    launch_and_exit,
)

REPO = Path(__file__).resolve().parents[2]
TOKEN = "teacher-secret-2"
VISITOR = access.Visitor("visitor-a-0123456789abcdef")
OTHER = access.Visitor("visitor-b-0123456789abcdef")
FAST = {
    "preset": "tiny",
    "num_documents": 200,
    "vocab_size": 200,
    "seq_len": 32,
    "batch_size": 8,
    "steps": 5000,
    "threads": 1,
}


def test_wrong_admin_tokens_typed_in_two_processes_add_up(monkeypatch, store_setting):
    monkeypatch.setenv(access.ADMIN_TOKEN_SETTING, TOKEN)
    # Another app process: three wrong tries; then, once this process has typed two more, the right token.
    context = forkserver()
    talk, theirs = context.Pipe()
    other = context.Process(target=guess_admin_tokens, args=(dict(os.environ), VISITOR.id, TOKEN, theirs))
    other.start()
    theirs.close()
    try:
        three = talk.recv()
        assert three == [False, False, False], three
        assert access.check_admin_token(VISITOR.id, "guess") is False
        assert (
            access.check_admin_token(VISITOR.id, "guess") is False
        )  # the 5th wrong try, counted over both processes
        with pytest.raises(access.AdminLockout, match="Too many wrong admin tokens"):
            access.check_admin_token(VISITOR.id, TOKEN)
        talk.send("go")
        locked = talk.recv()
        other.join(timeout=60)
    finally:
        other.kill()
        other.join()
    assert other.exitcode == 0
    assert locked.startswith("Too many wrong admin tokens"), locked
    assert access.check_admin_token(OTHER.id, TOKEN) is True  # another visitor is not locked out


def test_a_folder_lock_held_by_one_process_keeps_the_other_out(tmp_path):
    context = forkserver()
    talk, theirs = context.Pipe()
    holder = context.Process(target=hold_folder_lock, args=(str(tmp_path), theirs))
    holder.start()
    theirs.close()
    try:
        assert talk.recv() == "held"
        fd = os.open(tmp_path, os.O_RDONLY)
        try:
            with pytest.raises(BlockingIOError):  # an upload's claim or an owner.json change must wait here
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    finally:
        talk.close()  # the holder leaves the lock and exits
        holder.join(timeout=60)
    assert holder.exitcode == 0
    assert not list(tmp_path.iterdir())  # the lock writes nothing into the folder
    with exclusive_lock(tmp_path):  # free again
        pass


@pytest.mark.slow
def test_a_run_started_in_one_process_is_its_visitors_in_another_one_run_each_and_only_they_stop_it(tmp_path):
    launch = {"root": tmp_path, "name": "mine", "max_runs": 3, "owner": VISITOR}
    assert (
        in_another_app_process(forkserver(), launch_and_exit, dict(os.environ), FAST, launch) == "mine"
    )  # the launching process has exited: this one is "the other worker"
    run_dir = tmp_path / "mine"
    try:
        assert lifecycle.run_state(run_dir).active
        with pytest.raises(lifecycle.RunLimitError, match="You already have a run training \\(mine\\)"):
            lifecycle.launch_run(FAST, root=tmp_path, max_runs=3, owner=VISITOR)
        with pytest.raises(PermissionError, match="mine is another visitor's"):
            lifecycle.stop_run(run_dir, OTHER)
        lifecycle.stop_run(run_dir, VISITOR)
        state = wait_until(
            lambda: (s := lifecycle.run_state(run_dir)) and not s.active and s, 60, "the run to stop"
        )
        assert state.state == "stopped", state.message
    finally:
        lifecycle.stop_run(run_dir)
        wait_until(lambda: not lifecycle.run_state(run_dir).active, 60, "the run to end")
