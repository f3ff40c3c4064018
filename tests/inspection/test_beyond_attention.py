"""Beyond attention: norms against a direct computation, IG completeness, leave-one-out reruns, Spearman, logit lens."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from bertviz_lite import figures
from bertviz_lite.inspection import attribution, explore, views
from bertviz_lite.inspection.attribution import Target
from bertviz_lite.loading.pretrained import ENGLISH, load
from bertviz_lite.loading.run_folder import CHECKPOINTS_DIR
from tests.app.tiny_checkpoint import build_tiny

PAIR = ("The cat sat on the mat because it was tired.", "It fell asleep in the warm sun.")
HAS_ENGLISH = (CHECKPOINTS_DIR / ENGLISH / "config.json").is_file()


@pytest.fixture(scope="module")
def tiny():
    """The tiny random BERT with larger weights: at BERT's init (std 0.02) every token barely matters."""
    model, tokenizer = build_tiny()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "LayerNorm" not in name:
                parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.3)
    return model, tokenizer


@pytest.fixture(scope="module")
def tiny_trace(tiny) -> explore.PairTrace:
    model, tokenizer = tiny
    return explore.trace_pair(model, tokenizer, *PAIR, masked_positions=(3,))


def tensors(trace: explore.PairTrace):
    ids = torch.as_tensor(trace.input_ids)[None]
    return ids, torch.as_tensor(trace.segments)[None], torch.ones_like(ids)


# ---------------------------------------------------------------- norm-weighted attention


@torch.no_grad()
def direct_norms(model, hidden, layer: int) -> tuple[np.ndarray, np.ndarray]:
    """‖α f(x)‖ per head [nh, T, T] and ‖Σ_h α f(x)‖ [T, T] written out from q, k, v and W_O, as (T, T, H) vectors."""
    module = model.bert.encoder.layer[layer].attention
    heads = model.config.num_attention_heads
    size = model.config.hidden_size // heads
    q, k, v = (
        F.linear(hidden, m.weight, m.bias) for m in (module.self.query, module.self.key, module.self.value)
    )
    per_head = []
    total = 0.0
    for h in range(heads):
        part = slice(h * size, (h + 1) * size)
        alpha = torch.softmax(q[:, part] @ k[:, part].T / math.sqrt(size), dim=-1)  # (T, T)
        f = v[:, part] @ module.output.dense.weight[:, part].T  # (T, H): value bias in, output bias out
        vectors = alpha[:, :, None] * f[None, :, :]  # (T query, T key, H)
        per_head.append(vectors.norm(dim=-1))
        total = total + vectors
    return torch.stack(per_head).double().numpy(), total.norm(dim=-1).double().numpy()


