"""The Train and Compare pages in AppTest: the form's checks, a live 30-step run, stop, the run limit, a restart."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from bertviz_lite.loading import run_folder
from bertviz_lite.loading.pretrained import MINILM
from bertviz_lite.loading.run_folder import read_metrics, read_status, read_train_args, write_status
from bertviz_lite.runs import lifecycle, run_options
from bertviz_lite.server import access
from bertviz_lite.training.metrics import METRICS
from devtools.waiting import wait_until
from tests.app.training_helpers import (
    VISITOR_A,
    VISITOR_B,
    array,
    chart,
    checkpoints_folder_for_runs,
    fill_form,
    open_app,
    open_replay,
    rerun_when_ended,
    state_shown,
    traces,
)
from tests.attention_samples import mosaic_tile

TRAIN = "pages_app/train/8_Train.py"
COMPARE = "pages_app/train/9_Compare_runs.py"
CURVES = {
    "train_loss_chart": ("mlm_loss", "nsp_loss", "eval_mlm_loss", "eval_nsp_loss"),
    "train_accuracy_chart": ("mlm_acc", "nsp_acc", "eval_mlm_acc", "eval_nsp_acc"),
    "train_lr_chart": ("lr",),
    "train_speed_chart": ("tokens_per_s",),
}


@pytest.fixture
def root(monkeypatch, tmp_path):
    with checkpoints_folder_for_runs(monkeypatch, tmp_path / "checkpoints") as folder:
        yield folder


CORPUS = "\n\n".join(
    f"{name} found a {thing} in the {place}. The {thing} was old and {colour}. {name} took it home."
    for name in ("Ada", "Ben", "Cleo", "Dan")
    for thing in ("box", "map")
    for place in ("barn", "attic")
    for colour in ("red", "blue")
)  # 32 small documents, 96 sentences


def errors(at) -> list[str]:
    return [error.value for error in at.error]


def test_the_form_has_a_widget_for_every_cli_option(root):
    at = open_app(TRAIN)
    keys = {
        widget.key
        for kind in ("number_input", "selectbox", "radio", "checkbox")
        for widget in getattr(at, kind)
    }
    expected = {
        f"opt_{name}" for name in (*run_options.training_fields(), *run_options.MODEL_FIELDS, "threads")
    }
    # corpus: its own radio; preset: train_preset; model_file: the start-from choice Your BERT, where code may run
    assert expected - {"opt_corpus", "opt_preset", "opt_model_file"} <= keys
    assert {"train_preset", "train_corpus_source"} <= keys


def test_cpu_threads_above_a_visitors_bound_come_back_to_it_and_a_value_in_range_is_left_alone(root):
    """An admin's 8 threads, the admin logged out: the box comes back to a visitor's bound. A value in range is not
    written back on each rerun (that write sent the server's value over a number typed while the rerun ran)."""
    at = open_app(COMPARE)
    most = lifecycle.training_threads()  # a visitor's bound
    at.session_state["opt_threads"] = most + 7  # as the admin's session held it
    at.switch_page(TRAIN).run()
    assert at.number_input(key="opt_threads").value == most
    at.number_input(key="opt_threads").set_value(0).run()
    assert at.number_input(key="opt_threads").value == 0
    assert not at.number_input(key="opt_threads").proto.set_value


def test_the_form_checks_options_as_typed_and_disables_start(root):
    at = open_app(TRAIN)
    assert not at.exception and not errors(at) and not at.button(key="train_start").disabled
    tiny = run_options.preset_options("tiny")
    for name in ("hidden_size", "steps", "lr", "hidden_dropout_prob"):
        assert at.number_input(key=f"opt_{name}").value == tiny[name]
    at.number_input(key="opt_hidden_size").set_value(128).run()
    at.number_input(key="opt_num_attention_heads").set_value(3).run()
    assert errors(at) == ["Hidden size: hidden_size (128) must be divisible by num_attention_heads (3)"]
    assert at.button(key="train_start").disabled
    at.number_input(key="opt_num_attention_heads").set_value(4).run()
    at.number_input(key="opt_max_position_embeddings").set_value(128).run()
    at.number_input(key="opt_seq_len").set_value(500).run()
    assert errors(at) == ["Sequence length: seq_len (500) must be at most max_position_embeddings (128)"]
    at.number_input(key="opt_seq_len").set_value(64).run()
    assert not errors(at) and not at.button(key="train_start").disabled
    at.selectbox(key="train_preset").set_value("small").run()
    small = run_options.preset_options("small")
    assert at.number_input(key="opt_hidden_size").value == small["hidden_size"]
    assert at.number_input(key="opt_num_attention_heads").value == small["num_attention_heads"]
    millions = run_options.model_size(small) / 1e6
    assert f"About {millions:.2f} M parameters" in " ".join(caption.value for caption in at.caption)
    at.text_input(key="train_run_name").set_value("../up").run()
    assert errors(at) == ["The run name '../up' must not contain a path separator"]
    assert at.button(key="train_start").disabled


def test_the_form_refuses_batches_the_trainer_would_refuse(root):
    at = open_app(TRAIN)
    at.number_input(key="opt_batch_size").set_value(100_000).run()
    assert errors(at) == [
        "Batch size: batch_size (100000) × seq_len (64) × 512 (attention scores or feed-forward "
        "width) is 3,276,800,000 numbers in one layer's activations, more than 2,147,483,648: use a "
        "smaller batch size or sequence length"
    ]
    assert at.button(key="train_start").disabled
    at.number_input(key="opt_batch_size").set_value(20_000).run()
    assert errors(at) == [
        "Batch size: batch_size (20000) is more than the 17143 training pairs of the corpus: use a "
        "smaller batch or a bigger corpus"
    ]
    assert at.button(key="train_start").disabled
    at.radio(key="train_corpus_source").set_value("Paste text").run()
    at.text_area(key="train_corpus_text").set_value("One. Two! Three?\n\nFour. Five.").run()
    assert errors(at) == [
        "Batch size: batch_size (20000) is more than the 4 training pairs of the corpus: use a "
        "smaller batch or a bigger corpus"
    ]
    at.number_input(key="opt_batch_size").set_value(4).run()
    assert not errors(at) and not at.button(key="train_start").disabled
    at.text_area(key="train_corpus_text").set_value("One. Two! Three? Four. Five.").run()
    assert errors(at) == [
        "Corpus: The corpus has 1 document: next-sentence pairs need at least 2 (separate "
        "documents with a blank line)"
    ]
    assert at.button(key="train_start").disabled
    assert not [p.name for p in root.iterdir() if not p.name.startswith(".")]  # nothing was launched


def test_cuda_is_offered_only_with_a_reason_when_there_is_no_gpu(root):
    from bertviz_lite.runs.run_options import cuda_unavailable_reason

    reason = cuda_unavailable_reason()
    if reason is None:
        pytest.skip("this machine has a CUDA GPU")
    at = open_app(TRAIN)
    assert any(f"CUDA is not available: {reason}" in caption.value for caption in at.caption)
    at.radio(key="opt_device").set_value("cuda").run()
    assert errors(at) == [f"CUDA cannot be used: {reason}. Choose auto or CPU."]
    assert at.button(key="train_start").disabled


def test_user_corpora_are_checked(root):
    at = open_app(TRAIN)
    at.radio(key="train_corpus_source").set_value("Paste text").run()
    at.text_area(key="train_corpus_text").set_value("Only one sentence here.").run()
    assert errors(at) == ["Corpus: The text has fewer than 2 sentences: BERT pre-training needs at least 2."]
    at.number_input(key="opt_batch_size").set_value(4).run()  # 5 sentences give 4 training pairs
    at.text_area(key="train_corpus_text").set_value("One. Two! Three?\n\nFour. Five.").run()
    assert not errors(at) and "2 documents, 5 sentences." in [c.value for c in at.caption]
    at.radio(key="train_corpus_source").set_value("Upload a .txt file").run()
    assert errors(at) == ["Choose a .txt file for the corpus, or pick the built-in stories."]
    at.file_uploader(key="train_corpus_file").set_value(
        ("latin1.txt", "Café olé. Déjà vu.".encode("latin-1"), "text/plain")
    ).run()
    assert errors(at) == ["Corpus: latin1.txt is not UTF-8 text: save it as UTF-8 and try again."]


@pytest.mark.slow
def test_a_run_continues_minilm_on_the_english_corpus(root):
    # One step, evaluated on one batch: the claim is that the run starts from MiniLM and ends; each MiniLM step and
    # batch of held-out pairs cost about half a CPU-second, and its weights are written at step 0 and at the end.
    at = fill_form(
        open_app(TRAIN), steps=1, eval_pairs=8, log_every=1, eval_every=1, snapshot_every=1, lr=1e-4
    )
    at.radio(key="train_corpus_source").set_value("English (WordNet)").run()
    at.selectbox(key="opt_init").set_value(MINILM).run()
    assert not errors(at) and not any(
        w.key == "opt_hidden_size" for w in at.number_input
    )  # sizes come from MiniLM
    at.text_input(key="train_run_name").set_value("cont").run()
    at.button(key="train_start").click().run()
    assert state_shown(rerun_when_ended(at, root / "cont", 120)) == "finished"
    args = read_train_args(root / "cont")
    assert (args["args"]["init"], args["args"]["corpus"], args["args"]["config"]) == (MINILM, "english", {})
    assert args["config"]["hidden_size"] == 384 and args["num_parameters"] > 20e6


@pytest.mark.slow
def test_a_tiny_run_trains_live_and_its_checkpoint_is_selectable(root):
    # 6 steps, evaluated and snapshot every 3: every curve still gets two points or more and the replay three
    # snapshots; the process's start-up (torch, the optimizer) is most of its cost, 30 steps added 0.6 CPU-s.
    at = fill_form(open_app(TRAIN), steps=6, eval_every=3, snapshot_every=3)
    at.text_input(key="train_run_name").set_value("live").run()
    at.button(key="train_start").click().run()
    assert at.query_params["run"] == "live" and not errors(at)
    assert state_shown(rerun_when_ended(at, root / "live", 90)) == "finished"
    assert not at.exception
    records = read_metrics(root / "live")
    for key, metrics in CURVES.items():
        shown = traces(at, key)
        for metric in metrics:
            logged = [(r["step"], r[metric]) for r in records if metric in r]
            labelled = key in ("train_loss_chart", "train_accuracy_chart")  # lines named as people say them
            xs, ys = shown[METRICS[metric].label if labelled else metric.replace("_", " ")]
            assert len(xs) >= 2 and list(zip(xs, ys, strict=True)) == logged, (key, metric)
    assert [m.label for m in at.metric] == [
        "MLM loss",
        "NSP loss",
        "held-out MLM accuracy",
        "held-out NSP accuracy",
    ]
    assert at.success[0].value == read_status(root / "live")["message"]
    # the replay, opened, shows the last snapshot: every row of the head's map sums to 1
    at = open_replay(at)
    assert at.select_slider(key="replay_step").options == ["0", "3", "6"]
    z = array(chart(at, "replay_heatmap").data[0].z)
    assert z.shape[0] == z.shape[1] > 4 and np.allclose(z.sum(axis=1), 1, atol=1e-2)
    mosaic = chart(at, "replay_mosaic")
    tiny = run_options.preset_options("tiny")
    assert (mosaic.layout.meta["layers"], mosaic.layout.meta["heads"]) == (
        tiny["num_hidden_layers"],
        tiny["num_attention_heads"],
    )
    tile = mosaic_tile(array(mosaic.data[0].z), 1, 1, mosaic.layout.meta["tile"])
    assert np.allclose(tile.sum(axis=1), 1, atol=1e-2)
    # the new checkpoint is in the model picker and loads on the explore pages
    at.selectbox(key="model_picker").set_value("live").run()
    assert at.selectbox(key="model_picker").value == "live"  # the sidebar resets choices it does not offer
    at.switch_page("pages_app/explore/4_Predictions.py").run()
    assert not at.exception and not errors(at)
    card = f"{tiny['num_hidden_layers']} layers · {tiny['num_attention_heads']} heads · hidden {tiny['hidden_size']}"
    assert any(card in caption.value for caption in at.sidebar.caption)


@pytest.mark.slow
def test_a_run_on_pasted_text_survives_an_app_restart_refuses_a_second_start_and_stops(root):
    first = fill_form(open_app(TRAIN), steps=5000, snapshot_every=50)  # at most 250 snapshots (issue 22)
    first.text_input(key="train_run_name").set_value("long").run()
    first.radio(key="train_corpus_source").set_value("Paste text").run()
    first.text_area(key="train_corpus_text").set_value(CORPUS).run()
    first.button(key="train_start").click().run()
    command = json.loads((root / "long" / run_folder.LAUNCH_FILE).read_text())["command"]
    corpus = root / "long" / run_folder.CORPUS_FILE
    assert corpus.read_text() == CORPUS and command[command.index("--corpus") + 1] == str(corpus)
    wait_until(lambda: len(read_metrics(root / "long", "train")) >= 2, 60, "two metrics lines")
    del first  # the app goes away; the run is its own process and keeps writing
    at = open_app(TRAIN, query={"run": "long"})  # a restarted app, or another tab, with the run in its URL
    assert at.selectbox(key="train_run").value == "long" and state_shown(at) == "running"
    assert len(traces(at, "train_loss_chart")["MLM loss (train)"][0]) >= 2
    fill_form(at, steps=30).button(key="train_start").click().run()
    assert any("1 run already training (long); at most 1 at once" in error for error in errors(at))
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) == ["long"]
    other = open_app(TRAIN, query={"run": "long"}, visitor=VISITOR_B)  # another student watches the same run
    assert state_shown(other) == "running" and other.button(key="train_stop").disabled
    with pytest.raises(PermissionError, match="another visitor's"):
        lifecycle.stop_run(root / "long", visitor=access.Visitor(VISITOR_B))
    assert not (root / "long" / run_folder.STOP_FILE).exists()
    at.button(key="train_stop").click().run()
    assert state_shown(rerun_when_ended(at, root / "long", 60)) == "stopped"
    status = read_status(root / "long")
    assert status["state"] == "stopped" and 0 < status["checkpoint_step"] == status["step"] < 5000
    assert at.success[0].value.startswith(f"Stopped at step {status['step']} of 5000")
    assert (
        at.selectbox(key="model_picker").set_value("long").run().selectbox(key="model_picker").value == "long"
    )


