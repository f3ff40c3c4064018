"""Activation patching: equal to transformers with the hidden state swapped in by a hook, and its corner cases."""

import numpy as np
import pytest
import torch
import transformers

from bertviz_lite import patched_logits
from bertviz_lite.inspection import patching
from bertviz_lite.inspection.attribution import Target
from bertviz_lite.loading.pretrained import ENGLISH, load
from bertviz_lite.loading.run_folder import CHECKPOINTS_DIR
from bertviz_lite.model.config import BertConfig
from bertviz_lite.model.modeling import BertForPreTraining
from tests.reference import restore_hidden_hook

TINY = dict(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37)
HAS_ENGLISH = (CHECKPOINTS_DIR / ENGLISH / "config.json").is_file()


def tiny_model(seed=0) -> BertForPreTraining:
    torch.manual_seed(seed)
    return BertForPreTraining(BertConfig(**TINY)).eval()


def clean_and_corrupted(length=8, changed=(1, 5)):
    gen = torch.Generator().manual_seed(3)
    clean = torch.randint(5, TINY["vocab_size"], (1, length), generator=gen)
    clean[0, 0] = 2
    clean[0, -1] = 3
    corrupted = clean.clone()
    corrupted[0, list(changed)] = torch.tensor([7, 9])
    return clean, corrupted


@torch.no_grad()
def test_patching_every_position_at_layer_0_gives_the_clean_logits_and_none_the_corrupted():
    model = tiny_model()
    clean, corrupted = clean_and_corrupted()
    every = patched_logits(model, clean, corrupted, None, 0, range(clean.shape[1]))
    assert torch.equal(every, model.cls.predictions(patching.record_run(model, clean).final))
    torch.testing.assert_close(
        every, model.mlm_logits(clean), atol=1e-5, rtol=1e-5
    )  # and the model's own forward
    nothing = patched_logits(model, clean, corrupted, None, 1, [])
    assert torch.equal(nothing, model.cls.predictions(patching.record_run(model, corrupted).final))
    # an unchanged position changes nothing at layer 0; a changed one does
    assert torch.equal(patched_logits(model, clean, corrupted, None, 0, 3), nothing)
    assert (patched_logits(model, clean, corrupted, None, 0, 1) - nothing).abs().max() > 1e-3


@torch.no_grad()
def test_patched_logits_equal_writing_the_clean_state_into_the_layer_loop_by_hand():
    model = tiny_model()
    clean, corrupted = clean_and_corrupted()
    clean_states = model.trace(clean).hidden_states
    for layer in range(3):
        hidden = model.bert.embeddings(corrupted, torch.zeros_like(corrupted), torch.arange(8)[None])
        for index in range(layer):
            hidden = model.bert.encoder.layer[index](hidden, None)
        hidden = hidden.clone()
        hidden[:, 5] = clean_states[layer][:, 5]
        for index in range(layer, 2):
            hidden = model.bert.encoder.layer[index](hidden, None)
        ours = patched_logits(model, clean, corrupted, None, layer, 5)
        torch.testing.assert_close(ours, model.cls.predictions(hidden), atol=1e-5, rtol=1e-5)


def test_bad_inputs_are_sentences():
    model = tiny_model()
    clean, corrupted = clean_and_corrupted()
    with pytest.raises(ValueError, match="same shape to be patched position by position"):
        patched_logits(model, clean, corrupted[:, :-1], None, 0, 1)
    with pytest.raises(ValueError, match=r"layer 3 has no residual site: this model's are 0 … 2"):
        patched_logits(model, clean, corrupted, None, 3, 1)
    with pytest.raises(ValueError, match=r"position 8 is outside the input's 8 tokens"):
        patched_logits(model, clean, corrupted, None, 0, 8)


