"""Tests for bertviz_lite.inspection.analysis: every function checked against numbers worked out by hand or numpy."""

import numpy as np
import pytest

from bertviz_lite.inspection import analysis
from tests.attention_samples import SEGMENTS, SPECIAL, TOKENS, random_attention

# ---------------------------------------------------------------- sentence filter


def test_sentence_ids_put_cls_and_first_sep_in_a_and_final_sep_in_b():
    assert analysis.sentence_ids(SEGMENTS, SPECIAL).tolist() == [0, 0, 0, 0, 0, 1, 1, 1]
    # even if a tokenizer gave the final [SEP] segment 0, it follows sentence B
    assert analysis.sentence_ids([0, 0, 0, 0, 0, 1, 1, 0], SPECIAL).tolist() == [0, 0, 0, 0, 0, 1, 1, 1]


@pytest.mark.parametrize(
    ("sentence_filter", "queries", "keys"),
    [
        ("A→A", range(0, 5), range(0, 5)),
        ("A→B", range(0, 5), range(5, 8)),
        ("B→A", range(5, 8), range(0, 5)),
        ("B→B", range(5, 8), range(5, 8)),
    ],
)
def test_sentence_filter_mask_selects_one_block(sentence_filter, queries, keys):
    mask = analysis.sentence_filter_mask(SEGMENTS, SPECIAL, sentence_filter)
    expected = np.zeros((8, 8), bool)
    expected[np.ix_(list(queries), list(keys))] = True
    np.testing.assert_array_equal(mask, expected)


def test_sentence_filter_blocks_reassemble_all_and_padding_is_dropped():
    blocks = [
        analysis.sentence_filter_mask(SEGMENTS, SPECIAL, w).astype(int) for w in ("A→A", "A→B", "B→A", "B→B")
    ]
    np.testing.assert_array_equal(sum(blocks), np.ones((8, 8), int))
    padded = analysis.sentence_filter_mask(SEGMENTS + [0], SPECIAL + [1], "All", attention_mask=[1] * 8 + [0])
    assert padded[:8, :8].all() and not padded[8].any() and not padded[:, 8].any()
    with pytest.raises(ValueError, match="sentence filter"):
        analysis.sentence_filter_mask(SEGMENTS, SPECIAL, "A→C")


# ---------------------------------------------------------------- head statistics


def test_head_statistics_identity_attention_is_all_self_with_zero_entropy():
    attn = np.broadcast_to(np.eye(8), (2, 3, 8, 8))
    stats = analysis.attention_statistics(attn, TOKENS)
    assert list(stats.columns) == [
        "layer",
        "head",
        "entropy",
        "to_cls",
        "to_sep",
        "to_self",
        "to_prev",
        "to_next",
    ]
    assert len(stats) == 6 and stats[["layer", "head"]].values.tolist()[:4] == [
        [0, 0],
        [0, 1],
        [0, 2],
        [1, 0],
    ]
    np.testing.assert_allclose(stats["to_self"], 1.0)
    np.testing.assert_allclose(stats["entropy"], 0.0, atol=1e-12)
    np.testing.assert_allclose(stats[["to_prev", "to_next"]], 0.0)
    np.testing.assert_allclose(stats["to_cls"], 1 / 8)  # only the [CLS] row puts weight on [CLS]
    np.testing.assert_allclose(stats["to_sep"], 2 / 8)


def test_head_statistics_uniform_and_previous_token_heads():
    uniform = np.full((8, 8), 1 / 8)
    previous = np.eye(8, k=-1)
    previous[0, 0] = 1.0
    stats = analysis.attention_statistics(np.stack([uniform, previous])[None], TOKENS)
    np.testing.assert_allclose(
        stats.loc[0, ["entropy", "to_cls", "to_sep", "to_self"]], [np.log(8), 1 / 8, 2 / 8, 1 / 8]
    )
    np.testing.assert_allclose(stats.loc[1, ["to_prev", "to_next", "entropy"]], [1.0, 0.0, 0.0], atol=1e-12)