def test_a_run_whose_process_died_shows_failed_with_its_log(root):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (root / "crashed").mkdir()
    write_status(
        root / "crashed",
        state="running",
        message="Training: step 4 of 30",
        pid=dead.pid,
        step=4,
        total_steps=30,
    )
    (root / "crashed" / run_folder.LOG_FILE).write_text("step 4/30\nKilled\n")
    access.record_owner(root / "crashed", access.Visitor(VISITOR_A))  # its owner sees the log's tail
    at = open_app(TRAIN, query={"run": "crashed"})
    assert state_shown(at) == "failed" and not at.exception
    assert errors(at) == [
        f"The run failed: The training process (pid {dead.pid}) ended without saying why. "
        "Last lines of its log:"
    ]
    assert at.code[0].value == "step 4/30\nKilled"
    assert not [button for button in at.button if button.key == "train_stop"]


def test_a_run_the_cli_refused_shows_the_reason_first_in_full(root):
    (root / "refused").mkdir()
    (root / "refused" / run_folder.LAUNCH_FILE).write_text(json.dumps({"pid": 999_999_999}))
    reason = (
        "--corpus ('/data/a-rather-long-folder-name/with/several/levels/of/sub-folders/corpus.txt'): "
        "Corpus file not found: check the path and that the app may read it"
    )
    (root / "refused" / run_folder.LOG_FILE).write_text(f"error: {reason}\n")
    access.record_owner(root / "refused", access.Visitor(VISITOR_A))
    at = open_app(TRAIN, query={"run": "refused"})
    assert state_shown(at) == "failed" and not at.exception
    assert errors(at) == [
        f"The run failed: {reason} (the training process, pid 999999999, exited) Last lines of its log:"
    ]
    assert (
        at.code[0].value == f"error: {reason}" and at.code[0].proto.wrap_lines
    )  # wrapped, not cut at the edge
    other = open_app(TRAIN, query={"run": "refused"}, visitor=VISITOR_B)  # issue 30: no log, no server paths
    assert errors(other) == [
        "The run failed: --corpus ('…'): Corpus file not found: check the path and that the app "
        "may read it (the training process, pid 999999999, exited)"
    ]
    assert not [code for code in other.code if "error:" in code.value]


