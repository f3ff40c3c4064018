"""A run's data: the corpus, the WordPiece vocabulary, next-sentence pairs, the probe pair and the batch order."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
import torch.distributed as torch_dist

from bertviz_lite.text.corpora import english_corpus, everyday_corpus
from bertviz_lite.text.pretraining_data import (
    PretrainingCollator,
    builtin_corpus,
    make_nsp_pairs,
    read_corpus,
    split_train_eval,
)
from bertviz_lite.text.tokenization import BertTokenizer
from bertviz_lite.training.distributed import Distributed
from bertviz_lite.training.training_args import OptionError, TrainingArguments


def load_documents(args: TrainingArguments) -> list[list[str]]:
    """The built-in stories, or the documents of the corpus file; OptionError("corpus") if unusable."""
    try:
        if args.corpus == "builtin":
            return builtin_corpus(seed=args.seed, num_documents=args.num_documents)
        if args.corpus == "english":
            return english_corpus()
        if args.corpus == "everyday":
            return everyday_corpus()
        if args.corpus == "english+everyday":
            return english_corpus() + everyday_corpus()
        return read_corpus(args.corpus)
    except (OSError, ValueError) as err:
        raise OptionError("corpus", f"corpus ({args.corpus!r}): {err}") from None


def probe_pair(documents: Sequence[Sequence[str]]) -> tuple[str, str]:
    """The fixed sentence pair whose attention is snapshotted: the first two sentences of the first story."""
    return next((doc[0], doc[1]) for doc in documents if len(doc) >= 2)


def batch_indices(
    num_items: int, batch_size: int, seed: int, rank: int = 0, world_size: int = 1
) -> Iterator[list[int]]:
    """Endless batches of indices: a new shuffle each epoch, each rank its own equal shard, no partial batch."""
    check_batch_size(batch_size, num_items, world_size)
    return _epochs(num_items, batch_size, seed, rank, world_size)


def check_batch_size(batch_size: int, num_train_pairs: int, world_size: int = 1) -> None:
    """A batch must fit in each process's share of the training pairs (the Train form asks this too)."""
    per_rank = num_train_pairs // world_size
    share = "of the corpus" if world_size == 1 else f"that each of the {world_size} processes gets"
    if per_rank < batch_size:
        raise OptionError(
            "batch_size",
            f"batch_size ({batch_size}) is more than the {per_rank} training pairs "
            f"{share}: use a smaller batch or a bigger corpus",
        )


def _epochs(num_items: int, batch_size: int, seed: int, rank: int, world_size: int) -> Iterator[list[int]]:
    per_rank = num_items // world_size
    epoch = 0
    while True:
        order = torch.randperm(num_items, generator=torch.Generator().manual_seed(seed + epoch))
        shard = order[: per_rank * world_size][rank::world_size].tolist()
        for start in range(0, per_rank - batch_size + 1, batch_size):
            yield shard[start : start + batch_size]
        epoch += 1


def train_tokenizer(documents: list[list[str]], vocab_size: int, distributed: Distributed) -> BertTokenizer:
    """WordPiece vocabulary learnt from the corpus; under torchrun rank 0's is sent to every rank."""
    vocab = [None]
    if distributed.is_main:
        try:
            tokenizer = BertTokenizer.train([s for doc in documents for s in doc], vocab_size)
        except ValueError as err:
            raise OptionError("vocab_size", str(err)) from None
        vocab = [tokenizer.vocab]
    if distributed.enabled:
        torch_dist.broadcast_object_list(vocab, src=0)
    return BertTokenizer(vocab[0])


@dataclass
class TrainingData:
    """What a run trains and evaluates on, prepared before the Trainer starts."""

    tokenizer: BertTokenizer
    train_pairs: list[tuple[str, str, int]]  # (sentence A, sentence B, next_sentence_label)
    eval_pairs: list[tuple[str, str, int]]
    probe: tuple[str, str]  # the pair whose attention and predictions are snapshotted


def prepare_data(
    args: TrainingArguments, documents: list[list[str]], tokenizer: BertTokenizer
) -> TrainingData:
    """Next-sentence pairs split into training and held-out ones (at most args.eval_pairs of those)."""
    try:
        pairs = make_nsp_pairs(documents, seed=args.seed)
        train_pairs, eval_pairs = split_train_eval(pairs, args.eval_fraction, args.seed)
    except ValueError as err:
        raise OptionError("corpus", f"corpus ({args.corpus!r}): {err}") from None
    return TrainingData(tokenizer, train_pairs, eval_pairs[: args.eval_pairs], probe_pair(documents))


def collator(args: TrainingArguments, tokenizer: BertTokenizer, static: bool = False) -> PretrainingCollator:
    """Builds masked batches of args.seq_len tokens, masking args.mask_prob of them (of whole words with --whole-word-mask);
    with `static`, every batch is padded to args.seq_len (a compiled step's one shape)."""
    return PretrainingCollator(
        tokenizer,
        args.seq_len,
        args.mask_prob,
        whole_word_mask=args.whole_word_mask,
        mask_repeats=args.mask_repeats,
        single_fraction=args.single_sentences,
        pad_to_max_length=static,
    )
