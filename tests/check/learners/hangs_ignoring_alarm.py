"""A learner's Bert that turns off the worker's alarm and then never returns: only the wall clock stops it."""

import signal

from torch import nn


class Bert(nn.Module):
    def __init__(self, vocab_size, hidden_size):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden_size)

    def forward(self, input_ids, token_type_ids):
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        while True:
            pass
