"""A learner's file that leaves traces in its process: softmax patched in torch (so its own attention differs), a
module of its own in sys.modules, names on builtins and on torch. The next job must see none of them."""

import builtins
import sys
import types

import torch
import torch.nn.functional as F
from hf_style import Bert  # noqa: F401 - the model the checker finds here


def _softmax_of_nothing(x, *args, **kwargs):
    return x


F.softmax = _softmax_of_nothing
torch.softmax = _softmax_of_nothing
torch.Tensor.softmax = _softmax_of_nothing
sys.modules["left_by_a_learner"] = types.ModuleType("left_by_a_learner")
builtins.left_by_a_learner = True
torch.left_by_a_learner = True
