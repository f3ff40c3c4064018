"""Meaning in context, how long it takes: from a word to its data (sentences gathered, model run on them in batches,
separation per layer, projection), and the neighbour search over the whole sense index (its one-time build per
model and layer, the memory it holds, then one query).

Goal: under 2 s for a word with about 200 sentences on one thread. Prints key=value lines.

    python bench/meaning_in_context_latency.py [--model minilm-english] [--word go] [--threads 1] [--repeats 3] [--layers 6]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._smoke import add_smoke_flag  # noqa: E402
from bertviz_lite.inspection.views import meaning_in_context as meaning  # noqa: E402
from bertviz_lite.loading.pretrained import load  # noqa: E402
from bertviz_lite.text.corpora.senses import SenseIndex, sense_index  # noqa: E402

GOAL_S = 2.0


def word_to_data(model, tokenizer, index, word: str) -> meaning.WordContexts:
    """What the page computes for a new word before it draws (the last layer shown)."""
    data = meaning.word_contexts(model, tokenizer, index, word)
    meaning.sense_separation(data)
    meaning.context_projection(data, data.num_layers)
    return data


def timed(call) -> tuple[float, object]:
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="minilm-english")
    parser.add_argument("--word", default="go", help="a word with about 200 sentences in the index (go: 200)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--layers", type=int, nargs="*", default=None, help="index layers to build (default: last)"
    )
    parser.add_argument(
        "--pool-sentences",
        type=int,
        default=None,
        help="build the neighbour index over the first N sentences (default: all)",
    )
    add_smoke_flag(parser, argv, model="demo-tiny", word="bank", repeats=1, pool_sentences=200)
    options = parser.parse_args(argv)
    torch.set_num_threads(options.threads)
    model, tokenizer = load(options.model)
    index_seconds, index = timed(sense_index)
    print(f"model={options.model}\nthreads={options.threads}\nload_average={os.getloadavg()[0]:.1f}")
    print(f"index_read_s={index_seconds:.2f}\nindex_sentences={len(index.sentences)}")
    word_to_data(model, tokenizer, index, "bank")  # warm-up: allocator, tokenizer
    times = []
    data = None
    for _ in range(options.repeats):
        seconds, data = timed(lambda: word_to_data(model, tokenizer, index, options.word))
        times.append(seconds)
    median = statistics.median(times)
    print(
        f"word={options.word}\nsentences={len(data.occurrences)}\nword_to_data_s={median:.2f}\n"
        f"max_s={max(times):.2f}\ngoal_s={GOAL_S}\nmet={median < GOAL_S}"
    )
    pooled = (
        index if options.pool_sentences is None else SenseIndex(index.sentences[: options.pool_sentences])
    )
    for layer in options.layers or [model.config.num_hidden_layers]:
        seconds, pool = timed(lambda layer=layer: meaning.index_pool(model, tokenizer, pooled, layer))
        query_s, _ = timed(
            lambda pool=pool, layer=layer: meaning.nearest_neighbours(
                pool, data.vectors[layer, 0], 10, exclude=data.occurrences[0]
            )
        )
        print(
            f"index_pool_layer={layer}\nindex_pool_words={len(pool.occurrences)}\nindex_pool_build_s={seconds:.1f}\n"
            f"index_pool_memory_mb={pool.nbytes / 2**20:.1f}\nindex_pool_query_ms={query_s * 1e3:.0f}"
        )


if __name__ == "__main__":
    main()