def fake_run(root, name, lr, points):
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "train_args.json").write_text(
        json.dumps({"args": {"lr": lr, "steps": 10, "out": str(folder)}, "config": {"hidden_size": 128}})
    )
    (folder / "metrics.jsonl").write_text(
        "".join(
            json.dumps({"split": "train", "step": step, "mlm_loss": loss}) + "\n" for step, loss in points
        )
        + '{"split": "train", "step": 99, "mlm_lo'
    )  # a line still being written


def test_compare_overlays_runs_and_tabulates_their_hyperparameters(root):
    fake_run(root, "a", 0.001, [(2, 5.0), (4, 4.0)])
    fake_run(root, "b", 0.01, [(2, 6.0), (4, 3.0), (6, 2.5)])
    at = open_app(COMPARE)
    at.multiselect(key="compare_runs").set_value(["a", "b"]).run()
    assert not at.exception
    assert traces(at, "compare_chart") == {"a": ([2, 4], [5.0, 4.0]), "b": ([2, 4, 6], [6.0, 3.0, 2.5])}
    assert traces(at, "narrow__compare_chart") == traces(
        at, "compare_chart"
    )  # a phone's: the runs' legend below
    assert chart(at, "narrow__compare_chart").layout.legend.orientation == "h"
    table = at.dataframe[0].value
    assert list(table.index) == ["Learning rate"] and table.loc["Learning rate"].tolist() == ["0.001", "0.01"]
    at.toggle(key="compare_differ").set_value(False).run()
    assert set(at.dataframe[0].value.index) == {"Hidden size", "Learning rate", "Steps"}


