"""What to change for each finding, in one sentence beside the finding's own (which names the mistake)."""

from __future__ import annotations

from bertviz_lite.check.compare import Finding

CHANGE = {
    "learned-vs-sinusoidal": "To match BERT, learn the table: nn.Embedding(max_position_embeddings, hidden_size) "
    "looked up at positions 0 … T-1.",
    "no-position-embedding": "Add position_embeddings(torch.arange(T)) to the token and segment embeddings.",
    "segment-offset": "Use nn.Embedding(2, hidden_size) looked up at token_type_ids as they are given (0 and 1).",
    "no-segment-embedding": "Add token_type_embeddings(token_type_ids) to the sum.",
    "scaled-embeddings": "To match BERT, add the token embeddings as they are, without * math.sqrt(d_model).",
    "no-embedding-layernorm": "Apply nn.LayerNorm(hidden_size, eps=1e-12) to the sum of the three embeddings.",
    "scale-dk": "Divide the scores q @ kᵀ by math.sqrt(head_size) before the softmax.",
    "softmax-axis": "Use softmax(dim=-1), over the keys.",
    "mask-ignored": "Before the softmax, fill the scores at padding keys (attention_mask == 0) with a large negative "
    "number.",
    "pre-ln": "Compute LayerNorm(x + sublayer(x)) in each block, with no LayerNorm before the sub-layer.",
    "shared-layernorm": "Give the attention block and the feed-forward block each their own nn.LayerNorm.",
    "layernorm-formula": "Use nn.LayerNorm(hidden_size, eps=1e-12).",
    "layernorm-eps": "To match BERT, give your LayerNorms eps=1e-12.",
    "gelu-tanh": "Use F.gelu(x) (approximate='none').",
    "relu": "Use F.gelu(x) in place of ReLU.",
    "no-pooler": "To match BERT, pass the [CLS] vector through a dense layer and tanh before the NSP classifier.",
    "mlm-head-plain-linear": "To match BERT, put dense → GELU → LayerNorm before the decoder.",
    "mlm-head-untied": "To match BERT, set decoder.weight = word_embeddings.weight.",
    "final-layernorm": "To match BERT, drop the LayerNorm after the last layer.",
    "log-probabilities": "Return the decoder's logits, before any log_softmax.",
}


def what_to_change(finding: Finding) -> str:
    """The finding's sentence, then what to change where its own sentence does not already say it."""
    change = CHANGE.get(finding.code)
    return f"{finding.message} {change}" if change else finding.message