def test_head_statistics_ignores_padded_rows():
    attn = np.zeros((1, 1, 4, 4))
    attn[0, 0, :3, :3] = np.eye(3)
    attn[0, 0, 3] = [1 / 3, 1 / 3, 1 / 3, 0]  # padded query row: must not count
    stats = analysis.attention_statistics(attn, ["[CLS]", "a", "[SEP]", "[PAD]"], attention_mask=[1, 1, 1, 0])
    assert stats.loc[0, "to_self"] == pytest.approx(1.0)
    assert stats.loc[0, "entropy"] == pytest.approx(0.0)


# ---------------------------------------------------------------- rollout


def test_rollout_of_identity_attention_is_identity():
    rollout = analysis.attention_rollout(np.broadcast_to(np.eye(5), (3, 2, 5, 5)))
    assert rollout.shape == (3, 5, 5)
    np.testing.assert_allclose(rollout, np.broadcast_to(np.eye(5), (3, 5, 5)), atol=1e-12)


def test_rollout_rows_sum_to_one_and_match_hand_computation():
    attn = random_attention(3, 4, 6, 6)
    rollout = analysis.attention_rollout(attn)
    np.testing.assert_allclose(rollout.sum(-1), 1.0, atol=1e-12)
    layers = [0.5 * a.mean(0) + 0.5 * np.eye(6) for a in attn]
    np.testing.assert_allclose(rollout[0], layers[0], atol=1e-12)
    np.testing.assert_allclose(rollout[2], layers[2] @ layers[1] @ layers[0], atol=1e-12)
    plain = analysis.attention_rollout(attn, add_residual=False)
    np.testing.assert_allclose(plain[1], attn[1].mean(0) @ attn[0].mean(0), atol=1e-12)


# ---------------------------------------------------------------- neuron view


def test_neuron_view_reproduces_attention_row_and_output():
    rng = np.random.default_rng(1)
    q, k, v = (rng.normal(size=(7, 16)).astype(np.float32) for _ in range(3))
    key_mask = np.array([1, 1, 1, 1, 1, 0, 0])
    n = analysis.attention_steps(q, k, v, query_index=2, key_mask=key_mask)
    scores = q.astype(np.float64) @ k.T.astype(np.float64) / 4.0
    scores[:, key_mask == 0] = -np.inf
    expected = np.exp(scores - scores.max(-1, keepdims=True))
    expected /= expected.sum(-1, keepdims=True)
    np.testing.assert_allclose(n.weights, expected[2], atol=1e-6)
    np.testing.assert_allclose(n.products.sum(-1), n.dot, atol=1e-9)
    np.testing.assert_allclose(n.scaled, n.dot / 4.0)
    assert np.isneginf(n.masked[5:]).all() and n.weights[5:].tolist() == [0.0, 0.0]
    np.testing.assert_allclose(n.weighted_values, n.weights[:, None] * v, atol=1e-9)
    np.testing.assert_allclose(n.output, n.weights @ v, atol=1e-6)
    assert n.query.shape == (16,) and n.products.shape == (7, 16)


def test_neuron_view_matches_torch_attention_row():
    torch = pytest.importorskip("torch")
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(6, 8, generator=gen) for _ in range(3))
    probs = torch.softmax(q @ k.T / 8**0.5, dim=-1)
    n = analysis.attention_steps(q, k, v, query_index=4)
    np.testing.assert_allclose(n.weights, probs[4].numpy(), atol=1e-6)
    np.testing.assert_allclose(n.output, (probs @ v)[4].numpy(), atol=1e-5)


def test_softmax_over_the_last_axis_with_minus_infinity():
    scores = np.array([[1.0, 2.0, -np.inf], [-np.inf, -np.inf, -np.inf]])
    probs = analysis.softmax(scores)
    np.testing.assert_allclose(probs[0], [1 / (1 + np.e), np.e / (1 + np.e), 0.0])
    assert probs[1].tolist() == [0.0, 0.0, 0.0]
    logits = np.random.default_rng(0).normal(size=50) * 30
    np.testing.assert_allclose(
        analysis.softmax(logits), np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    )


