"""Does the model know English? Fill-in-the-blank and next-sentence accuracy on a held-out set.

    python bench/fill_mask_quality.py                         # minilm-english, demo-tiny, all-MiniLM-L6-v2
    python bench/fill_mask_quality.py --models checkpoints/my-run

The set (bench/fill_mask_set.json) was written by hand: 65 everyday sentences with one [MASK] and
their acceptable answers, and 44 sentence pairs, half true continuations and half with B from an
unrelated text. None of its sentences is in the English training corpus (checked below). Goals for
the default model: top-5 >= 70%, NSP >= 85%.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._smoke import add_smoke_flag  # noqa: E402
from bertviz_lite import load  # noqa: E402
from bertviz_lite.inspection.evaluation import fill_mask, is_next_probability  # noqa: E402
from bertviz_lite.loading.pretrained import DEFAULT_MODEL, DEMO, MINILM  # noqa: E402
from bertviz_lite.text.corpora import english_corpus  # noqa: E402

SET_PATH = Path(__file__).resolve().parent / "fill_mask_set.json"
GOALS = {"top5": 0.70, "nsp": 0.85}


def _normal(text: str) -> str:
    return re.sub(r"[^a-z ]", "", text.lower()).strip()


def overlap_with_corpus(held_out: dict) -> int:
    """How many held-out sentences (cloze sentences with an answer filled in, NSP sentences) occur in the corpus."""
    corpus = {_normal(sentence) for document in english_corpus() for sentence in document}
    texts = [
        item["text"].replace("[MASK]", answer) for item in held_out["cloze"] for answer in item["answers"]
    ]
    texts += [pair[key] for pair in held_out["nsp"] for key in ("a", "b")]
    return sum(_normal(text) in corpus for text in texts)


def cloze_scores(model, tokenizer, cloze: list[dict]) -> tuple[float, float, list[str]]:
    """(top-1 hit rate, top-5 hit rate, the sentences missed in the top 5 with the guesses)."""
    top1 = top5 = 0
    missed = []
    for item in cloze:
        guesses = [token for token, _ in fill_mask(model, tokenizer, item["text"], k=5)]
        top1 += guesses[0] in item["answers"]
        hit = any(guess in item["answers"] for guess in guesses)
        top5 += hit
        if not hit:
            missed.append(f"{item['text']} -> {', '.join(guesses)}")
    return top1 / len(cloze), top5 / len(cloze), missed


def nsp_accuracy(model, tokenizer, pairs: list[dict]) -> float:
    """Share of pairs where P(IsNext) > 0.5 agrees with the truth."""
    right = sum((is_next_probability(model, tokenizer, p["a"], p["b"]) > 0.5) == p["is_next"] for p in pairs)
    return right / len(pairs)


def evaluate(source: str, held_out: dict, verbose: bool) -> None:
    model, tokenizer = load(source)
    if not model.has_mlm_head:
        print(
            f"{source}: no trained MLM/NSP heads (an encoder fine-tuned for sentence embeddings): not scored"
        )
        return
    started = time.perf_counter()
    top1, top5, missed = cloze_scores(model, tokenizer, held_out["cloze"])
    nsp = nsp_accuracy(model, tokenizer, held_out["nsp"])
    seconds = time.perf_counter() - started
    print(
        f"{source}: top1={top1:.1%} top5={top5:.1%} (n={len(held_out['cloze'])}) "
        f"nsp={nsp:.1%} (n={len(held_out['nsp'])}) in {seconds:.1f} s"
    )
    name = Path(source).name.replace("-", "_").lower()
    print(
        f"{name}_top1={top1:.3f}\n{name}_top5={top5:.3f}\n{name}_nsp={nsp:.3f}\n{name}_seconds={seconds:.1f}"
    )
    if source == DEFAULT_MODEL:
        met = top5 >= GOALS["top5"] and nsp >= GOALS["nsp"]
        print(f"  goals top5>={GOALS['top5']:.0%} nsp>={GOALS['nsp']:.0%}: {'met' if met else 'NOT met'}")
    for line in missed if verbose else []:
        print(f"  missed: {line}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=[DEFAULT_MODEL, DEMO, MINILM])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--verbose", action="store_true", help="list the missed sentences")
    parser.add_argument(
        "--items", type=int, default=None, help="only the first N cloze sentences and NSP pairs"
    )
    add_smoke_flag(parser, argv, models=[DEMO], items=4, threads=1)
    options = parser.parse_args(argv)
    torch.set_num_threads(options.threads)
    held_out = json.loads(SET_PATH.read_text(encoding="utf-8"))
    held_out |= {part: held_out[part][: options.items] for part in ("cloze", "nsp")}
    overlap = overlap_with_corpus(held_out)
    print(f"held-out sentences found in the English corpus: {overlap}\noverlap={overlap}")
    for source in options.models:
        evaluate(source, held_out, options.verbose)


if __name__ == "__main__":
    main()
