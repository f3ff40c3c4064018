"""Issue 30, deliverables 1 and 7: every training budget read from the model a run continues from, an upper bound on
every number of the Train form and the CLI, visitors' runs within the server's training threads, and a failed run's
log kept from visitors who do not own it."""

from __future__ import annotations

import os

import pytest

from bertviz_lite import limits
from bertviz_lite.loading.run_folder import RunFolder
from bertviz_lite.runs import lifecycle, run_options
from bertviz_lite.server import access
from bertviz_lite.training import cli, training_args
from bertviz_lite.training.training_args import OptionError, is_number

VISITOR = access.Visitor("visitor-a-0123456789abcdef")
ADMIN = access.Visitor("lecturer-0123456789abcdef", admin=True)
ENGLISH = "minilm-english"


def from_model(init: str, **changes) -> dict:
    """The tiny preset's form continued from `init`: the model sizes are not sent (the form hides them)."""
    options = {
        k: v for k, v in run_options.preset_options("tiny").items() if k not in run_options.MODEL_FIELDS
    }
    return {**options, "init": init, **changes}


def test_continuing_from_minilm_english_is_sized_from_its_own_config(tmp_path):
    # The reproduction: tiny preset, batch 1024 × 128, 976 steps was accepted with an estimate of 4.0 GB.
    options = from_model(ENGLISH, batch_size=1024, seq_len=128, steps=976)
    with pytest.raises(
        OptionError, match=r"Batch size: This run would need about [0-9]+ MB .* batch 1024 × 128"
    ):
        run_options.check_form(options)
    with pytest.raises(ValueError, match="would need about"):
        lifecycle.launch_run(options, root=tmp_path, owner=VISITOR)
    assert list(tmp_path.iterdir()) == []  # refused before any folder or process


def test_the_estimates_use_the_continued_model_s_vocabulary_and_sizes():
    args = run_options.check_form(from_model(ENGLISH, batch_size=64, seq_len=128, steps=100))
    own = training_args.pretrained_config(ENGLISH)
    assert args.model_config() == own and own.vocab_size != args.vocab_size
    assert run_options.disk_estimate(args) == 12 * limits.parameter_count(own)
    # measured (issue 30): one real step of batch 64 × 128 grew the process by 3.1 GB; the preset's sizes said 263 MB
    assert limits.training_memory_bytes(args.model_config(), 64, 128) > 3 * 2**30


def test_the_parameter_and_tensor_checks_read_the_continued_model(monkeypatch):
    monkeypatch.setattr(
        training_args, "MAX_PARAMETERS", limits.parameter_count(training_args.pretrained_config(ENGLISH)) - 1
    )
    with pytest.raises(
        OptionError, match=r"Start from: init \('minilm-english'\) is a model of about .* parameters"
    ):
        run_options.check_form(from_model(ENGLISH))
    monkeypatch.undo()
    monkeypatch.setattr(
        training_args, "MAX_TENSOR_ELEMENTS", 64 * 128 * 1536 - 1
    )  # its feed-forward is 1536 wide
    with pytest.raises(OptionError, match=r"batch_size \(64\) × seq_len \(128\) × 1536"):
        run_options.check_form(from_model(ENGLISH, batch_size=64, seq_len=128))


def number_fields() -> list[str]:
    """Every number option the Train form holds (run options and model sizes)."""
    values = run_options.preset_options("tiny")
    return [name for name, value in values.items() if is_number(value) and not isinstance(value, bool)]


@pytest.mark.parametrize("name", number_fields())
def test_a_hostile_number_in_any_field_is_refused_with_a_sentence(name):
    tiny = run_options.preset_options("tiny")
    for hostile in (10**12, 10**5000) if isinstance(tiny[name], int) else (1e300,):
        with pytest.raises(OptionError) as refused:
            run_options.check_form({**tiny, name: hostile})
        message = str(refused.value)
        assert message.startswith(run_options.labels()[refused.value.option] + ": ") and name in message
        assert len(message) < 300 and "Traceback" not in message


def test_ten_to_the_ninth_stories_are_refused_and_the_bound_is_declared_beside_the_option():
    with pytest.raises(
        OptionError, match=r"Built-in stories: num_documents \(1000000000\) must be at most 100,000"
    ):
        run_options.check_form({**run_options.preset_options("tiny"), "num_documents": 10**9})
    declared = {spec.name: spec.metadata["most"] for spec in training_args.option_fields()}
    assert declared["num_documents"] == training_args.MAX_DOCUMENTS
    assert all(declared[name] is not None for name in number_fields() if name in declared)


def test_every_number_option_declares_a_check_and_its_upper_bound_together():
    with pytest.raises(ValueError, match="both its check and its upper bound"):
        training_args.option(1, help="h", label="l", group="Data", check="count")


def test_the_cli_bounds_threads(tmp_path):
    with pytest.raises(OptionError, match=r"threads \(100000\) must be a whole number from 1 to 256"):
        cli.prepare(["--threads", "100000", "--out", str(tmp_path / "r")], cli.Distributed())


@pytest.fixture
def fake_processes(monkeypatch):
    """launch_run without a training process: a launch.json and a run that counts as starting."""

    def start(run_dir, command):
        lifecycle.atomic_write_json(RunFolder(run_dir).launch, {"pid": os.getpid(), "command": command})

    monkeypatch.setattr(lifecycle, "_start_process", start)
    monkeypatch.setattr(lifecycle, "training_process_alive", lambda pid: pid == os.getpid())


def test_a_visitor_s_run_gets_at_most_the_server_s_training_threads(tmp_path, fake_processes):
    options = {"preset": "tiny", "steps": 20, "threads": 256}
    with pytest.raises(ValueError, match=rf"CPU threads \(256\): .* at most {lifecycle.training_threads()}"):
        lifecycle.launch_run(options, root=tmp_path, name="greedy", owner=VISITOR)
    assert list(tmp_path.iterdir()) == []
    run = lifecycle.launch_run({**options, "threads": 0}, root=tmp_path, name="fair", owner=VISITOR)
    command = lifecycle.read_json_object(RunFolder(run).launch)["command"]
    assert command[command.index("--threads") + 1] == str(lifecycle.training_threads())
    lifecycle.stop_run(run)
    lifecycle.launch_run(options, root=tmp_path, name="lecture", owner=ADMIN)  # the admin's run is not capped


def test_a_failed_run_shows_visitors_its_reason_without_paths_and_its_owner_the_log(tmp_path):
    message = (
        f"init ('{tmp_path}/secret/model'): No model folder at /srv/bertviz/checkpoints/x (pid 7)\n"
        f'Traceback (most recent call last):\n  File "/usr/lib/python3/x.py", line 1'
    )
    run = lifecycle.RunState("r", tmp_path, "failed", message=message)
    reason, details = run.report_for(may_see_log=False)
    assert reason == "init ('…'): No model folder at … (pid 7)" and details == ""
    assert run.report_for(may_see_log=True) == (run.reason, run.details)
