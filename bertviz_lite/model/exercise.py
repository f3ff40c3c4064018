"""`Bert`: the course exercise's signature, `Bert(input_ids, token_type_ids) -> MLM logits (B, T, V)`."""

from __future__ import annotations

from torch import Tensor

from bertviz_lite.model.modeling import BertForPreTraining


class Bert(BertForPreTraining):
    """BertForPreTraining whose forward returns the MLM logits (B, T, V); BertForPreTraining's returns both heads,
    as transformers' does. Same modules and weights, so any checkpoint of this package loads into it."""

    def forward(
        self,
        input_ids: Tensor,
        token_type_ids: Tensor | None = None,
        *,
        attention_mask: Tensor | None = None,
        position_ids: Tensor | None = None,
    ) -> Tensor:
        """MLM logits (B, T, V)."""
        return self.mlm_logits(
            input_ids, token_type_ids, attention_mask=attention_mask, position_ids=position_ids
        )
