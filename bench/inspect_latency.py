"""Latency of `BertForPreTraining.trace` vs transformers' `BertModel(..., output_attentions=True)` on all-MiniLM-L6-v2.

Both models hold the same real weights and run the same inputs, in the same process, with the same
thread count. For each length we time many calls alternately and print medians and the ratio
ours / transformers (goal: <= 1.0).

    python bench/inspect_latency.py [--repeats 30] [--threads N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from functools import partial
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._smoke import add_smoke_flag  # noqa: E402
from bertviz_lite.loading.pretrained import load, minilm_dir  # noqa: E402

WORDS = (
    "the quick brown fox jumps over the lazy dog while a small bird sings in the tall green tree "
    "and children play near the old river bank on a warm summer afternoon"
).split()


def sentence_pair(num_tokens: int) -> tuple[str, str]:
    """Two sentences whose pair comes to about `num_tokens` WordPiece tokens (3 specials included)."""
    words = [WORDS[i % len(WORDS)] for i in range(max(2, num_tokens - 3))]
    half = len(words) // 2
    return " ".join(words[:half]) + ".", " ".join(words[half:]) + "."


def timed_ms(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def interleaved_medians(ours, theirs, repeats: int) -> tuple[float, float]:
    """Alternate the two calls so that load on the machine falls on both alike; medians in ms."""
    ours(), theirs()  # warm-up
    pairs = [(timed_ms(ours), timed_ms(theirs)) for _ in range(repeats)]
    return statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--lengths", type=int, nargs="+", default=[20, 50, 170])
    add_smoke_flag(parser, argv, repeats=1, lengths=[8], threads=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    from transformers import BertModel

    model, tokenizer = load("all-MiniLM-L6-v2")
    reference = BertModel.from_pretrained(str(minilm_dir()), attn_implementation="eager").eval()
    print(f"torch={torch.__version__} threads={args.threads} repeats={args.repeats}")
    ratios = []
    for length in args.lengths:
        enc = tokenizer.encode_pair(*sentence_pair(length), max_length=512)
        inputs = enc.to_tensors()
        with torch.inference_mode():
            ours, theirs = interleaved_medians(
                partial(model.trace, **inputs),
                partial(reference, **inputs, output_attentions=True),
                args.repeats,
            )
        ratios.append(ours / theirs)
        print(
            f"tokens={len(enc.tokens)} ours_trace_ms={ours:.2f} transformers_ms={theirs:.2f} "
            f"ratio={ours / theirs:.3f}"
        )
    print(f"worst_ratio={max(ratios):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
