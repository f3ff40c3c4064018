"""Size, WordPiece coverage and duplication of a shipped corpus, as key=value lines (the figures in corpora/README.md).

    python bench/corpus_coverage.py                          # everyday.txt.gz with minilm-english's vocabulary
    python bench/corpus_coverage.py --corpus english --vocab checkpoints/minilm-english/vocab.txt

words_known: share of word tokens (as BERT's basic tokenizer splits them) that WordPiece spells without [UNK];
words_one_piece: share of them that are one vocabulary entry;
vocab_used: share of the vocabulary's entries that occur in the tokenised corpus; duplicate_sentences: share
of sentences that repeat an earlier one.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._smoke import add_smoke_flag  # noqa: E402
from bertviz_lite.text.corpora import ENGLISH_PATH, EVERYDAY_PATH, english_corpus  # noqa: E402
from bertviz_lite.text.tokenization import BertTokenizer  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PATHS = {"english": ENGLISH_PATH, "everyday": EVERYDAY_PATH}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", choices=tuple(PATHS), default="everyday")
    parser.add_argument("--vocab", type=Path, default=ROOT / "checkpoints" / "minilm-english" / "vocab.txt")
    parser.add_argument(
        "--documents", type=int, default=None, help="only the first N documents (default: all)"
    )
    add_smoke_flag(parser, argv, documents=50)
    args = parser.parse_args(argv)
    path = PATHS[args.corpus]
    documents = english_corpus(path)[: args.documents]
    sentences = [s for doc in documents for s in doc]
    tokenizer = BertTokenizer.from_vocab(args.vocab)
    counts = Counter(sentences)
    words = used = unknown = split = 0
    seen_ids: set[int] = set()
    for sentence, count in counts.items():
        encoding = tokenizer.encode_pair(sentence, None, max_length=512)
        pieces = encoding.input_ids[1:-1]
        seen_ids.update(pieces)
        word_ids = {w for w in encoding.word_ids if w is not None}
        unknown_words = {
            w
            for w, i in zip(encoding.word_ids, encoding.input_ids, strict=True)
            if w is not None and i == tokenizer.unk_token_id
        }
        words += len(word_ids) * count
        unknown += len(unknown_words) * count
        split += sum(n > 1 for n in Counter(w for w in encoding.word_ids if w is not None).values()) * count
    used = len(seen_ids - set(tokenizer.all_special_ids))
    print(f"corpus={path.name}")
    print(
        f"documents={len(documents)}\nsentences={len(sentences)}\nwords={sum(len(s.split()) for s in sentences)}"
    )
    print(f"compressed_mb={path.stat().st_size / 1e6:.2f}")
    print(f"words_known={1 - unknown / words:.5f} ({unknown} of {words} basic-tokenizer words give [UNK])")
    print(f"words_one_piece={1 - split / words:.4f} (the rest are spelt with 2 or more WordPiece pieces)")
    print(f"vocab_used={used / tokenizer.vocab_size:.4f} ({used} of {tokenizer.vocab_size} entries)")
    print(f"duplicate_sentences={1 - len(counts) / len(sentences):.4f}")


if __name__ == "__main__":
    main()
