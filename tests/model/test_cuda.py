"""On a CUDA GPU (skipped without one): parity with transformers, the fast and traced paths, a bf16 training run."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from bertviz_lite import load
from bertviz_lite.loading.run_folder import read_metrics, read_status
from tests.model.test_model import hf_model, ours_from, padded_pair_batch
from tests.training.test_train import TINY, environment

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def test_trace_and_fast_path_match_transformers_on_the_gpu():
    hf = hf_model()
    model = ours_from(hf).cuda()
    hf = hf.cuda()
    ids, tt, am = (t.cuda() for t in padded_pair_batch())
    with torch.no_grad():
        ref = hf(input_ids=ids, token_type_ids=tt, attention_mask=am, output_attentions=True)
        fast = model.mlm_logits(ids, tt, attention_mask=am)
    trace = model.trace(ids, tt, am)
    valid = am.bool()
    # TF32 may be on for matrix products: allow for it
    assert (ref.prediction_logits - trace.mlm_logits)[valid].abs().max() < 1e-3
    assert (ref.prediction_logits - fast)[valid].abs().max() < 1e-3
    for theirs, ours in zip(ref.attentions, trace.attentions, strict=True):
        assert (theirs - ours).transpose(1, 2)[valid].abs().max() < 1e-3


def test_a_bf16_training_run_on_the_gpu_loads_on_the_cpu(tmp_path):
    args = [
        *TINY,
        "--steps",
        "40",
        "--log-every",
        "10",
        "--eval-every",
        "20",
        "--snapshot-every",
        "20",
        "--device",
        "cuda",
        "--out",
        str(tmp_path / "run"),
    ]
    done = subprocess.run(
        [sys.executable, "-m", "bertviz_lite.train", *args],
        env=environment(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    status = read_status(tmp_path / "run")
    assert status["state"] == "finished" and status["checkpoint_step"] == 40
    losses = [r["loss"] for r in read_metrics(tmp_path / "run", "train")]
    assert losses[-1] < losses[0]
    model, tokenizer = load(tmp_path / "run")
    assert next(model.parameters()).device.type == "cpu"
    inputs = tokenizer.encode_pair("a b", "c").to_tensors()
    logits = model.mlm_logits(inputs["input_ids"], inputs["token_type_ids"])
    assert torch.isfinite(logits).all()
