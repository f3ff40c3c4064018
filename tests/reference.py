"""transformers as the reference for a head knock-out: its BERT dropped `head_mask`, so heads are zeroed by hooks.

Used by tests/test_head_mask.py, and by bench/explain_latency.py as the same reference.
"""

from __future__ import annotations

from collections.abc import Iterable

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
