"""The same CLI under torchrun: 2 CPU processes (gloo), DistributedDataParallel, rank 0 alone writes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bertviz_lite.loading.checkpoints import checkpoint_step
from bertviz_lite.loading.pretrained import load_folder
from bertviz_lite.loading.run_folder import read_metrics, read_status

REPO = Path(__file__).resolve().parents[2]
TINY = [
    "--preset",
    "tiny",
    "--num-documents",
    "150",
    "--vocab-size",
    "300",
    "--seq-len",
    "32",
    "--batch-size",
    "8",
    "--eval-pairs",
    "32",
    "--hidden-size",
    "32",
    "--num-attention-heads",
    "4",
    "--intermediate-size",
    "64",
    "--max-position-embeddings",
    "32",
    "--quiet",
]


@pytest.mark.slow
def test_two_cpu_processes_train_with_ddp_and_only_rank_0_writes(tmp_path, preloaded_python):
    run = tmp_path / "run"
    # torchrun and its two workers are forks of the preloaded interpreter (each a process of its own that runs its
    # command line, with torch imported once instead of three times: 6 of the test's 10 CPU-s).
    launcher = [
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        "-m",
        "bertviz_lite.train",
    ]
    args = [
        *TINY,
        "--steps",
        "6",
        "--log-every",
        "2",
        "--eval-every",
        "3",
        "--snapshot-every",
        "3",
        "--out",
        str(run),
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    done = preloaded_python.run_command(
        [*launcher, *args], cwd=tmp_path, env=env, timeout=120, fork_children=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr.count("Run folder:") == 1 and done.stderr.count("finished: Finished 6 steps") == 1
    assert [p.name for p in tmp_path.iterdir()] == ["run"]
    status = read_status(run)
    assert (status["state"], status["step"], status["world_size"]) == ("finished", 6, 2)
    assert [r["step"] for r in read_metrics(run, "train")] == [2, 3, 4, 6]  # one line per step: one writer
    assert [r["step"] for r in read_metrics(run, "eval")] == [3, 6]
    assert json.loads((run / "train_args.json").read_text())["world_size"] == 2
    assert sorted(p.name for p in (run / "snapshots").iterdir()) == [
        "step_000000.safetensors",
        "step_000003.safetensors",
        "step_000006.safetensors",
    ]
    assert checkpoint_step(run) == 6
    load_folder(run)
