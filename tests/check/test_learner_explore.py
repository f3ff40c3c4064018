"""A learner's model on the explore pages, package side: run in the checker's child process with a trained model's
weights placed on theirs, a correct model's trace equals ours, what their modules hide is a sentence, a changed file
is refused, and a trained run's own weights replay the attention its snapshots saved."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors import safe_open

from bertviz_lite.check.learner_explore import MISSING, learner_trace, open_learner, open_learner_run
from bertviz_lite.check.learner_model import LearnerSpec
from bertviz_lite.inspection import explore
from bertviz_lite.inspection.explore import NotExposed
from bertviz_lite.loading.checkpoints import load_snapshot
from bertviz_lite.loading.pretrained import DEMO, load
from bertviz_lite.loading.run_folder import RunFolder

LEARNERS = Path(__file__).parent / "learners"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo():
    return load(DEMO)


def test_a_correct_model_with_our_weights_traces_as_ours_and_says_what_it_does_not_show(demo, tmp_path):
    model, tokenizer = demo
    file = tmp_path / "bert.py"
    shutil.copy(LEARNERS / "hf_style.py", file)
    theirs = open_learner(LearnerSpec(file), DEMO, model, tokenizer)
    assert theirs.key == "Your BERT: Bert in bert.py with demo-tiny's weights"
    assert (theirs.has_mlm_head, theirs.has_nsp_head, theirs.config) == (True, True, model.config)
    encoding = explore.encode(tokenizer, "The cat sat on the mat.", "It slept in the sun.", 128)
    trace = learner_trace(theirs, encoding, (3,), model)
    ours = explore.trace_encoding(model, tokenizer, encoding, 128, (3,), batched=False)
    assert trace.tokens == ours.tokens and trace.tokens[3] == "[MASK]"
    for name in ("attentions", "hidden_states", "mlm_logits", "nsp_logits"):
        assert np.allclose(getattr(trace, name), getattr(ours, name), atol=1e-4), name
    for name in ("token", "position", "segment", "sum", "layer_norm"):
        assert np.allclose(trace.embeddings[name], ours.embeddings[name], atol=1e-5), name
    with pytest.raises(NotExposed, match="needs each head's queries and keys"):
        trace.queries  # noqa: B018 - the property raises
    file.write_text(file.read_text() + "\n# changed\n")
    with pytest.raises(ValueError, match="has changed since it was opened on the explore pages"):
        learner_trace(theirs, encoding, (), model)


def test_a_model_that_hides_its_attention_says_so_and_shows_the_rest(demo):
    model, tokenizer = demo
    theirs = open_learner(LearnerSpec(LEARNERS / "sdpa_style.py"), DEMO, model, tokenizer)
    encoding = explore.encode(tokenizer, "The cat sat.", "", 128)
    trace = learner_trace(theirs, encoding, (), model)
    with pytest.raises(NotExposed) as caught:
        trace.attentions  # noqa: B018 - the property raises
    assert str(caught.value) == MISSING["attentions"]
    assert trace.mlm_logits.shape == (len(encoding), tokenizer.vocab_size) and trace.nsp_logits is None


def test_a_model_on_pytorchs_encoder_layer_shows_each_heads_attention_as_ours(demo):
    """nn.TransformerEncoderLayer calls its attention with need_weights=False; asked for every head's weights, it
    gives the heatmaps ours gives with the same weights."""
    model, tokenizer = demo
    theirs = open_learner(LearnerSpec(LEARNERS / "minimal_style.py"), DEMO, model, tokenizer)
    encoding = explore.encode(tokenizer, "The cat sat on the mat.", "It slept in the sun.", 128)
    trace = learner_trace(theirs, encoding, (), model)
    ours = explore.trace_encoding(model, tokenizer, encoding, 128, (), batched=False)
    assert np.allclose(trace.attentions, ours.attentions, atol=1e-5)


@pytest.mark.slow
def test_a_trained_runs_own_weights_give_the_attention_its_last_snapshot_saved(tmp_path):
    run = tmp_path / "mine"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "bertviz_lite.train", "--model-file", str(LEARNERS / "hf_style.py")),
            *("--preset", "tiny", "--num-documents", "150", "--vocab-size", "300", "--seq-len", "32"),
            *("--batch-size", "8", "--eval-pairs", "32", "--threads", "1", "--quiet", "--steps", "10"),
            *("--hidden-size", "32", "--num-attention-heads", "4", "--intermediate-size", "64"),
            *("--max-position-embeddings", "32", "--out", str(run)),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    theirs = open_learner_run(run)
    assert theirs.own_weights and theirs.key == "Your BERT: Bert in hf_style.py with mine's weights"
    _, saved, tokens = load_snapshot(RunFolder(run).snapshot(10))
    with safe_open(str(RunFolder(run).snapshot(10)), framework="np") as handle:
        text_a = handle.metadata()["text_a"]  # the probe pair
        text_b = handle.metadata()["text_b"]
    encoding = explore.encode(theirs.tokenizer, text_a, text_b, 32)
    trace = learner_trace(theirs, encoding)
    assert trace.tokens == tokens
    assert np.allclose(trace.attentions, saved.astype(np.float32), atol=2e-3)  # float16 snapshots
