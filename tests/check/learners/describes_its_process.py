"""A learner's Bert whose forward raises with the process it runs in described: its limits, session, descriptors,
working directory, environment, signal handlers and torch settings, and whether the checker's zygote forked it."""

import hashlib
import json
import os
import resource
import signal
import sys
from pathlib import Path

import torch
from torch import nn


def _handler(signum: int) -> str:
    handler = signal.getsignal(signum)
    return {signal.SIG_DFL: "default", signal.SIG_IGN: "ignored"}.get(
        handler, getattr(handler, "__name__", "?")
    )


def describe() -> dict:
    parent = Path(f"/proc/{os.getppid()}/cmdline").read_bytes()
    return {
        "zygote": b"bertviz_lite.check.zygote" in parent,
        "as": resource.getrlimit(resource.RLIMIT_AS),
        "core": resource.getrlimit(resource.RLIMIT_CORE),
        "leader": os.getsid(0) == os.getpgid(0) == os.getpid(),
        "fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd")),
        "stdio": [Path(os.readlink(f"/proc/self/fd/{fd}")).name for fd in (0, 1, 2)],
        "cwd": Path("request.json").is_file() and sys.path[1] == os.getcwd(),
        "env": hashlib.sha256(json.dumps(sorted(os.environ.items())).encode()).hexdigest()[:8],
        "signals": [_handler(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE)],
        "alarm": signal.getitimer(signal.ITIMER_REAL)[0] > 0,
        "threads": torch.get_num_threads(),
        "fastpath": torch.backends.mha.get_fastpath_enabled(),
        "seed": torch.initial_seed(),
    }


class Bert(nn.Module):
    def __init__(self, vocab_size, hidden_size):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden_size)

    def forward(self, input_ids, token_type_ids):
        raise RuntimeError(json.dumps(describe(), separators=(",", ":")))