@torch.no_grad()
def test_grids_agree_with_single_patched_runs_and_their_corners():
    model = tiny_model()
    clean_ids, corrupted_ids = clean_and_corrupted()
    clean = patching.record_run(model, clean_ids)
    corrupted = patching.record_run(model, corrupted_ids)
    # the candidates the corruption moves most apart
    moved = model.mlm_logits(clean_ids)[0, 6] - model.mlm_logits(corrupted_ids)[0, 6]
    up = int(moved.argmax())
    down = int(moved.argmin())
    target = Target(6, up, down)

    def metric(logits):
        return float(logits[0, 6, up] - logits[0, 6, down])

    grid = patching.patching_grid(model, clean, corrupted, "residual", target)
    assert grid.shape == (3, 8)
    for layer, position in [(0, 1), (1, 5), (2, 6), (1, 0)]:
        single = patched_logits(model, clean_ids, corrupted_ids, None, layer, position)
        assert grid[layer, position] == pytest.approx(metric(single), abs=1e-5)
    clean_metric = metric(model.mlm_logits(clean_ids))
    corrupted_metric = metric(model.mlm_logits(corrupted_ids))
    share = patching.recovered_share(grid, clean_metric, corrupted_metric)
    assert share[2, 6] == pytest.approx(
        1.0, abs=1e-4
    )  # the last layer at the predicted position is everything
    np.testing.assert_allclose(share[2, [0, 1, 2, 3, 4, 5, 7]], 0.0, atol=1e-4)  # …and elsewhere nothing
    np.testing.assert_allclose(
        share[0, [0, 2, 3, 4, 6, 7]], 0.0, atol=1e-4
    )  # unchanged tokens restore nothing


@torch.no_grad()
def test_head_and_block_grids_equal_patching_by_hand():
    model = tiny_model()
    clean_ids, corrupted_ids = clean_and_corrupted()
    clean = patching.record_run(model, clean_ids)
    corrupted = patching.record_run(model, corrupted_ids)
    target = Target(6, 11, 12)
    heads = patching.patching_grid(model, clean, corrupted, "head", target)
    blocks = {
        site: patching.patching_grid(model, clean, corrupted, site, target)
        for site in ("attention", "feed-forward")
    }
    assert heads.shape == (2, 4) and blocks["attention"].shape == (2, 8)

    def by_hand(site, layer, unit):
        def edit(name, value):
            if name != site:
                return value
            value = value.clone()
            if site == "head":
                value[:, :, unit * 8 : (unit + 1) * 8] = clean.sites[site][layer][
                    :, :, unit * 8 : (unit + 1) * 8
                ]
            else:
                value[:, unit] = clean.sites[site][layer][:, unit]
            return value

        hidden = corrupted.sites["residual"][layer]
        for index in range(layer, 2):
            hidden = patching.layer_forward(
                model.bert.encoder.layer[index], hidden, None, edit if index == layer else patching._keep
            )
        logits = model.cls.predictions(hidden)
        return float(logits[0, 6, 11] - logits[0, 6, 12])

    assert heads[1, 2] == pytest.approx(by_hand("head", 1, 2), abs=1e-5)
    assert blocks["attention"][0, 5] == pytest.approx(by_hand("attention", 0, 5), abs=1e-5)
    assert blocks["feed-forward"][1, 6] == pytest.approx(by_hand("feed-forward", 1, 6), abs=1e-5)
    # restoring every head of a layer restores that layer's attention: the same as the whole block
    every_head = patching.head_select([0, 1, 2, 3], 8, 4, 8).any(0, keepdim=True)
    every_position = patching.position_select([range(8)], 8, 32)
    torch.testing.assert_close(
        patching.patched_final(model, clean, corrupted, "head", 1, every_head),
        patching.patched_final(model, clean, corrupted, "attention", 1, every_position),
    )


@pytest.mark.skipif(not HAS_ENGLISH, reason="minilm-english is not installed")
@torch.no_grad()
def test_patched_logits_equal_transformers_with_a_hook_at_every_layer():
    model, tokenizer = load(ENGLISH)
    reference = transformers.BertForPreTraining.from_pretrained(
        str(CHECKPOINTS_DIR / ENGLISH), attn_implementation="eager", dtype=torch.float32
    ).eval()
    clean = tokenizer.encode_pair("Paris is the capital of [MASK].", None).to_tensors()
    corrupted = tokenizer.encode_pair("Rome is the capital of [MASK].", None).to_tensors()
    ids = clean["input_ids"]
    bad_ids = corrupted["input_ids"]
    assert ids.shape == bad_ids.shape
    clean_states = reference(input_ids=ids, output_hidden_states=True).hidden_states
    select = torch.zeros_like(ids, dtype=torch.bool)
    select[0, 1] = True
    for layer in range(model.config.num_hidden_layers + 1):
        hook = restore_hidden_hook(reference, layer, select, clean_states[layer])
        try:
            theirs = reference(input_ids=bad_ids).prediction_logits
        finally:
            hook.remove()
        ours = patched_logits(model, ids, bad_ids, None, layer, 1)
        torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=0, msg=f"layer {layer}")
