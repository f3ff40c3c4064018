"""Latency of each Beyond-attention and Why-this-word view (data + figure) on minilm-english, and of its model runs
against transformers.

Every view is timed from a cached trace, as the page computes it: data_function(trace, **picks) and its
figure builder. Where transformers can do the same model work (a forward with heads zeroed, the leave-one-out
batch, the integrated-gradients forward and backward, both projecting only the explained position onto the
vocabulary), both run alternately in the same process with the same weights and threads, and the ratio
ours / transformers is printed (goal: <= 1.0). Goal per view: < 1.5 s at
32 tokens. transformers 5 has no head_mask argument: its heads are zeroed by a hook on BertSelfAttention.

Pseudo-log-likelihood of a 15-token sentence (goal < 0.5 s on one thread), ours against transformers running the
same masked copies in one batch. Activation patching (`--patching-tokens`, default 16): the full grids of a
clean/corrupted pair, ours batched per
layer and starting at the patched layer, against transformers running every patched input in full with a forward
hook that puts the clean state back (one batch of T inputs per layer, as TransformerLens would). Goal: the
layers × positions grid < 3 s on one thread at 16 tokens.

    python bench/explain_latency.py [--repeats 15] [--threads 1] [--lengths 32 64] [--patching-tokens 16]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._smoke import add_smoke_flag  # noqa: E402
from bertviz_lite import figures  # noqa: E402
from bertviz_lite.inspection import (  # noqa: E402
    attribution,
    explore,
    patching,
    views,
)
from bertviz_lite.loading.pretrained import ENGLISH, load  # noqa: E402
from bertviz_lite.loading.run_folder import CHECKPOINTS_DIR  # noqa: E402
from tests.reference import restore_hidden_hook, zero_heads_hooks  # noqa: E402

WORDS = (
    "the quick brown fox jumps over the lazy dog while a small bird sings in the tall green tree "
    "and children play near the old river bank on a warm summer afternoon"
).split()
KNOCKED = ("L0H3", "L2H7", "L5H0", "L5H11")
STEPS = 32


def sentence_pair(num_tokens: int) -> tuple[str, str]:
    """Two sentences whose pair comes to about `num_tokens` WordPiece tokens (3 specials included)."""
    words = [WORDS[i % len(WORDS)] for i in range(max(2, num_tokens - 3))]
    half = len(words) // 2
    return " ".join(words[:half]) + ".", " ".join(words[half:]) + "."


def median_ms(fn, repeats: int, warm_up: bool = True) -> float:
    if warm_up:
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def interleaved_medians(ours, theirs, repeats: int, warm_up: bool = True) -> tuple[float, float]:
    """Alternate the two calls so that load on the machine falls on both alike; medians in ms."""
    if warm_up:
        ours(), theirs()
    pairs = []
    for _ in range(repeats):
        start = time.perf_counter()
        ours()
        middle = time.perf_counter()
        theirs()
        pairs.append(((middle - start) * 1e3, (time.perf_counter() - middle) * 1e3))
    return statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)


def view_timers(trace: explore.PairTrace, position: int, steps: int = STEPS) -> dict:
    """name -> a call that computes one view's data and draws its figure, as the page does."""

    def timer(data_function, figure, **params):
        return lambda: figure(data_function(trace, **params))

    return {
        "norm-weighted attention (all heads)": timer(
            views.norm_attention, figures.norm_attention_figure, layer=2
        ),
        "norm-weighted attention (one head)": timer(
            views.norm_attention, figures.norm_attention_figure, layer=2, head=0
        ),
        "[CLS]/[SEP] share by layer": timer(
            views.special_share_by_layer, figures.special_share_by_layer_figure
        ),
        "attribution, MLM": timer(
            views.token_attribution, figures.token_attribution_figure, position=position, steps=steps
        ),
        "attribution, NSP": timer(
            views.token_attribution, figures.token_attribution_figure, position=None, steps=steps
        ),
        "head knock-out (4 heads)": timer(
            views.head_knockout, figures.head_knockout_figure, heads=KNOCKED, position=position
        ),
        "layer by layer, MLM": timer(views.logit_lens, figures.logit_lens_figure, position=position),
    }


