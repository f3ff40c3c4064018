"""Peak resident memory (RSS) of a training run: the CLI in a child process, read from getrusage.

    python bench/peak_memory.py                      # small preset, 30 steps, built-in corpus, CPU
    python bench/peak_memory.py --preset base --steps 5

Last line: peak_rss_mb=<MiB>.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench._smoke import add_smoke_flag  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="small")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--train-args", default="", help="more options for the run, e.g. '--batch-size 4'")
    add_smoke_flag(
        parser,
        argv,
        preset="tiny",
        steps=2,
        threads=1,
        train_args="--batch-size 4 --num-documents 200 --eval-pairs 16",
    )
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        run = Path(folder) / "run"
        command = [
            sys.executable,
            "-m",
            "bertviz_lite.train",
            "--preset",
            options.preset,
            "--steps",
            str(options.steps),
            "--threads",
            str(options.threads),
            "--device",
            "cpu",
            "--quiet",
            "--out",
            str(run),
            *options.train_args.split(),
        ]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        subprocess.run(command, check=True, env=env, cwd=folder)
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
        train_args = json.loads((run / "train_args.json").read_text())
    config = train_args["config"]
    print(
        f"preset={options.preset} steps={options.steps} threads={options.threads} "
        f"batch={train_args['args']['batch_size']}x{train_args['args']['seq_len']} "
        f"vocab={config['vocab_size']} parameters={train_args['num_parameters']}"
    )
    print(f"peak_rss_mb={peak_kib / 1024:.0f}")


if __name__ == "__main__":
    main()
