"""A learner's file that raises as it is imported."""

import torch

SIZES = {"hidden": 32}
HIDDEN = SIZES["hiden"]


class Bert(torch.nn.Module):
    pass
