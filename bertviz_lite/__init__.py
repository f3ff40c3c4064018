"""bertviz-lite: a from-scratch PyTorch BERT for seeing, and learning, how BERT works.

    import bertviz_lite
    model, tokenizer = bertviz_lite.load("all-MiniLM-L6-v2")
    enc = tokenizer.encode_pair("The cat sat on the mat.", "It purred.")
    trace = model.trace(**enc.to_tensors())   # embeddings, attentions, q/k/v, hidden states, logits
"""

from bertviz_lite.config import BertConfig
from bertviz_lite.masking import mask_tokens
from bertviz_lite.model import Bert, BertForPreTraining, BertModel
from bertviz_lite.outputs import BertTrace, EmbeddingParts, LayerAttention
from bertviz_lite.pretrained import load
from bertviz_lite.tokenization import BertTokenizer, Encoding

__all__ = [
    "Bert",
    "BertConfig",
    "BertForPreTraining",
    "BertModel",
    "BertTokenizer",
    "BertTrace",
    "EmbeddingParts",
    "Encoding",
    "LayerAttention",
    "load",
    "mask_tokens",
]
