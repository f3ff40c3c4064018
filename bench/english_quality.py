"""Would the model embarrass a lecturer? Everyday cloze, copy rate, NSP and minimal pairs, as key=value lines.

    python bench/english_quality.py                                   # minilm-english
    python bench/english_quality.py --model minilm-english --model /work/runs/english-v2

On held-out sentences written for this bench (bench/english_quality_set.json; none is in a shipped corpus,
which is checked and printed as overlap=):
- cloze_top1 / cloze_top5: the right word is the first / among the five first guesses (66 sentences);
- copy_rate: the first guess is a word of the sentence itself ("Bees make [MASK]." -> "bees");
- diagnostics, no goal: cloze_top1_without_copies (the first guess that is not a word of the sentence is right:
  what ending the copying alone would win) and cloze_top20 (the answer is among the 20 first guesses);
- nsp: P(IsNext) > 0.5 agrees with the truth (40 pairs, half IsNext);
- minimal_pairs: the grammatical sentence has the higher pseudo-log-likelihood (the built-in pairs of
  bertviz_lite.inspection.minimal_pairs, 124 from templates), overall and per phenomenon.
Goals of issue 18: top-1 >= 55%, top-5 >= 85%, copy rate <= 10%, NSP >= 85%, minimal pairs >= 75%.
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
from bertviz_lite.inspection.minimal_pairs import builtin_minimal_pairs, phenomena, prefers_good  # noqa: E402
from bertviz_lite.loading.pretrained import DEFAULT_MODEL  # noqa: E402
from bertviz_lite.text.corpora import english_corpus, everyday_corpus  # noqa: E402

SET_PATH = Path(__file__).resolve().parent / "english_quality_set.json"
GOALS = {
    "cloze_top1": (">=", 0.55),
    "cloze_top5": (">=", 0.85),
    "copy_rate": ("<=", 0.10),
    "nsp": (">=", 0.85),
    "minimal_pairs": (">=", 0.75),
}


def _normal(text: str) -> str:
    return re.sub(r"[^a-z ]", "", text.lower()).strip()


def overlap_with_corpora(held_out: dict) -> int:
    """How many held-out sentences (cloze filled with each answer, NSP sentences) occur in a shipped corpus."""
    corpus = {
        _normal(s) for documents in (english_corpus(), everyday_corpus()) for doc in documents for s in doc
    }
    texts = [
        item["text"].replace("[MASK]", answer) for item in held_out["cloze"] for answer in item["answers"]
    ]
    texts += [pair[key] for pair in held_out["nsp"] for key in ("a", "b")]
    return sum(_normal(text) in corpus for text in texts)


def sentence_words(text: str) -> set[str]:
    """The lower-cased words of a cloze sentence, [MASK] left out."""
    return set(re.findall(r"[a-z0-9']+", text.replace("[MASK]", " ").lower()))


def cloze_scores(model, tokenizer, cloze: list[dict]) -> dict[str, float | list[str]]:
    """Top-1 and top-5 hit rates, the copy rate, and the sentences whose first guess was wrong; two diagnostics:
    top-1 when words of the sentence are passed over (what the model knows once it may not copy) and top-20."""
    top1 = top5 = copies = top1_without_copies = top20 = 0
    wrong = []
    for item in cloze:
        guesses = [token for token, _ in fill_mask(model, tokenizer, item["text"], k=20)]
        words = sentence_words(item["text"])
        top1 += guesses[0] in item["answers"]
        top5 += any(guess in item["answers"] for guess in guesses[:5])
        top20 += any(guess in item["answers"] for guess in guesses)
        copies += guesses[0] in words
        top1_without_copies += next((g for g in guesses if g not in words), None) in item["answers"]
        if guesses[0] not in item["answers"]:
            wrong.append(f"{item['text']} -> {', '.join(guesses[:5])}")
    n = len(cloze)
    return {
        "cloze_top1": top1 / n,
        "cloze_top5": top5 / n,
        "copy_rate": copies / n,
        "cloze_top1_without_copies": top1_without_copies / n,
        "cloze_top20": top20 / n,
        "wrong": wrong,
    }


def nsp_accuracy(model, tokenizer, pairs: list[dict]) -> float:
    """Share of pairs where P(IsNext) > 0.5 agrees with the truth."""
    right = sum((is_next_probability(model, tokenizer, p["a"], p["b"]) > 0.5) == p["is_next"] for p in pairs)
    return right / len(pairs)


def minimal_pair_scores(model, tokenizer, limit: int | None = None) -> dict[str, float]:
    """Accuracy on the built-in minimal pairs (the first `limit`; None: all), overall and per phenomenon."""
    pairs = builtin_minimal_pairs()[:limit]
    right = {pair: prefers_good(model, tokenizer, pair) for pair in pairs}
    scores = {"minimal_pairs": sum(right.values()) / len(pairs)}
    for name in phenomena(pairs):
        mine = [ok for pair, ok in right.items() if pair.phenomenon == name]
        scores[f"minimal_pairs.{name}"] = sum(mine) / len(mine)
    return scores


def evaluate(source: str, held_out: dict, verbose: bool, limit: int | None = None) -> None:
    model, tokenizer = load(source)
    print(f"model={source}")
    if not model.has_mlm_head:
        print("scored=no (no trained MLM/NSP heads)")
        return
    started = time.perf_counter()
    cloze = cloze_scores(model, tokenizer, held_out["cloze"])
    scores = {
        **{k: v for k, v in cloze.items() if k != "wrong"},
        "nsp": nsp_accuracy(model, tokenizer, held_out["nsp"]),
        **minimal_pair_scores(model, tokenizer, limit),
    }
    for key, value in scores.items():
        print(f"{key}={value:.3f}")
    met = [
        key
        for key, (way, goal) in GOALS.items()
        if (scores[key] >= goal if way == ">=" else scores[key] <= goal)
    ]
    print(f"goals_met={len(met)}/{len(GOALS)} ({', '.join(met) or 'none'})")
    print(f"seconds={time.perf_counter() - started:.1f}")
    for line in cloze["wrong"] if verbose else []:
        print(f"  wrong: {line}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--model",
        action="append",
        help=f"a model name or folder; repeat to compare (default: {DEFAULT_MODEL})",
    )
    parser.add_argument("--threads", type=int, default=2, help="CPU threads for PyTorch (default: 2)")
    parser.add_argument(
        "--verbose", action="store_true", help="also list the cloze sentences whose first guess was wrong"
    )
    parser.add_argument(
        "--no-overlap-check", action="store_true", help="skip reading the corpora for overlap"
    )
    parser.add_argument(
        "--items",
        type=int,
        default=None,
        help="only the first N cloze sentences, NSP pairs and minimal pairs (default: all)",
    )
    add_smoke_flag(parser, argv, model=["demo-tiny"], items=4, threads=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    held_out = json.loads(SET_PATH.read_text(encoding="utf-8"))
    held_out |= {part: held_out[part][: args.items] for part in ("cloze", "nsp")}
    print(
        f"cloze_sentences={len(held_out['cloze'])}\nnsp_pairs={len(held_out['nsp'])}\n"
        f"minimal_pairs={len(builtin_minimal_pairs()[: args.items])}"
    )
    if not args.no_overlap_check:
        print(f"overlap={overlap_with_corpora(held_out)}")
    for source in args.model or [DEFAULT_MODEL]:
        evaluate(source, held_out, args.verbose, args.items)


if __name__ == "__main__":
    main()