def transformers_pairs(model, tokenizer, reference, inputs: dict, position: int, steps: int = STEPS) -> dict:
    """name -> (ours, transformers) calls that do the same model work."""
    ids = inputs["input_ids"]
    segments = inputs["token_type_ids"]
    mask = inputs["attention_mask"]
    length = ids.shape[1]
    target_id = int(model.trace(ids, segments, mask).mlm_logits[0, position].argmax())
    target = attribution.Target(position, target_id)
    head_mask = attribution.head_mask(
        KNOCKED, model.config.num_hidden_layers, model.config.num_attention_heads
    )
    variants = ids.repeat(length + 1, 1)
    variants[torch.arange(length), torch.arange(length)] = tokenizer.mask_token_id
    baseline = torch.full_like(ids, tokenizer.mask_token_id)
    word = reference.bert.embeddings.word_embeddings
    alphas = torch.linspace(0, 1, steps + 1)[:, None, None]

    def hf_knockout():
        with torch.inference_mode():
            reference(**inputs)

    def target_log_probs(
        **encoder_inputs,
    ):  # the vocabulary projection at the explained position only, as ours
        hidden = reference.bert(**encoder_inputs).last_hidden_state
        return torch.log_softmax(reference.cls.predictions(hidden[:, position]), -1)[:, target_id]

    def hf_leave_one_out():
        with torch.inference_mode():
            target_log_probs(input_ids=variants, token_type_ids=segments.expand_as(variants))

    def hf_integrated_gradients():
        with torch.no_grad():
            x = word(ids)
            x0 = word(baseline)
        points = (x0 + alphas * (x - x0)).requires_grad_(True)
        score = target_log_probs(inputs_embeds=points, token_type_ids=segments.expand(steps + 1, -1)).sum()
        torch.autograd.grad(score, points)

    return {
        "forward with 4 heads zeroed": (
            lambda: model.trace(ids, segments, mask, head_mask=head_mask),
            hf_knockout,
        ),
        f"leave-one-out batch ({length + 1} inputs)": (
            lambda: attribution.leave_one_out(model, ids, segments, mask, target, tokenizer.mask_token_id),
            hf_leave_one_out,
        ),
        f"integrated gradients ({steps} steps)": (
            lambda: attribution.integrated_gradients(model, ids, segments, mask, target, baseline, steps),
            hf_integrated_gradients,
        ),
    }


def patching_pair(tokenizer, num_tokens: int) -> tuple[str, str, str, str]:
    """A clean/corrupted pair of num_tokens tokens each (specials included) differing in the subject, with a [MASK]."""
    filler = [WORDS[i % len(WORDS)] for i in range(max(0, num_tokens - 10))]
    clean = " ".join([*filler, "and", "paris", "is", "the", "capital", "of", "[MASK]", "."])
    corrupted = clean.replace("paris", "rome", 1)
    lengths = {len(tokenizer.encode_pair(text, None)) for text in (clean, corrupted)}
    if lengths != {num_tokens}:
        raise ValueError(f"the patching pair has {lengths} tokens, not {num_tokens}")
    return clean, corrupted, "france", "italy"


def hf_patching_grid(reference, clean_ids, corrupted_ids, position: int, pair: list[int]) -> list:
    """The layers × positions grid with transformers: per layer, T full runs, row p restoring position p by a hook."""
    length = clean_ids.shape[1]
    with torch.inference_mode():
        clean_states = reference.bert(input_ids=clean_ids, output_hidden_states=True).hidden_states
        rows = []
        for layer in range(reference.config.num_hidden_layers + 1):
            hook = restore_hidden_hook(
                reference, layer, torch.eye(length, dtype=torch.bool), clean_states[layer]
            )
            try:
                hidden = reference.bert(input_ids=corrupted_ids.expand(length, -1)).last_hidden_state[
                    :, position
                ]
            finally:
                hook.remove()
            logits = reference.cls.predictions(hidden)[
                :, pair
            ]  # the head on the explained position only, as ours
            rows.append(logits[:, 0] - logits[:, 1])
    return rows


def hf_head_grid(reference, clean_ids, corrupted_ids, position: int, pair: list[int]) -> list:
    """The layers × heads grid with transformers: per layer, nh full runs, row h restoring head h's context."""
    config = reference.config
    heads = config.num_attention_heads
    size = config.hidden_size // config.num_attention_heads
    clean_context = {}

    def keep(layer):
        def hook(module, args, output):
            clean_context[layer] = output[0]

        return hook

    def restore(select, layer):
        def hook(module, args, output):
            return (torch.where(select, clean_context[layer], output[0]), *output[1:])

        return hook

    attention = [layer.attention.self for layer in reference.bert.encoder.layer]
    select = torch.zeros(heads, 1, config.hidden_size, dtype=torch.bool)
    for head in range(heads):
        select[head, :, head * size : (head + 1) * size] = True
    rows = []
    with torch.inference_mode():
        handles = [module.register_forward_hook(keep(i)) for i, module in enumerate(attention)]
        reference.bert(input_ids=clean_ids)
        for handle in handles:
            handle.remove()
        for layer, module in enumerate(attention):
            handle = module.register_forward_hook(restore(select, layer))
            try:
                hidden = reference.bert(input_ids=corrupted_ids.expand(heads, -1)).last_hidden_state[
                    :, position
                ]
            finally:
                handle.remove()
            logits = reference.cls.predictions(hidden)[:, pair]
            rows.append(logits[:, 0] - logits[:, 1])
    return rows


