"""A learner's Bert that turns off the worker's alarm and then never returns: only the wall clock stops it.

It blocks instead of spinning: the wall clock's SIGKILL stops a blocked call as it stops a spinning loop, and a
spinning one burned the ~4 s of CPU until then (time limit plus grace) on a machine the other tests share."""

import signal
import threading

from torch import nn


class Bert(nn.Module):
    def __init__(self, vocab_size, hidden_size):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden_size)

    def forward(self, input_ids, token_type_ids):
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        threading.Event().wait()  # set by nobody
