"""A learner's Bert whose forward raises (a shape mistake): a finding, not a crash of the checker."""

from torch import nn


class Bert(nn.Module):
    def __init__(self, vocab_size, hidden_size):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden_size)
        self.out = nn.Linear(hidden_size + 1, vocab_size)

    def forward(self, input_ids, token_type_ids):
        return self.out(self.embed(input_ids))