def patching_rows(model, tokenizer, reference, num_tokens: int, repeats: int, warm_up: bool = True) -> float:
    """Print the patching views' latency and our grids against transformers'; returns the residual grid's ms."""
    clean, corrupted, target, foil = patching_pair(tokenizer, num_tokens)
    ids = [tokenizer.encode_pair(text, None).to_tensors()["input_ids"] for text in (clean, corrupted)]
    position = tokenizer.encode_pair(clean, None).tokens.index("[MASK]")
    pair = tokenizer.convert_tokens_to_ids([target, foil])
    chosen = attribution.Target(position, *pair)
    print(
        f"patching: {num_tokens} tokens, {model.config.num_hidden_layers} layers, {clean!r} / {corrupted!r}"
    )
    for site in (
        patching.SITES if num_tokens <= views.why_this_word.MAX_PATCHING_TOKENS else ()
    ):  # the page refuses more
        call = lambda site=site: figures.activation_patching_figure(  # noqa: E731
            views.activation_patching(
                model, tokenizer, text_a=clean, text_b=corrupted, target=target, foil=foil, site=site
            )
        )
        print(f"  view  patching grid, {site:<30s} {median_ms(call, repeats, warm_up):8.1f} ms")
    for name, data, figure in (
        ("contrast layer by layer", views.contrast_lens, figures.contrast_lens_figure),
        ("contrast attribution (LOO + IG 32)", views.contrast_attribution, figures.token_attribution_figure),
    ):
        call = lambda data=data, figure=figure: figure(  # noqa: E731
            data(model, tokenizer, text_a=clean, target=target, foil=foil)
        )
        print(f"  view  {name:<44s} {median_ms(call, repeats, warm_up):8.1f} ms")

    def ours(site):
        return lambda: patching.patching_grid(
            model, patching.record_run(model, ids[0]), patching.record_run(model, ids[1]), site, chosen
        )

    # Same numbers first: our grid and transformers' hooked runs agree.
    theirs = torch.stack(hf_patching_grid(reference, *ids, position, pair)).numpy()
    print(f"  residual grid, largest |ours − transformers| = {abs(ours('residual')() - theirs).max():.2e}")
    results = {}
    for name, site, hf in (
        ("layers × positions (residual stream)", "residual", hf_patching_grid),
        ("layers × heads (head outputs)", "head", hf_head_grid),
    ):
        ours_ms, theirs_ms = interleaved_medians(
            ours(site), lambda hf=hf: hf(reference, *ids, position, pair), repeats, warm_up
        )
        results[site] = ours_ms
        print(
            f"  model patching grid, {name:<40s} ours={ours_ms:8.1f} ms transformers={theirs_ms:8.1f} ms "
            f"ratio={ours_ms / theirs_ms:.3f}"
        )
    print(f"  residual grid at {num_tokens} tokens: {results['residual']:.0f} ms (goal < 3000 ms)")
    return results["residual"]


PLL_SENTENCE = "the keys to the cabinet in the hall are on the table."  # 15 tokens with [CLS] and [SEP]


