"""`Bert`: the course exercise's signature, `Bert(input_ids, token_type_ids) -> MLM logits (B, T, V)`."""

from __future__ import annotations

from torch import Tensor

from bertviz_lite.model.modeling import BertForPreTraining


class Bert(BertForPreTraining):
    """BertForPreTraining whose forward returns the MLM logits (B, T, V), whatever BertForPreTraining's returns.

    It computes from `self.bert` and `self.cls.predictions` itself, so the contract holds when
    BertForPreTraining.forward returns both heads, as transformers' does.
    """

    def forward(
        self, input_ids: Tensor, token_type_ids: Tensor | None = None, *, attention_mask: Tensor | None = None,
        position_ids: Tensor | None = None,
    ) -> Tensor:
        """MLM logits (B, T, V)."""
        hidden = self.bert(input_ids, token_type_ids, attention_mask, position_ids).last_hidden_state
        return self.cls.predictions(hidden)
