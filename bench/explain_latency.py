"""Latency of each Beyond-attention view (data + figure) on minilm-english, and of its model runs against transformers.

Every view is timed from a cached trace, as the page computes it: explore.from_trace(data function) and its
figure builder. Where transformers can do the same model work (a forward with heads zeroed, the leave-one-out
batch, the integrated-gradients forward and backward, both projecting only the explained position onto the
vocabulary), both run alternately in the same process with the same weights and threads, and the ratio
ours / transformers is printed (goal: <= 1.0). Goal per view: < 1.5 s at
32 tokens. transformers 5 has no head_mask argument: its heads are zeroed by a hook on BertSelfAttention.

    python bench/explain_latency.py [--repeats 15] [--threads 1] [--lengths 32 64]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bertviz_lite import figures
from bertviz_lite.inspection import (
    attribution,
    explore,
    views,  # noqa: E402
)
from bertviz_lite.loading.pretrained import ENGLISH, load  # noqa: E402
from bertviz_lite.loading.run_folder import CHECKPOINTS_DIR
from tests.reference import zero_heads_hooks  # noqa: E402

WORDS = ("the quick brown fox jumps over the lazy dog while a small bird sings in the tall green tree "
         "and children play near the old river bank on a warm summer afternoon").split()
KNOCKED = ("L0H3", "L2H7", "L5H0", "L5H11")
STEPS = 32


def sentence_pair(num_tokens: int) -> tuple[str, str]:
    """Two sentences whose pair comes to about `num_tokens` WordPiece tokens (3 specials included)."""
    words = [WORDS[i % len(WORDS)] for i in range(max(2, num_tokens - 3))]
    half = len(words) // 2
    return " ".join(words[:half]) + ".", " ".join(words[half:]) + "."


def median_ms(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def interleaved_medians(ours, theirs, repeats: int) -> tuple[float, float]:
    """Alternate the two calls so that load on the machine falls on both alike; medians in ms."""
    ours(), theirs()
    pairs = []
    for _ in range(repeats):
        start = time.perf_counter()
        ours()
        middle = time.perf_counter()
        theirs()
        pairs.append(((middle - start) * 1e3, (time.perf_counter() - middle) * 1e3))
    return statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)


def view_timers(trace: explore.PairTrace, position: int) -> dict:
    """name -> a call that computes one view's data and draws its figure, as the page does."""
    def timer(data_function, figure, **params):
        return lambda: figure(explore.from_trace(data_function, trace, **params))

    return {
        "norm-weighted attention (all heads)": timer(views.norm_attention, figures.norm_heatmap, layer=2),
        "norm-weighted attention (one head)": timer(views.norm_attention, figures.norm_heatmap, layer=2, head=0),
        "[CLS]/[SEP] share by layer": timer(views.special_share_by_layer, figures.special_share_figure),
        "attribution, MLM": timer(views.token_attribution, figures.attribution_figure, position=position, steps=STEPS),
        "attribution, NSP": timer(views.token_attribution, figures.attribution_figure, position=None, steps=STEPS),
        "head knock-out (4 heads)": timer(views.head_knockout, figures.knockout_figure, heads=KNOCKED, position=position),
        "layer by layer, MLM": timer(views.logit_lens, figures.logit_lens_figure, position=position),
    }


