"""The training memory estimate against the memory a few real steps use: limits.training_memory_bytes, the number the
Train form's budget check reads, beside the growth of a fresh process's peak resident memory over a few optimizer
steps (the model built, AdamW, forward, backward, clip, update: training/optimization.py's own step), on CPU.

    python bench/train_memory_estimate.py              # random valid forms (seed 0) and BERT-sized ones
    python bench/train_memory_estimate.py --smoke      # one tiny random form (the smoke test)

One line per form, key=value: its sizes, estimate_mb, measured_mb, ratio (estimate / measured); last a summary line
with the smallest and largest ratio. The budget holds when every ratio lies in [0.5, 2].
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench._smoke import add_smoke_flag  # noqa: E402
from bertviz_lite import limits  # noqa: E402
from bertviz_lite.model.config import BertConfig  # noqa: E402

MB = 1 << 20
# Run in a fresh interpreter: per form, the resident memory before the model is built (everything of the form before
# freed and given back to the system), then the peak after its steps.
CHILD = r"""
import ctypes, gc, json, sys, torch
from bertviz_lite.model.config import BertConfig
from bertviz_lite.model.modeling import BertForPreTraining
from bertviz_lite.training.optimization import PretrainingStep, make_optimizer, optimizer_step

def kib(field):
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith(field + ":"))

def grown_kib(form):
    torch.manual_seed(0)
    config = BertConfig(**form["config"])
    b, t, v = form["batch_size"], form["seq_len"], config.vocab_size
    batch = {"input_ids": torch.randint(5, v, (b, t)), "attention_mask": torch.ones(b, t, dtype=torch.long),
             "token_type_ids": (torch.arange(t) >= t // 2).long().expand(b, t),
             "next_sentence_label": torch.randint(0, 2, (b,))}
    batch["labels"] = torch.where(torch.rand(b, t) < 0.15, batch["input_ids"], torch.full((b, t), -100))
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    before = kib("VmRSS")
    open("/proc/self/clear_refs", "w").write("5")  # the peak starts again from here
    model = BertForPreTraining(config).train()
    step, optimizer = PretrainingStep(model), make_optimizer(model, 1e-4, 0.01)
    for _ in range(form["steps"]):
        optimizer_step(step, optimizer, batch, 1.0, dtype="fp32")
    return kib("VmHWM") - before

torch.set_num_threads(1)
print(json.dumps([grown_kib(form) for form in json.loads(sys.argv[1])]))
"""


def measured_bytes(forms: list[dict]) -> list[int]:
    """Per form, the peak resident memory a process grows by over its steps (model, optimizer and steps), all forms
    in one fresh process: the first pays the runtime's own first-step memory, the next reuse it."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(forms)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        cwd=REPO,
    ).stdout
    return [kib * 1024 for kib in json.loads(out.splitlines()[-1])]


def estimate_bytes(form: dict) -> int:
    """What the Train form's budget check estimates for this form."""
    return limits.training_memory_bytes(BertConfig(**form["config"]), form["batch_size"], form["seq_len"])


def random_form(rng: random.Random, steps: int = 3, tiny: bool = False) -> dict:
    """A valid form of sizes a visitor may choose, that a 2-core machine steps in seconds (`tiny`: in a second)."""
    heads = rng.choice([2, 4] if tiny else [2, 4, 8])
    hidden = heads * rng.choice([16, 32] if tiny else [16, 32, 64])
    config = {
        "vocab_size": rng.choice([1000, 4000] if tiny else [1000, 4000, 8000, 16000]),
        "hidden_size": hidden,
        "num_hidden_layers": rng.randint(1, 2 if tiny else 4),
        "num_attention_heads": heads,
        "intermediate_size": hidden * rng.choice([2, 4]),
        "max_position_embeddings": 512,
    }
    batch, seq_len = ([4, 8, 16], [16, 32, 64]) if tiny else ([8, 16, 32, 64], [32, 64, 128, 256])
    return {"config": config, "batch_size": rng.choice(batch), "seq_len": rng.choice(seq_len), "steps": steps}


def bert_forms(steps: int = 2) -> list[dict]:
    """BERT-sized forms: MiniLM's shape with its 30,522-token vocabulary, and BERT-base at batch 8."""
    minilm = {
        "vocab_size": 30522,
        "hidden_size": 384,
        "num_hidden_layers": 6,
        "num_attention_heads": 12,
        "intermediate_size": 1536,
        "max_position_embeddings": 512,
    }
    base = {
        "vocab_size": 30522,
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "intermediate_size": 3072,
        "max_position_embeddings": 512,
    }
    return [
        {"config": minilm, "batch_size": 64, "seq_len": 128, "steps": steps},
        {"config": base, "batch_size": 8, "seq_len": 128, "steps": steps},
    ]


def compare(forms: list[dict], workers: int = 1) -> list[dict]:
    """Each form's estimate, the growth of a fresh process over its steps (a run is a process of its own: the
    runtime's first-step memory is part of what it costs), and their ratio; `workers` processes at a time."""
    with ThreadPoolExecutor(workers) as pool:
        measured = list(pool.map(lambda form: measured_bytes([form])[0], forms))
    return [
        {
            "estimate_mb": estimate_bytes(form) / MB,
            "measured_mb": grown / MB,
            "ratio": estimate_bytes(form) / max(grown, 1),
        }
        for form, grown in zip(forms, measured, strict=True)
    ]


def line(form: dict, result: dict) -> str:
    c = form["config"]
    sizes = (
        f"hidden={c['hidden_size']} layers={c['num_hidden_layers']} heads={c['num_attention_heads']} "
        f"ffn={c['intermediate_size']} vocab={c['vocab_size']} batch={form['batch_size']} seq_len={form['seq_len']}"
    )
    return (
        f"{sizes} estimate_mb={result['estimate_mb']:.1f} measured_mb={result['measured_mb']:.1f} "
        f"ratio={result['ratio']:.2f}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--forms", type=int, default=10, help="random forms (default 10)")
    parser.add_argument(
        "--no-bert", action="store_true", help="leave out the MiniLM and BERT-base shaped forms"
    )
    parser.add_argument(
        "--tiny", action="store_true", help="random forms of the sizes a 2-core machine steps in a second"
    )
    add_smoke_flag(parser, argv, forms=1, no_bert=True, tiny=True)
    options = parser.parse_args(argv)
    rng = random.Random(0)
    forms = [random_form(rng, tiny=options.tiny) for _ in range(options.forms)]
    forms += [] if options.no_bert else bert_forms()
    ratios = []
    for form in forms:
        result = compare([form])[0]
        ratios.append(result["ratio"])
        print(line(form, result), flush=True)
    print(
        f"forms={len(forms)} min_ratio={min(ratios):.2f} max_ratio={max(ratios):.2f} "
        f"within_2x={all(0.5 <= r <= 2 for r in ratios)}"
    )


if __name__ == "__main__":
    main()
