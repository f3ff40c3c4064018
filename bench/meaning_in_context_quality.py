"""Meaning in context, how well: do a model's contextual vectors tell WordNet's senses of a word apart, layer by layer,
better than the static input embedding? Leave-one-out nearest-centroid accuracy (inspection/word_vectors.py) over the
labelled example sentences of 40 polysemous words, averaged over the words (each word counts once).

Goal for minilm-english: the best layer at least 20 points above the static baseline. Prints key=value lines.

    python bench/meaning_in_context_quality.py [--models minilm-english demo-tiny] [--threads 1]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._smoke import add_smoke_flag  # noqa: E402
from bertviz_lite.inspection.views import meaning_in_context as meaning  # noqa: E402
from bertviz_lite.loading.pretrained import load  # noqa: E402
from bertviz_lite.text.corpora.senses import sense_index  # noqa: E402

# Common polysemous words, each with at least two WordNet senses illustrated by two example sentences or more.
WORDS = (
    "play",
    "work",
    "fall",
    "make",
    "hold",
    "leave",
    "clear",
    "give",
    "hot",
    "close",
    "call",
    "turn",
    "light",
    "carry",
    "take",
    "strike",
    "break",
    "right",
    "see",
    "keep",
    "come",
    "get",
    "serve",
    "go",
    "run",
    "feel",
    "cold",
    "open",
    "catch",
    "pull",
    "draw",
    "fit",
    "line",
    "head",
    "beat",
    "time",
    "set",
    "point",
    "sound",
    "bank",
)
GOAL_POINTS = 20.0


def word_scores(model, tokenizer, index, word: str) -> meaning.SenseSeparation:
    """The word's separation on its labelled sentences only (the unlabelled ones are not scored anyway)."""
    data = meaning.word_contexts(model, tokenizer, index, word, limit=len(index.by_word[word]))
    return meaning.sense_separation(data)


def report(source: str, scores: list[meaning.SenseSeparation], seconds: float) -> None:
    per_layer = np.nanmean([s.accuracy for s in scores], axis=0)
    static = float(np.nanmean([s.static for s in scores]))
    chance = float(np.nanmean([s.chance for s in scores]))
    best = int(np.argmax(per_layer))
    gain = (per_layer[best] - static) * 100
    print(
        f"model={source} words={len(scores)} sentences={sum(s.num_scored for s in scores)} "
        f"senses_per_word={np.mean([s.num_senses for s in scores]):.1f} seconds={seconds:.0f}"
    )
    print(
        f"static_sense_accuracy={static:.3f} chance_accuracy={chance:.3f} best_layer={best} "
        f"best_layer_sense_accuracy={per_layer[best]:.3f} gain_points={gain:.1f} "
        f"goal_points={GOAL_POINTS:.0f} met={gain >= GOAL_POINTS}"
    )
    print("per_layer_accuracy=" + ",".join(f"{value:.3f}" for value in per_layer))
    wins = sum(np.nanmax(s.accuracy) > s.static for s in scores)
    print(f"words_where_some_layer_beats_static={wins}/{len(scores)}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=["minilm-english", "demo-tiny"])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--words", nargs="+", default=list(WORDS), help="the polysemous words scored (default: 40)"
    )
    add_smoke_flag(parser, argv, models=["demo-tiny"], words=["bank", "fit"])
    options = parser.parse_args(argv)
    torch.set_num_threads(options.threads)
    index = sense_index()
    for source in options.models:
        model, tokenizer = load(source)
        start = time.perf_counter()
        scores = [word_scores(model, tokenizer, index, word) for word in options.words]
        report(source, scores, time.perf_counter() - start)


if __name__ == "__main__":
    main()