def pll_rows(model, tokenizer, reference, repeats: int, warm_up: bool = True) -> float:
    """Print the pseudo-log-likelihood's latency, ours against transformers masking the same copies; returns ours (ms)."""
    from bertviz_lite.inspection.minimal_pairs import pseudo_log_likelihood

    encoding = tokenizer.encode_pair(PLL_SENTENCE, None)
    ids = encoding.to_tensors()["input_ids"]
    positions = torch.arange(1, ids.shape[1] - 1)
    masked = ids.repeat(len(positions), 1)
    masked[torch.arange(len(positions)), positions] = tokenizer.mask_token_id

    def theirs() -> float:
        with torch.inference_mode():
            logits = reference(input_ids=masked, token_type_ids=torch.zeros_like(masked)).prediction_logits
            picked = logits[torch.arange(len(positions)), positions].double().log_softmax(-1)
            return float(picked[torch.arange(len(positions)), ids[0, positions]].sum())

    ours_value = pseudo_log_likelihood(model, tokenizer, PLL_SENTENCE)
    theirs_value = theirs()
    print(
        f"pseudo-log-likelihood: {len(encoding)} tokens, {PLL_SENTENCE!r}: ours {ours_value:.4f}, "
        f"transformers {theirs_value:.4f}"
    )
    ours_ms, theirs_ms = interleaved_medians(
        lambda: pseudo_log_likelihood(model, tokenizer, PLL_SENTENCE), theirs, repeats, warm_up
    )
    print(
        f"  model pseudo-log-likelihood ({len(positions)} masked copies)        ours={ours_ms:8.1f} ms "
        f"transformers={theirs_ms:8.1f} ms ratio={ours_ms / theirs_ms:.3f} (goal < 500 ms)"
    )
    view = lambda: figures.pair_likelihood_figure(  # noqa: E731
        views.pair_likelihood(
            model,
            tokenizer,
            PLL_SENTENCE,
            PLL_SENTENCE.replace(" are ", " is "),
        )
    )
    print(f"  view  minimal pair (two sentences' PLL + figure)  {median_ms(view, repeats, warm_up):8.1f} ms")
    return ours_ms


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument(
        "--threads", type=int, default=1, help="the app's default (BERTVIZ_LITE_THREADS) is 1"
    )
    parser.add_argument("--lengths", type=int, nargs="*", default=[32, 64])
    parser.add_argument("--patching-tokens", type=int, nargs="*", default=[16])
    parser.add_argument(
        "--ig-steps", type=int, default=STEPS, help="integrated gradients' steps (the page's: 32)"
    )
    add_smoke_flag(parser, argv, repeats=1, lengths=[8], patching_tokens=[10], ig_steps=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    warm_up = not args.smoke  # the smoke run goes through the same calls once, cold

    from transformers import BertForPreTraining

    model, tokenizer = load(ENGLISH)
    reference = BertForPreTraining.from_pretrained(
        str(CHECKPOINTS_DIR / ENGLISH), attn_implementation="eager", dtype=torch.float32
    ).eval()
    print(f"torch={torch.__version__} threads={args.threads} repeats={args.repeats} model={ENGLISH}")
    worst_ratio = 0.0
    for length in args.lengths:
        pair = sentence_pair(length + 8)
        position = 3
        # a pair a little longer than `length`, truncated to exactly `length` tokens
        trace = explore.trace_pair(model, tokenizer, *pair, max_length=length, masked_positions=(position,))
        print(f"tokens={trace.num_tokens}")
        slowest = 0.0
        for name, call in view_timers(trace, position, args.ig_steps).items():
            ms = median_ms(call, args.repeats, warm_up)
            slowest = max(slowest, ms)
            print(f"  view  {name:<40s} {ms:8.1f} ms")
        print(f"  slowest view at {trace.num_tokens} tokens: {slowest:.1f} ms (goal < 1500 ms at 32 tokens)")
        inputs = {
            "input_ids": torch.as_tensor(trace.input_ids)[None],
            "token_type_ids": torch.as_tensor(trace.segments)[None],
            "attention_mask": torch.ones(1, trace.num_tokens, dtype=torch.long),
        }
        knocked = [tuple(int(n) for n in name[1:].split("H")) for name in KNOCKED]
        hooks = zero_heads_hooks(reference, knocked)
        try:
            for name, (ours, theirs) in transformers_pairs(
                model, tokenizer, reference, inputs, position, args.ig_steps
            ).items():
                if not name.startswith("forward"):
                    for hook in hooks:
                        hook.remove()
                    hooks = []
                ours_ms, theirs_ms = interleaved_medians(ours, theirs, args.repeats, warm_up)
                worst_ratio = max(worst_ratio, ours_ms / theirs_ms)
                print(
                    f"  model {name:<40s} ours={ours_ms:8.1f} ms transformers={theirs_ms:8.1f} ms "
                    f"ratio={ours_ms / theirs_ms:.3f}"
                )
        finally:
            for hook in hooks:
                hook.remove()
    for num_tokens in args.patching_tokens:
        patching_rows(model, tokenizer, reference, num_tokens, args.repeats, warm_up)
    pll_rows(model, tokenizer, reference, args.repeats, warm_up)
    print(f"worst_ratio={worst_ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