# ---------------------------------------------------------------- downsampling


def test_downsample_keeps_rows_summing_to_one_and_caps_size():
    attn = random_attention(512, 512)
    small, labels = analysis.downsample_attention(attn, 64, [f"t{i}" for i in range(512)])
    assert small.shape == (64, 64) and len(labels) == 64
    np.testing.assert_allclose(small.sum(-1), 1.0, atol=1e-12)
    assert labels[0] == "t0…t7 (0-7)" and labels[-1] == "t504…t511 (504-511)"
    # block 0 × block 1 is the mean over query rows 0..7 of the summed weight on keys 8..15
    assert small[0, 1] == pytest.approx(attn[0:8, 8:16].sum(1).mean())


def test_downsample_uneven_and_small_inputs():
    attn = random_attention(10, 10)
    small, labels = analysis.downsample_attention(attn, 4)
    assert small.shape == (4, 4) and labels == ["0-1", "2-4", "5-6", "7-9"]
    np.testing.assert_allclose(small.sum(-1), 1.0)
    same, same_labels = analysis.downsample_attention(attn, 64, list("abcdefghij"))
    np.testing.assert_allclose(same, attn)
    assert same_labels[:2] == ["a (0)", "b (1)"]


# ---------------------------------------------------------------- embeddings


def test_cosine_similarity_and_pca():
    x = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0], [0.0, 0.0]])
    sim = analysis.cosine_similarity_matrix(x)
    np.testing.assert_allclose(
        sim[:3, :3], [[1, 0, 0.5**0.5], [0, 1, 0.5**0.5], [0.5**0.5, 0.5**0.5, 1]], atol=1e-12
    )
    assert sim[3].tolist() == [0.0, 0.0, 0.0, 0.0]
    points = np.random.default_rng(0).normal(size=(20, 5)) * [5, 2, 0.1, 0.1, 0.1]
    proj = analysis.pca_2d(points)
    assert proj.shape == (20, 2)
    np.testing.assert_allclose(proj.mean(0), 0.0, atol=1e-12)
    assert proj[:, 0].var() > proj[:, 1].var() > 0
    np.testing.assert_allclose(analysis.pca_2d(-points), -proj, atol=1e-9)  # sign rule follows the data
    np.testing.assert_allclose(analysis.pca_2d(points), proj)


def test_sinusoidal_position_table_matches_formula():
    table = analysis.sinusoidal_position_table(50, 16)
    assert table.dtype == np.float32 and table.shape == (50, 16)
    np.testing.assert_allclose(table[0], [0, 1] * 8)
    pos = 7
    i = 3
    angle = pos / 10000 ** (2 * i / 16)
    np.testing.assert_allclose(table[pos, 2 * i : 2 * i + 2], [np.sin(angle), np.cos(angle)], rtol=1e-6)
    assert analysis.sinusoidal_position_table(4, 5).shape == (4, 5)


def test_embedding_component_norms():
    rng = np.random.default_rng(0)
    parts = [rng.normal(size=(4, 6)) for _ in range(5)]
    frame = analysis.embedding_component_norms(*parts, tokens=["[CLS]", "a", "b", "[SEP]"])
    assert list(frame.columns) == ["index", "token", *analysis.EMBEDDING_PARTS]
    np.testing.assert_allclose(frame["position_norm"], np.linalg.norm(parts[1], axis=1))
    assert frame["token"].tolist() == ["[CLS]", "a", "b", "[SEP]"]


def test_attention_to_csv_frame():
    attn = np.array([[1.0, 0.0], [0.25, 0.75]])
    frame = analysis.attention_to_csv_frame(attn, ["a", "a"])
    assert list(frame.columns) == ["query_index", "query", "key_index", "key", "weight"]
    assert frame.values.tolist() == [
        [0, "a", 0, "a", 1.0],
        [0, "a", 1, "a", 0.0],
        [1, "a", 0, "a", 0.25],
        [1, "a", 1, "a", 0.75],
    ]
