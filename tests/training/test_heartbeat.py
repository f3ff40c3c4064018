"""The trainer's heartbeat: a "running" status is renewed without the trainer writing it, a final one is not."""

import threading

from bertviz_lite.loading.run_folder import read_status
from bertviz_lite.training.heartbeat import Heartbeat
from devtools.waiting import wait_until


def beating() -> bool:
    return any(
        thread.name == "bertviz-lite-heartbeat" and thread.is_alive() for thread in threading.enumerate()
    )


def test_a_running_status_is_renewed_between_writes_and_a_final_one_ends_the_beats(tmp_path):
    heartbeat = Heartbeat(tmp_path, every_s=0.02)
    first = heartbeat.write(state="running", message="Training: step 3 of 9", step=3, total_steps=9)
    renewed = wait_until(
        lambda: (s := read_status(tmp_path))["updated_at"] > first["updated_at"] and s, 10, "a beat"
    )
    assert (renewed["state"], renewed["message"], renewed["step"]) == ("running", "Training: step 3 of 9", 3)
    assert renewed["host"] == first["host"] and renewed["pid"] == first["pid"]
    final = heartbeat.write(state="finished", message="Finished 9 steps", step=9, total_steps=9)
    wait_until(lambda: not beating(), 10, "the beats to end")
    assert read_status(tmp_path) == final  # nothing renewed, nothing overwrote the final status
