"""Where a training process stands among torchrun's processes, and which device it trains on."""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as torch_dist
from torch import Tensor

from bertviz_lite.training.training_args import OptionError


@dataclass
class Distributed:
    """Where this process stands among the training processes (one, unless started by torchrun)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @classmethod
    def from_env(cls) -> Distributed:
        """Read torchrun's RANK / WORLD_SIZE / LOCAL_RANK; a single process when they are absent."""
        if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
            return cls()
        return cls(
            int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ.get("LOCAL_RANK", 0))
        )

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def init_process_group(self, device: torch.device) -> None:
        """gloo on CPU, nccl on CUDA; a no-op for a single process."""
        if self.enabled and not torch_dist.is_initialized():
            torch_dist.init_process_group("nccl" if device.type == "cuda" else "gloo")

    def destroy_process_group(self, wait_for_all: bool = True) -> None:
        """Leave the group; by default first wait until rank 0 has written its last files."""
        if self.enabled and torch_dist.is_initialized():
            if wait_for_all:
                torch_dist.barrier()
            torch_dist.destroy_process_group()

    def all_reduce_sum(self, tensor: Tensor) -> Tensor:
        if self.enabled:
            torch_dist.all_reduce(tensor)
        return tensor


def device_type(name: str) -> str:
    """Where `--device` NAME trains on this machine: "cuda" when it may and a GPU is there, else "cpu"."""
    return "cuda" if name != "cpu" and torch.cuda.is_available() else "cpu"


def resolve_device(name: str, distributed: Distributed | None = None) -> torch.device:
    """ "auto" -> CUDA when available, else CPU; each torchrun process takes GPU LOCAL_RANK."""
    if name == "cuda" and not torch.cuda.is_available():
        raise OptionError("device", "device ('cuda') is not available: this machine has no usable CUDA GPU")
    if device_type(name) == "cpu":
        return torch.device("cpu")
    return torch.device("cuda", (distributed or Distributed()).local_rank)