def test_norm_weighted_attention_equals_a_direct_computation(tiny, tiny_trace):
    model, _ = tiny
    for layer in range(model.config.num_hidden_layers):
        per_head, summed = direct_norms(model, torch.as_tensor(tiny_trace.hidden_states[layer]), layer)
        every = views.norm_attention(tiny_trace, layer=layer)
        np.testing.assert_allclose(every.norm, summed, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(every.raw, tiny_trace.attentions[layer].mean(axis=0), atol=1e-7)
        for head in range(model.config.num_attention_heads):
            one = views.norm_attention(tiny_trace, layer=layer, head=head)
            np.testing.assert_allclose(one.norm, per_head[head], rtol=1e-4, atol=1e-6)
        assert (summed <= per_head.sum(axis=0) + 1e-6).all()  # the norm of a sum is at most the sum of norms


def test_norm_view_keeps_the_sentence_filter_and_computes_its_note(tiny_trace):
    full = views.norm_attention(tiny_trace, layer=1)
    a_to_b = views.norm_attention(tiny_trace, layer=1, sentence_filter="A→B")
    rows = a_to_b.query_positions
    cols = a_to_b.key_positions
    np.testing.assert_allclose(a_to_b.norm, full.norm[np.ix_(rows, cols)])
    assert "[SEP]" in a_to_b.key_tokens and "[CLS]" not in a_to_b.key_tokens
    shares = full.shares().set_index("key")
    sep = np.asarray(full.key_tokens) == "[SEP]"
    assert shares.loc["[SEP]", "norm-weighted"] == pytest.approx(full.norm[:, sep].sum() / full.norm.sum())
    np.testing.assert_allclose(shares.sum(), 1.0)
    assert f"only {shares.loc[['[CLS]', '[SEP]'], 'norm-weighted'].sum():.0%}" in full.note()
    frame = full.to_frame()
    assert len(frame) == full.raw.size and set(frame.columns) >= {"weight", "norm_weighted", "layer", "head"}
    by_layer = views.special_share_by_layer(tiny_trace)
    assert len(by_layer.to_frame()) == 4 and by_layer.to_frame()["to [SEP]"].between(0, 1).all()
    fig = figures.special_share_by_layer_figure(by_layer)
    assert (
        len(fig.data) == 4 and fig.layout.legend.orientation == "h"
    )  # 2 weightings × [CLS], [SEP]; legend below


# ---------------------------------------------------------------- gradients and leave-one-out


def completeness_case(model, tokenizer, trace, target):
    ids, segments, mask = tensors(trace)
    baseline = torch.full_like(ids, tokenizer.mask_token_id)
    return (
        attribution.integrated_gradients(model, ids, segments, mask, target, baseline, steps=32),
        ids,
        segments,
    )


@pytest.mark.parametrize("position", [3, None], ids=["mlm", "nsp"])
def test_integrated_gradients_add_up_to_the_score_difference(tiny, tiny_trace, position):
    model, tokenizer = tiny
    target = views.beyond_attention.explained_target(tiny_trace.mlm_logits, position)
    grads, ids, segments = completeness_case(model, tokenizer, tiny_trace, target)
    assert grads.completeness_error < 0.01
    assert abs(grads.integrated_gradients.sum() - (grads.score - grads.baseline_score)) < 0.01 * abs(
        grads.score - grads.baseline_score
    )
    # both ends are the model's own numbers: the input, and the input with every token [MASK]
    with torch.no_grad():
        for scored_ids, value in (
            (ids, grads.score),
            (torch.full_like(ids, tokenizer.mask_token_id), grads.baseline_score),
        ):
            out = model.trace(scored_ids, segments)
            logits = out.nsp_logits[0] if position is None else out.mlm_logits[0, position]
            expected = F.log_softmax(logits, -1)[0 if position is None else target.token_id]
            assert value == pytest.approx(float(expected), abs=1e-4)


@pytest.mark.skipif(not HAS_ENGLISH, reason="minilm-english is not installed")
@pytest.mark.parametrize("position", [4, None], ids=["mlm", "nsp"])
def test_integrated_gradients_completeness_on_real_weights(position):
    model, tokenizer = load(ENGLISH)
    trace = explore.trace_pair(
        model,
        tokenizer,
        "Paris is the capital of France.",
        "It is famous for the Eiffel Tower.",
        masked_positions=(4,),
    )
    target = views.beyond_attention.explained_target(trace.mlm_logits, position)
    grads, _, _ = completeness_case(model, tokenizer, trace, target)
    assert abs(grads.score - grads.baseline_score) > 0.1
    assert grads.completeness_error < 0.01


def test_gradient_times_input_matches_autograd_through_the_ordinary_forward(tiny, tiny_trace):
    model, tokenizer = tiny
    ids, segments, _ = tensors(tiny_trace)
    target = views.beyond_attention.explained_target(tiny_trace.mlm_logits, 3)
    grads, _, _ = completeness_case(model, tokenizer, tiny_trace, target)
    captured = {}

    def keep(module, args, output):
        output.retain_grad()
        captured["word"] = output

    handle = model.bert.embeddings.word_embeddings.register_forward_hook(keep)
    try:
        score = F.log_softmax(model.mlm_logits(ids, segments)[0, 3], -1)[target.token_id]
        score.backward()
    finally:
        handle.remove()
        model.zero_grad(set_to_none=True)
    summed = torch.as_tensor(tiny_trace.embeddings["sum"])  # d(score)/d(sum) = d(score)/d(word embedding)
    expected = (summed * captured["word"].grad[0]).sum(-1).numpy()
    np.testing.assert_allclose(grads.gradient_x_input, expected, rtol=1e-4, atol=1e-6)


@torch.no_grad()
def test_leave_one_out_runs_the_model_again_with_each_token_masked(tiny, tiny_trace):
    model, tokenizer = tiny
    ids, segments, mask = tensors(tiny_trace)
    target = views.beyond_attention.explained_target(tiny_trace.mlm_logits, 3)
    loo, score = attribution.leave_one_out(model, ids, segments, mask, target, tokenizer.mask_token_id)
    assert loo[3] == 0.0  # position 3 already holds [MASK]
    assert np.abs(loo).max() > 1e-3
    for j in (0, 1, 5, ids.shape[1] - 1):
        changed = ids.clone()
        changed[0, j] = tokenizer.mask_token_id
        direct = F.log_softmax(model.trace(changed, segments).mlm_logits[0, 3], -1)[target.token_id]
        assert loo[j] == pytest.approx(score - float(direct), abs=1e-5)


def test_token_attribution_puts_every_method_beside_leave_one_out(tiny, tiny_trace):
    data = views.token_attribution(tiny_trace, position=3)
    assert list(data.scores) == list(views.beyond_attention.METHODS)
    assert not data.compared[3] and data.compared.sum() == len(data.tokens) - 1
    loo = data.scores["leave-one-out"][data.compared]
    for method, rho in data.correlation.items():
        assert rho == pytest.approx(attribution.spearman(loo, data.scores[method][data.compared]))
    np.testing.assert_allclose(
        data.scores["attention (last layer)"], tiny_trace.attentions[-1][:, 3].mean(axis=0)
    )
    assert data.scores["integrated gradients"][3] == 0.0  # the baseline equals the input there
    frame = data.to_frame()
    assert frame.shape == (len(data.tokens), 3 + len(views.beyond_attention.METHODS))
    assert len(data.correlation_frame()) == 5
    fig = figures.token_attribution_figure(data)
    assert fig.data[0].z.shape == (len(data.tokens), 6) and np.abs(fig.data[0].z).max() <= 1.0


def test_spearman_matches_its_definition_with_ties():
    a = np.array([1.0, 2.0, 2.0, 5.0, 3.0])
    b = np.array([10.0, 30.0, 20.0, 50.0, 40.0])
    np.testing.assert_allclose(attribution.rank(a), [0, 1.5, 1.5, 4, 3])
    ra = attribution.rank(a)
    rb = attribution.rank(b)
    assert attribution.spearman(a, b) == pytest.approx(np.corrcoef(ra, rb)[0, 1])
    assert attribution.spearman(b, -b) == pytest.approx(-1.0)
    assert math.isnan(attribution.spearman(np.ones(4), np.arange(4)))
    scipy_stats = pytest.importorskip("scipy.stats")
    gen = np.random.default_rng(0)
    x = gen.integers(0, 5, 30).astype(float)
    y = gen.normal(size=30)
    assert attribution.spearman(x, y) == pytest.approx(scipy_stats.spearmanr(x, y).statistic)


def test_trapezoid_weights_and_bad_steps():
    np.testing.assert_allclose(attribution.trapezoid_weights(4), [0.125, 0.25, 0.25, 0.25, 0.125])
    with pytest.raises(ValueError, match="at least 1 step"):
        attribution.trapezoid_weights(0)
    with pytest.raises(ValueError, match="needs the token"):
        Target(3)


# ---------------------------------------------------------------- knock-out and logit lens


def test_head_knockout_view_reads_a_head_masked_trace(tiny, tiny_trace):
    model, _ = tiny
    data = views.head_knockout(tiny_trace, heads=("L0H0", "L1H2"), position=3, k=3)
    ids, segments, _ = tensors(tiny_trace)
    knocked = model.trace(ids, segments, head_mask=attribution.head_mask(["L0H0", "L1H2"], 2, 4))
    after = torch.softmax(knocked.mlm_logits[0, 3].double(), -1)
    before = torch.softmax(torch.as_tensor(tiny_trace.mlm_logits[3]).double(), -1)
    top_before = torch.topk(before, 3).indices.tolist()
    assert data.candidates[:3] == model_tokens(tiny, top_before)
    np.testing.assert_allclose(data.before[:3], before[top_before].numpy(), rtol=1e-5)
    np.testing.assert_allclose(data.after[:3], after[top_before].numpy(), rtol=1e-5)
    assert data.nsp_after == pytest.approx(
        float(torch.softmax(knocked.nsp_logits[0].double(), -1)[0]), rel=1e-5
    )
    frame = data.to_frame()
    assert frame["prediction"].iloc[-1] == "NSP: IsNext" and (frame["knocked_out"] == "L0H0 L1H2").all()
    assert {t.name for t in figures.head_knockout_figure(data).data} == {
        "with every head",
        "heads knocked out",
    }
    untouched = views.head_knockout(tiny_trace, heads=(), position=3)
    np.testing.assert_allclose(untouched.before, untouched.after, atol=1e-6)


def model_tokens(tiny, ids):
    return tiny[1].convert_ids_to_tokens(ids)


@torch.no_grad()
def test_logit_lens_reads_every_layer_with_the_output_head(tiny, tiny_trace):
    model, tokenizer = tiny
    lens = views.logit_lens(tiny_trace, position=3, k=4)
    assert lens.layers == ["embeddings", "after layer 0", "after layer 1"]
    final = torch.softmax(torch.as_tensor(tiny_trace.mlm_logits[3]).double(), -1)
    assert lens.answer == tokenizer.convert_ids_to_tokens([int(final.argmax())])[0]
    assert lens.answer_probs[-1] == pytest.approx(float(final.max()), rel=1e-5)
    first = torch.softmax(model.cls.predictions(torch.as_tensor(tiny_trace.hidden_states[0][3])).double(), -1)
    np.testing.assert_allclose(lens.top_probs[0], torch.topk(first, 4).values.numpy(), rtol=1e-5)
    nsp = views.logit_lens(tiny_trace, position=None)
    assert nsp.answer_probs[-1] == pytest.approx(
        float(torch.softmax(torch.as_tensor(tiny_trace.nsp_logits).double(), -1).max()), rel=1e-5
    )
    assert set(nsp.top_tokens[0]) == {"IsNext", "NotNext"}
    assert lens.to_frame().shape == (3, 2 + 2 * 4)
    assert figures.logit_lens_figure(lens).data[0].z.shape == (3, 4)


def test_a_model_without_heads_says_so(tiny_trace):
    model = tiny_trace.model
    model.has_mlm_head = False
    try:
        with pytest.raises(ValueError, match="no trained masked-language-model head"):
            views.logit_lens(tiny_trace, position=3)
    finally:
        model.has_mlm_head = True


def test_attribution_refuses_long_inputs_in_a_sentence(tiny, tiny_trace, monkeypatch):
    monkeypatch.setattr(views.beyond_attention, "MAX_ATTRIBUTION_TOKENS", 10)
    with pytest.raises(ValueError, match=r"at most 10 tokens; this input has \d+\. Lower the max length"):
        views.token_attribution(tiny_trace, position=3)


def test_explain_choices_follow_the_heads_and_the_input(tiny):
    model, tokenizer = tiny
    pair = tokenizer.encode_pair(*PAIR)
    choices = views.explain_choices(pair, model)
    assert choices[-1] is None and choices[:-1] == views.maskable_positions(pair)
    assert views.default_choice(pair, choices) == views.default_mask_position(pair)
    alone = tokenizer.encode_pair("The cat sat on the [MASK].", None)
    assert None not in views.explain_choices(alone, model)  # no sentence B, no NSP decision
    assert views.default_choice(alone, views.explain_choices(alone, model)) == alone.tokens.index("[MASK]")
    model.has_mlm_head = False
    try:
        assert views.explain_choices(pair, model) == [None]
        assert views.default_choice(pair, [None]) is None and views.explain_choices(alone, model) == []
    finally:
        model.has_mlm_head = True


def test_explained_masks_put_one_mask_unless_the_text_has_it_and_none_for_nsp(tiny):
    _, tokenizer = tiny
    alone = tokenizer.encode_pair("The cat sat on the [MASK].", None)
    typed = alone.tokens.index("[MASK]")
    assert views.beyond_attention.explained_masks(alone, typed) == ()
    assert views.beyond_attention.explained_masks(alone, 2) == (2,)
    assert views.beyond_attention.explained_masks(alone, None) == ()


def test_the_integrated_gradients_total_is_their_sum(tiny_trace):
    data = views.token_attribution(tiny_trace, position=3)
    assert data.integrated_gradients_total == pytest.approx(float(data.scores["integrated gradients"].sum()))
    difference = data.score - data.baseline_score
    assert data.integrated_gradients_total == pytest.approx(difference, rel=0.05, abs=1e-3)
