"""A learner's own BERT trained by `python -m bertviz_lite.train --model-file FILE[:CLASS]`: falling loss, their weights
under their names with the mapping beside them, snapshots through the checker's hooks, MLM only without an NSP head,
and a changed file refused when the run is loaded back."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from safetensors import safe_open

from bertviz_lite.check.learner_run import file_sha256, read_record
from bertviz_lite.inspection.views.replay import read_summary
from bertviz_lite.loading.checkpoints import load_snapshot
from bertviz_lite.loading.run_folder import RunFolder, read_metrics, read_status, read_train_args
from bertviz_lite.training.training_args import OptionError, TrainingArguments

REPO = Path(__file__).resolve().parents[2]
LEARNERS = REPO / "tests" / "check" / "learners"
# The tiny preset at smaller sizes still: 100 steps in a few seconds on one core.
TINY = [
    *("--preset", "tiny", "--num-documents", "150", "--vocab-size", "300", "--seq-len", "32"),
    *("--batch-size", "8", "--eval-pairs", "32", "--threads", "1", "--quiet"),
    *("--hidden-size", "32", "--num-attention-heads", "4", "--intermediate-size", "64"),
    *("--max-position-embeddings", "32"),
]


@pytest.fixture
def train(preloaded_python):
    """`python -m bertviz_lite.train *args` in its own process (forked from conftest's preloaded_python), as run."""

    def run(*args: str) -> subprocess.CompletedProcess:
        env = {"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
        return preloaded_python.run_command(
            ["-m", "bertviz_lite.train", *args], cwd=REPO, env=env, timeout=180
        )

    return run


def train_losses(run: Path) -> list[float]:
    return [r["loss"] for r in read_metrics(run, "train")]


@pytest.mark.slow
def test_a_learners_model_trains_100_steps_with_falling_loss_and_their_names(tmp_path, train):
    run = tmp_path / "tutorial"
    done = train(
        "--model-file",
        f"{LEARNERS / 'tutorial_style.py'}:BERTLM",
        *TINY,
        *("--steps", "100", "--log-every", "10", "--eval-every", "50", "--snapshot-every", "50"),
        *("--out", str(run)),
    )
    assert done.returncode == 0, done.stderr
    losses = train_losses(run)
    assert len(losses) == 10 and np.mean(losses[-3:]) < np.mean(losses[:3]) - 0.5, losses
    assert all("nsp_acc" in r for r in read_metrics(run, "train"))  # BERTLM returns its NSP logits: MLM + NSP
    record = json.loads(RunFolder(run).learner.read_text())
    assert record["class"] == "BERTLM" and record["sha256"] == file_sha256(LEARNERS / "tutorial_style.py")
    assert record["nsp_head"] is True and record["attention"] is True
    with safe_open(str(RunFolder(run).learner_weights), framework="pt") as handle:
        names = set(handle.keys())
        step = handle.metadata()["step"]
    assert step == "100" and "bert.embedding.token.weight" in names  # their names, not Hugging Face's
    assert set(record["mapping"]) <= names and "bert.embeddings.word_embeddings.weight" not in names
    assert not RunFolder(run).weights.exists() and not RunFolder(run).config.exists()
    assert read_train_args(run)["learner"]["file"] == str(LEARNERS / "tutorial_style.py")
    assert RunFolder(run).snapshot_steps() == [0, 50, 100]
    _, attentions, tokens = load_snapshot(RunFolder(run).snapshot(100))
    assert attentions.shape == (2, 4, len(tokens), len(tokens))
    assert np.allclose(attentions.astype(np.float32).sum(-1), 1, atol=1e-2)
    summary = read_summary(RunFolder(run).snapshot(100))  # what the Train page's replay reads
    assert summary is not None and summary.predictions is not None


@pytest.mark.slow
def test_a_model_without_an_nsp_head_trains_mlm_only_and_one_hiding_attention_saves_no_snapshot(
    tmp_path, train
):
    run = tmp_path / "solution"
    done = train(
        "--model-file",
        str(LEARNERS / "solution" / "bert.py"),
        *TINY,
        *("--steps", "20", "--log-every", "5", "--eval-every", "10", "--out", str(run)),
    )
    assert done.returncode == 0, done.stderr
    records = read_metrics(run)
    assert records and not any(
        key.endswith("nsp_loss") or key.endswith("nsp_acc") for r in records for key in r
    )
    assert "MLM only: the model has no NSP head" in read_status(run)["message"]
    record = read_record(run)
    assert (record.nsp_head, record.attention) == (False, False)
    assert RunFolder(run).snapshot_steps() == []  # its softmax is a tensor method: no module shows it


@pytest.mark.slow
def test_loading_the_run_back_refuses_a_changed_file_with_a_sentence(tmp_path, train):
    source = tmp_path / "mine" / "my_bert.py"
    source.parent.mkdir()
    shutil.copy(LEARNERS / "hf_style.py", source)
    run = tmp_path / "mine-run"
    assert train("--model-file", str(source), *TINY, "--steps", "10", "--out", str(run)).returncode == 0
    assert read_record(run).changed_file() is None
    source.write_text(source.read_text() + "\n# tried a change\n")
    done = train("--resume", "--steps", "20", "--out", str(run))
    assert done.returncode == 2
    assert "has changed since this run trained Bert in my_bert.py (its content hash differs)" in done.stderr
    assert read_status(run)["step"] == 10
    assert "has changed since this run trained" in read_record(run).changed_file()
    source.write_text(source.read_text().removesuffix("\n# tried a change\n"))
    done = train("--resume", "--steps", "20", "--out", str(run))
    assert done.returncode == 0, done.stderr
    assert read_status(run)["checkpoint_step"] == 20


def test_a_file_that_raises_on_import_is_one_line_and_no_run_folder(tmp_path, train):
    run = tmp_path / "broken"
    done = train("--model-file", str(LEARNERS / "raises_on_import.py"), *TINY, "--out", str(run))
    assert done.returncode == 2 and not run.exists()
    assert done.stderr.strip().splitlines() == [
        f"error: --model-file ({str(LEARNERS / 'raises_on_import.py')!r}): the model in raises_on_import.py "
        "raised KeyError: 'hiden' while it was loaded, built and tried (last frame: raises_on_import.py, line 6, "
        'in <module>: HIDDEN = SIZES["hiden"])'
    ]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"model_file": "nowhere/bert.py"}, r"model_file \('nowhere/bert.py'\): there is no such file"),
        ({"model_file": "notes.txt"}, "give your model's .py file"),
        ({"model_file": str(LEARNERS / "hf_style.py"), "init": "demo-tiny"}, "cannot be used with init"),
    ],
)
def test_the_model_file_option_is_checked_before_anything_runs(tmp_path, options, message):
    with pytest.raises(OptionError, match=message) as caught:
        TrainingArguments(out=str(tmp_path / "run"), **options)
    assert caught.value.option == "model_file"


def test_the_model_file_is_recorded_by_its_full_path(tmp_path, monkeypatch):
    monkeypatch.chdir(LEARNERS)
    args = TrainingArguments(out=str(tmp_path / "run"), model_file="tutorial_style.py:BERTLM")
    assert args.model_file == f"{LEARNERS / 'tutorial_style.py'}:BERTLM"
