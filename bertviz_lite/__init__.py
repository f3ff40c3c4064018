"""bertviz-lite: a from-scratch PyTorch BERT for seeing, and learning, how BERT works.

    import bertviz_lite
    model, tokenizer = bertviz_lite.load("all-MiniLM-L6-v2")
    enc = tokenizer.encode_pair("The cat sat on the mat.", "It purred.")
    trace = model.trace(**enc.to_tensors())   # embeddings, attentions, q/k/v, hidden states, logits

The package is a house of rooms, each a sub-package, importing only from the rooms below it
(ARCHITECTURE.md draws it): limits → model → text → loading → inspection → figures → check
→ training → server → runs. This file only names the public entry points.
"""

from bertviz_lite.inspection.minimal_pairs import pseudo_log_likelihood
from bertviz_lite.inspection.patching import patched_logits
from bertviz_lite.loading.pretrained import load
from bertviz_lite.model.config import BertConfig
from bertviz_lite.model.exercise import Bert
from bertviz_lite.model.modeling import BertForPreTraining, BertModel
from bertviz_lite.model.outputs import BertTrace, EmbeddingParts, LayerAttention
from bertviz_lite.text.masking import mask_tokens
from bertviz_lite.text.tokenization import BertTokenizer, Encoding

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
    "patched_logits",
    "pseudo_log_likelihood",
]