def transformers_pairs(model, tokenizer, reference, inputs: dict, position: int) -> dict:
    """name -> (ours, transformers) calls that do the same model work."""
    ids, segments, mask = inputs["input_ids"], inputs["token_type_ids"], inputs["attention_mask"]
    length = ids.shape[1]
    target_id = int(model.trace(ids, segments, mask).mlm_logits[0, position].argmax())
    target = attribution.Target(position, target_id)
    head_mask = attribution.head_mask(KNOCKED, model.config.num_hidden_layers, model.config.num_attention_heads)
    variants = ids.repeat(length + 1, 1)
    variants[torch.arange(length), torch.arange(length)] = tokenizer.mask_token_id
    baseline = torch.full_like(ids, tokenizer.mask_token_id)
    word = reference.bert.embeddings.word_embeddings
    alphas = torch.linspace(0, 1, STEPS + 1)[:, None, None]

    def hf_knockout():
        with torch.inference_mode():
            reference(**inputs)

    def target_log_probs(**encoder_inputs):  # the vocabulary projection at the explained position only, as ours
        hidden = reference.bert(**encoder_inputs).last_hidden_state
        return torch.log_softmax(reference.cls.predictions(hidden[:, position]), -1)[:, target_id]

    def hf_leave_one_out():
        with torch.inference_mode():
            target_log_probs(input_ids=variants, token_type_ids=segments.expand_as(variants))

    def hf_integrated_gradients():
        with torch.no_grad():
            x, x0 = word(ids), word(baseline)
        points = (x0 + alphas * (x - x0)).requires_grad_(True)
        score = target_log_probs(inputs_embeds=points, token_type_ids=segments.expand(STEPS + 1, -1)).sum()
        torch.autograd.grad(score, points)

    return {
        "forward with 4 heads zeroed": (lambda: model.trace(ids, segments, mask, head_mask=head_mask), hf_knockout),
        f"leave-one-out batch ({length + 1} inputs)": (
            lambda: attribution.leave_one_out(model, ids, segments, mask, target, tokenizer.mask_token_id),
            hf_leave_one_out),
        f"integrated gradients ({STEPS} steps)": (
            lambda: attribution.integrated_gradients(model, ids, segments, mask, target, baseline, STEPS),
            hf_integrated_gradients),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--threads", type=int, default=1, help="the app's default (BERTVIZ_LITE_THREADS) is 1")
    parser.add_argument("--lengths", type=int, nargs="+", default=[32, 64])
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    from transformers import BertForPreTraining

    model, tokenizer = load(ENGLISH)
    reference = BertForPreTraining.from_pretrained(str(CHECKPOINTS_DIR / ENGLISH), attn_implementation="eager",
                                                   dtype=torch.float32).eval()
    print(f"torch={torch.__version__} threads={args.threads} repeats={args.repeats} model={ENGLISH}")
    worst_ratio = 0.0
    for length in args.lengths:
        pair = sentence_pair(length + 8)
        position = 3
        # a pair a little longer than `length`, truncated to exactly `length` tokens
        trace = explore.trace_pair(model, tokenizer, *pair, max_length=length, masked_positions=(position,))
        print(f"tokens={trace.num_tokens}")
        slowest = 0.0
        for name, call in view_timers(trace, position).items():
            ms = median_ms(call, args.repeats)
            slowest = max(slowest, ms)
            print(f"  view  {name:<40s} {ms:8.1f} ms")
        print(f"  slowest view at {trace.num_tokens} tokens: {slowest:.1f} ms (goal < 1500 ms at 32 tokens)")
        inputs = {"input_ids": torch.as_tensor(trace.input_ids)[None], "token_type_ids": torch.as_tensor(trace.segments)[None],
                  "attention_mask": torch.ones(1, trace.num_tokens, dtype=torch.long)}
        knocked = [tuple(int(n) for n in name[1:].split("H")) for name in KNOCKED]
        hooks = zero_heads_hooks(reference, knocked)
        try:
            for name, (ours, theirs) in transformers_pairs(model, tokenizer, reference, inputs, position).items():
                if not name.startswith("forward"):
                    for hook in hooks:
                        hook.remove()
                    hooks = []
                ours_ms, theirs_ms = interleaved_medians(ours, theirs, args.repeats)
                worst_ratio = max(worst_ratio, ours_ms / theirs_ms)
                print(f"  model {name:<40s} ours={ours_ms:8.1f} ms transformers={theirs_ms:8.1f} ms "
                      f"ratio={ours_ms / theirs_ms:.3f}")
        finally:
            for hook in hooks:
                hook.remove()
    print(f"worst_ratio={worst_ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