def test_a_newcomer_gets_the_form_first_and_the_other_runs_curves_one_pick_below(root):
    fake_run(root, "a", 0.001, [(2, 5.0), (4, 4.0)])  # a shipped or another visitor's run: not VISITOR_A's
    write_status(root / "a", state="finished", message="Finished 10 steps.", step=10, total_steps=10)
    at = open_app(TRAIN)
    assert not at.exception
    kinds = [type(element).__name__ for element in at.main.children.values()]
    assert kinds.index("Expander") < kinds.index("Subheader")  # the form, then "Watch a run"
    forms = [expander for expander in at.expander if expander.label == "Start a new run"]
    assert len(forms) == 1 and forms[0].proto.expanded is True
    assert not at.button(key="train_start").disabled
    assert at.selectbox(key="train_run").value == "a"
    assert "MLM loss (train)" in {trace.name for trace in chart(at, "train_loss_chart").data}


def test_with_a_run_its_curves_come_first_the_form_folds_away_and_every_chart_has_its_numbers(root):
    fake_run(root, "a", 0.001, [(2, 5.0), (4, 4.0)])
    write_status(root / "a", state="finished", message="Finished 10 steps.", step=10, total_steps=10)
    access.record_owner(root / "a", access.Visitor(VISITOR_A))  # the visitor's own run
    at = open_app(TRAIN, {"run": "a"})
    assert not at.exception
    kinds = [type(element).__name__ for element in at.main.children.values()]
    assert kinds.index("Subheader") < kinds.index("Expander")  # "Watch a run" and its curves, then the form
    form = next(expander for expander in at.expander if expander.label == "Start a new run")
    assert form.proto.expanded is False
    assert at.selectbox(key="opt_init").value == "random weights"
    buttons = [button.proto.id for button in at.get("download_button")]
    assert all(any(id_.endswith(f"-{key}_csv") for id_ in buttons) for key in CURVES), buttons
    labels = {trace.name for trace in chart(at, "train_loss_chart").data}
    assert "MLM loss (train)" in labels


