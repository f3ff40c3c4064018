"""A hyperparameter is declared once, as a TrainingArguments field with metadata; the CLI's --help, the Train
form and the run comparison are generated from that declaration (here: a temporary field, label_smoothing)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from bertviz_lite.runs import run_options
from bertviz_lite.training import training_args
from bertviz_lite.training.cli import build_parser
from bertviz_lite.training.training_args import GROUPS, OptionError, option, option_fields
from tests.app.training_helpers import open_app, use_checkpoints_folder

HELP = "spread this much of each MLM target over the whole vocabulary"


@dataclasses.dataclass
class WithLabelSmoothing(training_args.TrainingArguments):
    """The real options plus one declared in one place."""

    label_smoothing: float = option(
        0.0, label="Label smoothing", group="Optimisation", check="non_negative", most=1, step=0.05, help=HELP
    )


@pytest.fixture
def declared(monkeypatch):
    monkeypatch.setattr(training_args, "TrainingArguments", WithLabelSmoothing)


def _help() -> str:
    return " ".join(build_parser().format_help().split())


def test_the_field_reaches_help_form_fields_and_comparison_labels(declared):
    assert f"--label-smoothing LABEL_SMOOTHING {HELP} (default: 0.0)" in _help()
    assert run_options.form_fields("Optimisation")[-1] == "label_smoothing"
    assert run_options.labels()["label_smoothing"] == "Label smoothing"
    assert run_options.float_step("label_smoothing") == 0.05


def test_the_field_is_checked_and_reaches_the_command_line(declared):
    options = run_options.preset_options("tiny")
    assert options["label_smoothing"] == 0.0
    args = run_options.check_options({**options, "label_smoothing": 0.1})
    assert args.label_smoothing == 0.1 and run_options.command_options(args)["label_smoothing"] == 0.1
    with pytest.raises(OptionError, match=r"label_smoothing \(-1\.0\) must be a number, 0 or more") as err:
        run_options.check_options({**options, "label_smoothing": -1.0})
    assert err.value.option == "label_smoothing"
    with pytest.raises(OptionError, match=r"label_smoothing \(2\.0\) must be at most 1"):
        run_options.check_options({**options, "label_smoothing": 2.0})


def test_the_train_form_draws_the_field_in_its_section(declared, monkeypatch, tmp_path):
    use_checkpoints_folder(monkeypatch, tmp_path / "checkpoints")
    at = open_app("pages_app/train/8_Train.py")
    box = at.number_input(key="opt_label_smoothing")
    assert box.label == "Label smoothing" and box.value == 0.0 and box.step == 0.05 and HELP in box.help
    box.set_value(-0.5).run()
    assert "Label smoothing: label_smoothing (-0.5) must be a number, 0 or more" in [
        e.value for e in at.error
    ]
    assert at.button(key="train_start").disabled


def test_the_comparison_names_the_field_by_its_label(declared, monkeypatch, tmp_path):
    root = use_checkpoints_folder(monkeypatch, tmp_path / "checkpoints")
    for name, smoothing in (("a", 0.0), ("b", 0.1)):
        (root / name).mkdir()
        (root / name / "train_args.json").write_text(
            json.dumps({"args": {"label_smoothing": smoothing}, "config": {}})
        )
        (root / name / "metrics.jsonl").write_text(
            json.dumps({"split": "train", "step": 1, "mlm_loss": 5.0}) + "\n"
        )
    at = open_app("pages_app/train/9_Compare_runs.py")
    at.multiselect(key="compare_runs").set_value(["a", "b"]).run()
    assert list(at.dataframe[0].value.index) == ["Label smoothing"]


def test_without_the_temporary_field_nothing_shows_it():
    assert "label-smoothing" not in _help() and "label_smoothing" not in run_options.labels()


def test_every_option_declares_help_label_and_a_form_section():
    for spec in option_fields():
        assert spec.metadata["help"] and spec.metadata["label"], spec.name
        assert spec.metadata["group"] in (*GROUPS, None), spec.name
    drawn = {name for group in GROUPS for name in run_options.form_fields(group)}
    assert drawn == set(run_options.training_fields()) | set(run_options.MODEL_FIELDS)
