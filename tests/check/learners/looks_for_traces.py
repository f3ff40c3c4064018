"""hf_style's BERT, from a file that refuses to load where leaves_traces.py's traces are still to be seen."""

import builtins
import sys

import torch
import torch.nn.functional as F
from hf_style import Bert  # noqa: F401 - the model the checker finds here

seen = {
    "F.softmax patched": F.softmax.__name__ == "_softmax_of_nothing",
    "torch.softmax patched": torch.softmax.__name__ == "_softmax_of_nothing",
    "Tensor.softmax patched": torch.Tensor.softmax.__name__ == "_softmax_of_nothing",
    "its module in sys.modules": "left_by_a_learner" in sys.modules,
    "its name on builtins": hasattr(builtins, "left_by_a_learner"),
    "its name on torch": hasattr(torch, "left_by_a_learner"),
}
if any(seen.values()):
    raise RuntimeError(f"an earlier job's traces: {', '.join(name for name, found in seen.items() if found)}")