def test_compare_labels_its_axis_in_words_and_offers_the_numbers(root):
    fake_run(root, "a", 0.001, [(2, 5.0), (4, 4.0)])
    at = open_app(COMPARE)
    at.selectbox(key="compare_metric").set_value("eval_nsp_acc").run()
    assert chart(at, "compare_chart").layout.yaxis.title.text == "NSP accuracy (held-out)"
    assert any(button.proto.id.endswith("-compare_runs_csv") for button in at.get("download_button"))


def test_a_lecturer_claims_their_run_on_the_projectors_browser_with_the_owners_link(root):
    fake_run(root, "lecture", 0.001, [(2, 5.0), (4, 4.0)])
    # A stand-in training process: it lives until its stdin closes (the test kills it, or pytest ends).
    trainer = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()", lifecycle.TRAIN_MODULE], stdin=subprocess.PIPE
    )
    try:
        write_status(
            root / "lecture", state="running", message="Training", step=4, total_steps=10, pid=trainer.pid
        )
        access.record_owner(root / "lecture", access.Visitor(VISITOR_A))
        claim_on_another_browser()
    finally:
        trainer.kill()
        trainer.wait()


def claim_on_another_browser() -> None:
    """The owner's page shows a claim link; the projector's browser opens it and may then stop the run."""
    laptop = open_app(TRAIN, {"run": "lecture"})
    link = next(code.value for code in laptop.code if "claim=" in code.value)
    code = link.split("claim=")[1]
    projector = open_app(TRAIN, {"run": "lecture"}, visitor=VISITOR_B)
    assert projector.button(key="train_stop").disabled
    assert any(
        "Started on another browser" in info.value for info in projector.info
    )  # said, not only on hover
    assert not [c for c in projector.code if "claim=" in c.value]  # only the owner sees the link
    projector = open_app(TRAIN, {"run": "lecture", "claim": code}, visitor=VISITOR_B)
    assert "yours on this browser too" in projector.success[0].value and "claim" not in projector.query_params
    assert not projector.button(key="train_stop").disabled
    wrong = open_app(TRAIN, {"run": "lecture", "claim": "x" * 32}, visitor="c" * 24)
    assert "does not fit lecture" in wrong.error[0].value and wrong.button(key="train_stop").disabled
