"""A learner's Bert whose forward never returns."""

from torch import nn


class Bert(nn.Module):
    def __init__(self, vocab_size, hidden_size):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden_size)

    def forward(self, input_ids, token_type_ids):
        steps = 0
        while True:
            steps += 1
