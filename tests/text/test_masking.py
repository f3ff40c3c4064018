"""mask_tokens: BERT's 15% / 80-10-10 rule, measured on 400k tokens."""

import pytest
import torch

from bertviz_lite.text.masking import DECISION_NAMES, KEPT, MASKED, NOT_CHOSEN, RANDOM, mask_tokens

VOCAB_SIZE = 1000
MASK_ID = 4
PAD_ID = 0
CLS_ID = 2
SEP_ID = 3


def _batch(rows: int = 2000, length: int = 200, pad_from: int = 160) -> tuple[torch.Tensor, torch.Tensor]:
    """Ids in 5..999 with [CLS] first, [SEP] at pad_from - 1, padding after; plus the special mask."""
    ids = torch.randint(5, VOCAB_SIZE, (rows, length), generator=torch.Generator().manual_seed(123))
    ids[:, 0] = CLS_ID
    ids[:, pad_from - 1] = SEP_ID
    ids[:, pad_from:] = PAD_ID
    special = torch.zeros_like(ids, dtype=torch.bool)
    special[:, 0] = special[:, pad_from - 1] = True
    special[:, pad_from:] = True
    return ids, special


def _mask(ids, special, seed=0, **kwargs):
    generator = torch.Generator().manual_seed(seed)
    return mask_tokens(
        ids, special, mask_token_id=MASK_ID, vocab_size=VOCAB_SIZE, generator=generator, **kwargs
    )


@pytest.fixture(scope="module")
def big():
    ids, special = _batch()
    return ids, special, _mask(ids, special, random_token_ids=torch.arange(5, VOCAB_SIZE))


def test_decision_constants():
    assert (NOT_CHOSEN, MASKED, RANDOM, KEPT) == (0, 1, 2, 3)
    assert DECISION_NAMES == {0: "not chosen", 1: "[MASK]", 2: "random token", 3: "kept"}


def test_statistics_match_bert(big):
    ids, special, result = big
    eligible = int((~special).sum())
    assert eligible == 2000 * 158  # 316k eligible tokens
    chosen = result.decisions != NOT_CHOSEN
    assert abs(chosen.sum().item() / eligible - 0.15) < 0.01
    shares = {d: (result.decisions == d).sum().item() / chosen.sum().item() for d in (MASKED, RANDOM, KEPT)}
    assert abs(shares[MASKED] - 0.8) < 0.01
    assert abs(shares[RANDOM] - 0.1) < 0.01
    assert abs(shares[KEPT] - 0.1) < 0.01


def test_specials_and_padding_never_chosen(big):
    ids, special, result = big
    assert (result.decisions[special] == NOT_CHOSEN).all()
    assert torch.equal(result.input_ids[special], ids[special])


def test_outputs_agree_with_decisions(big):
    ids, special, result = big
    decisions = result.decisions
    assert torch.equal(result.labels == -100, decisions == NOT_CHOSEN)
    assert torch.equal(result.labels[decisions != NOT_CHOSEN], ids[decisions != NOT_CHOSEN])
    assert (result.input_ids[decisions == MASKED] == MASK_ID).all()
    assert torch.equal(result.input_ids[decisions == KEPT], ids[decisions == KEPT])
    assert torch.equal(result.input_ids[decisions == NOT_CHOSEN], ids[decisions == NOT_CHOSEN])
    random_ids = result.input_ids[decisions == RANDOM]
    assert random_ids.min() >= 5 and random_ids.max() < VOCAB_SIZE  # drawn from random_token_ids only
    assert random_ids.unique().numel() > 900  # spread over the pool, not a constant
    assert result.input_ids.shape == result.labels.shape == result.decisions.shape == ids.shape


def test_input_is_not_modified():
    ids, special = _batch(rows=4, length=30, pad_from=25)
    before = ids.clone()
    _mask(ids, special)
    assert torch.equal(ids, before)


def test_same_seed_same_result_other_seed_differs():
    ids, special = _batch(rows=8, length=64, pad_from=50)
    first = _mask(ids, special, seed=7)
    again = _mask(ids, special, seed=7)
    other = _mask(ids, special, seed=8)
    assert torch.equal(first.input_ids, again.input_ids) and torch.equal(first.decisions, again.decisions)
    assert not torch.equal(first.decisions, other.decisions)


def test_random_tokens_default_to_whole_vocabulary():
    ids, special = _batch(rows=500, length=100, pad_from=100)
    result = _mask(ids, special, mask_prob=0.9)
    random_ids = result.input_ids[result.decisions == RANDOM]
    assert random_ids.min() < 5  # specials can be drawn when no pool is given


def test_attention_mask_excludes_positions():
    ids, special = _batch(rows=200, length=50, pad_from=50)
    attention_mask = torch.ones_like(ids)
    attention_mask[:, 30:] = 0
    result = _mask(ids, special, mask_prob=0.5, attention_mask=attention_mask)
    assert (result.decisions[:, 30:] == NOT_CHOSEN).all()
    assert (result.decisions[:, 1:30] != NOT_CHOSEN).float().mean() > 0.4


def test_one_dimensional_input():
    ids = torch.tensor([CLS_ID, 10, 11, 12, 13, SEP_ID])
    special = torch.tensor([1, 0, 0, 0, 0, 1], dtype=torch.bool)
    result = _mask(ids, special, mask_prob=0.99)
    assert result.decisions.shape == (6,)
    assert result.decisions[0] == result.decisions[-1] == NOT_CHOSEN


