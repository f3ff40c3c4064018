"""transformers as the reference where it has no argument for the job: forward hooks zero heads or patch activations.

Its BERT dropped `head_mask`, so heads are zeroed by hooks; activation patching restores a hidden state by a hook.
Used by tests/model/test_head_mask.py and tests/inspection/test_patching.py, and by bench/explain_latency.py as the
same reference.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn


def zero_heads_hooks(reference: nn.Module, knocked: Iterable[tuple[int, int]]) -> list:
    """Forward hooks that zero the (layer, head) heads' context in transformers' BertSelfAttention output.

    Returns the hook handles; `handle.remove()` undoes each.
    """
    knocked = list(knocked)
    size = reference.config.hidden_size // reference.config.num_attention_heads

    def hook_for(layer: int):
        def hook(module, args, output):
            context = output[0].clone()
            for layer_index, head in knocked:
                if layer_index == layer:
                    context[..., head * size : (head + 1) * size] = 0.0
            return (context, *output[1:])

        return hook

    layers = reference.bert.encoder.layer
    return [layer.attention.self.register_forward_hook(hook_for(index)) for index, layer in enumerate(layers)]


def restore_hidden_hook(reference: nn.Module, layer: int, select: torch.Tensor, clean_hidden: torch.Tensor):
    """A forward hook that puts clean_hidden (1 or B, T, H) back where select (B, T) is True, after `layer`.

    Layer 0 is the embedding output (hooked on `bert.embeddings`), layer l the output of `bert.encoder.layer[l-1]`:
    activation patching as TransformerLens does it, on transformers' BertForPreTraining. Returns the handle.
    """

    def hook(module, args, output):
        hidden = output[0] if isinstance(output, tuple) else output
        hidden = torch.where(select[..., None], clean_hidden, hidden)
        return (hidden, *output[1:]) if isinstance(output, tuple) else hidden

    module = reference.bert.embeddings if layer == 0 else reference.bert.encoder.layer[layer - 1]
    return module.register_forward_hook(hook)
