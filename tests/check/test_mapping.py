"""Placing a learner's parameters on ours, from names, shapes and module types alone (no child process)."""

from __future__ import annotations

import torch
from torch import nn

from bertviz_lite.check.capture import observe, param_infos
from bertviz_lite.check.mapping import FINAL_NORM, ZERO_ROW, Sizes, map_part

SIZES = Sizes(
    vocab_size=100, hidden_size=32, intermediate_size=128, max_position_embeddings=64, num_hidden_layers=2
)
OURS = {
    f"bert.encoder.layer.{i}.{name}": ()
    for i in range(2)
    for name in (
        "attention.self.query.weight",
        "attention.self.key.weight",
        "attention.self.value.weight",
        "attention.output.dense.weight",
        "attention.output.LayerNorm.weight",
        "output.LayerNorm.weight",
    )
}


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm2 = nn.LayerNorm(32)  # declared first, named second
        self.attn = nn.MultiheadAttention(32, 4, batch_first=True)
        self.ffn = nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 32))
        self.norm1 = nn.LayerNorm(32)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(100, 32)
        self.segments = nn.Embedding(3, 32, padding_idx=0)
        self.blocks = nn.ModuleList([Block(), Block()])
        self.ln_f = nn.LayerNorm(32)


def test_multihead_attention_sequential_numbered_norms_and_a_segment_table_of_three():
    mapping = map_part(param_infos(Model()), OURS, SIZES, "model")
    entries = mapping.entries
    layer = "bert.encoder.layer.1."
    assert entries["blocks.1.attn.in_proj_weight"] == [
        layer + f"attention.self.{n}.weight" for n in ("query", "key", "value")
    ]
    assert entries["blocks.1.attn.out_proj.weight"] == [layer + "attention.output.dense.weight"]
    assert entries["blocks.1.ffn.0.weight"] == [layer + "intermediate.dense.weight"]
    assert entries["blocks.1.ffn.2.bias"] == [layer + "output.dense.bias"]
    assert entries["blocks.1.norm1.weight"] == [layer + "attention.output.LayerNorm.weight"]
    assert entries["blocks.1.norm2.weight"] == [layer + "output.LayerNorm.weight"]
    assert entries["segments.weight"] == [ZERO_ROW, "bert.embeddings.token_type_embeddings.weight"]
    assert entries["tok.weight"] == ["bert.embeddings.word_embeddings.weight"]
    assert entries["ln_f.weight"] == [FINAL_NORM + ".weight"]
    assert mapping.unmapped_theirs == []


def test_an_explicit_mapping_overrides_the_guess():
    override = {"blocks.0.norm1.weight": "bert.encoder.layer.0.output.LayerNorm.weight"}
    mapping = map_part(param_infos(Model()), OURS, SIZES, "model", override)
    assert mapping.entries["blocks.0.norm1.weight"] == ["bert.encoder.layer.0.output.LayerNorm.weight"]


def test_a_part_maps_onto_layer_0_and_reports_what_it_lacks():
    part = nn.Module()
    part.W_Q, part.W_K, part.W_V, part.W_O = (nn.Linear(32, 32) for _ in range(4))
    mapping = map_part(param_infos(part), OURS, SIZES, "attention")
    assert mapping.entries["W_O.weight"] == ["bert.encoder.layer.0.attention.output.dense.weight"]
    assert mapping.entries["W_K.weight"] == ["bert.encoder.layer.0.attention.self.key.weight"]
    assert mapping.unmapped_ours == ["bert.encoder.layer.0.attention.output.LayerNorm.weight"]


def test_raw_matrices_used_as_x_at_w_are_split_per_matrix_and_transposed():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "raw", __file__.replace("test_mapping.py", "learners/raw_parameters.py")
    )
    raw = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(raw)
    mapping = map_part(param_infos(raw.Bert(100, 32, 2, 4, 128, 64)), OURS, SIZES, "model")
    table = mapping.table()
    layer = "bert.encoder.layer.0."
    assert (
        table["layers.0.W_qkv"]
        == "(" + " + ".join(layer + f"attention.self.{n}.weight" for n in ("query", "key", "value")) + ").T"
    )
    assert table["layers.0.W1"] == f"({layer}intermediate.dense.weight).T"
    assert table["layers.0.W2"] == f"({layer}output.dense.weight).T"
    assert table["layers.0.b_o"] == layer + "attention.output.dense.bias"


class Misleading(nn.Module):
    """Its MLM transform is declared first and named `pool`, its LayerNorm `norm_out`: only the run tells."""

    def __init__(self):
        super().__init__()
        self.pool = nn.Linear(32, 32)
        self.norm_out = nn.LayerNorm(32)
        self.tok = nn.Embedding(100, 32)
        self.blocks = nn.ModuleList([Block(), Block()])

    def forward(self, ids):
        x = self.tok(ids)
        for block in self.blocks:
            x = block.norm1(x + block.attn(x, x, x)[0])
            x = block.norm2(x + block.ffn(x))
        x = self.norm_out(nn.functional.gelu(self.pool(x)))  # (B, T, H): every token, as the MLM transform
        return x @ self.tok.weight.T


def test_a_trial_pass_tells_the_mlm_transform_from_a_pooler_whatever_the_names_and_order():
    model = Misleading().eval()
    observed = observe(model, lambda: model(torch.randint(0, 100, (2, 5))))
    entries = map_part(param_infos(model, observed), OURS, SIZES, "model").entries
    assert entries["pool.weight"] == ["cls.predictions.transform.dense.weight"]
    assert entries["norm_out.weight"] == ["cls.predictions.transform.LayerNorm.weight"]
    guessed = map_part(param_infos(model), OURS, SIZES, "model").entries  # names and declaration order alone
    assert guessed["pool.weight"] == ["bert.pooler.dense.weight"]