@pytest.mark.parametrize("mask_prob", [0.0, 1.0, -0.1, 1.5])
def test_bad_mask_prob(mask_prob):
    ids, special = _batch(rows=2, length=10, pad_from=8)
    with pytest.raises(ValueError, match=rf"mask_prob \({mask_prob}\)"):
        _mask(ids, special, mask_prob=mask_prob)


def test_shape_mismatch_is_refused():
    ids, special = _batch(rows=2, length=10, pad_from=8)
    with pytest.raises(ValueError, match="special_tokens_mask has shape"):
        _mask(ids, special[:, :5])


def _words_batch(rows: int = 4000) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """[CLS] w1 w1## w1## w2 w2## [SEP] b1## b1## [SEP] [PAD]: words of 3, 2 and 2 pieces (b1 starts segment B)."""
    ids = torch.tensor([[CLS_ID, 10, 11, 12, 20, 21, SEP_ID, 30, 31, SEP_ID, PAD_ID]]).repeat(rows, 1)
    special = torch.tensor([[1, 0, 0, 0, 0, 0, 1, 0, 0, 1, 1]], dtype=torch.bool).repeat(rows, 1)
    continuation = torch.tensor([[0, 0, 1, 1, 0, 1, 0, 1, 1, 0, 0]], dtype=torch.bool).repeat(rows, 1)
    return ids, special, continuation


def test_whole_word_masking_chooses_all_pieces_of_a_word_together():
    ids, special, continuation = _words_batch()
    chosen = _mask(ids, special, continuation_mask=continuation).labels != -100
    words = ([1, 2, 3], [4, 5], [7, 8])  # a "##" piece right after [SEP] starts a word of its own
    for word in words:
        assert (chosen[:, word] == chosen[:, word[:1]]).all()
        assert chosen[:, word[0]].float().mean().item() == pytest.approx(
            0.15, abs=0.02
        )  # each word with mask_prob
    assert not chosen[:, [0, 6, 9, 10]].any()
    assert (chosen[:, 1] != chosen[:, 4]).any()  # words are drawn independently


def test_whole_word_masking_keeps_the_80_10_10_rule_per_token():
    ids, special, continuation = _words_batch(20000)
    result = _mask(ids, special, continuation_mask=continuation, random_token_ids=torch.arange(5, VOCAB_SIZE))
    decisions = result.decisions[result.labels != -100]
    assert (decisions == MASKED).float().mean().item() == pytest.approx(0.8, abs=0.02)
    assert (decisions == RANDOM).float().mean().item() == pytest.approx(0.1, abs=0.02)


def test_whole_word_masking_on_one_sentence():
    ids, special, continuation = (t[0] for t in _words_batch(1))
    chosen = _mask(ids, special, seed=3, mask_prob=0.9, continuation_mask=continuation).labels != -100
    assert chosen.shape == ids.shape
    assert chosen[1] == chosen[2] == chosen[3] and chosen[4] == chosen[5]


def _repeats_batch(rows: int = 4000) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """[CLS] dog dog## cat [SEP] the dog dog## cat cat [SEP]: word 10+11 twice, word 20 three times."""
    ids = torch.tensor([[CLS_ID, 10, 11, 20, SEP_ID, 30, 10, 11, 20, 20, SEP_ID]]).repeat(rows, 1)
    special = torch.tensor([[1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1]], dtype=torch.bool).repeat(rows, 1)
    continuation = torch.tensor([[0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0]], dtype=torch.bool).repeat(rows, 1)
    return ids, special, continuation


def test_mask_repeats_masks_every_occurrence_of_a_chosen_word_so_none_is_left_to_copy():
    ids, special, continuation = _repeats_batch()
    every = torch.ones_like(ids, dtype=torch.bool)
    chosen = _mask(ids, special, continuation_mask=continuation, repeatable_mask=every).labels != -100
    for word in ([1, 2, 6, 7], [3, 8, 9]):  # every piece of every occurrence, chosen together
        assert (chosen[:, word] == chosen[:, word[:1]]).all()
    # a word of three occurrences is chosen when any one of them is drawn: 1 - 0.85 ** 3
    assert chosen[:, 3].float().mean().item() == pytest.approx(1 - 0.85**3, abs=0.025)
    assert chosen[:, 5].float().mean().item() == pytest.approx(0.15, abs=0.02)  # a word that occurs once
    assert not chosen[:, [0, 4, 10]].any()
    plain = _mask(ids, special, continuation_mask=continuation).labels != -100
    assert (plain[:, 3] != plain[:, 8]).any()  # without the option, occurrences are drawn one by one


def test_mask_repeats_without_whole_words_matches_tokens():
    ids, special, _ = _repeats_batch()
    chosen = _mask(ids, special, repeatable_mask=torch.ones_like(ids, dtype=torch.bool)).labels != -100
    assert (chosen[:, 1] == chosen[:, 6]).all() and (chosen[:, 2] == chosen[:, 7]).all()
    assert (chosen[:, 1] != chosen[:, 2]).any()  # pieces are tokens of their own here


def test_only_repeatable_words_are_masked_at_every_occurrence():
    ids, special, continuation = _repeats_batch()
    repeatable = ids == 20  # "cat" is a content word here, "dog" is not
    chosen = _mask(ids, special, continuation_mask=continuation, repeatable_mask=repeatable).labels != -100
    assert (chosen[:, [3, 8, 9]] == chosen[:, [3]]).all()
    assert (chosen[:, 1] != chosen[:, 6]).any() and (chosen[:, [1, 2]] == chosen[:, [1]]).all()
