"""Training-step throughput: our BertForPreTraining against transformers' best (eager, sdpa, compiled), same batches.

    python bench/train_throughput.py                                   # small preset on the CPU, 2 threads
    python bench/train_throughput.py --size base --batch 64 --seq-len 128 --device cuda
    python bench/train_throughput.py --size base --batch 64 --device cuda --profile     # where a step's time goes
    python bench/train_throughput.py --ours eager compiled --theirs eager sdpa          # which sides run

Every side runs the trainer's `optimizer_step` (forward in bf16 as --dtype says: autocast, or for ours on the CPU a
bf16 copy of the weights as the trainer's, `--bf16-weights`; backward, clip to 1.0,
fused AdamW with BERT's weight-decay groups) on the same random-token batches (no padding, 15% of positions
labelled, NSP labels half and half), from the same initial weights, in interleaved repetitions; medians.
"ours" is the trainer's step: with `compiled`, the trainer's `--compile` step (the MLM rows found on the host,
one shape, training/compiled_step.py); `eager` the same step uncompiled. transformers gets its usual inputs
(labels at every position, -100 where not labelled) with attn_implementation eager or sdpa, and `compiled`
(sdpa under torch.compile). The ratio is our best against their best.

Prints key=value lines: one per side (tokens/s, share of the device's peak, peak memory, graphs compiled in warm-up
and recompilations while timed), then ours_tokens_per_s, transformers_tokens_per_s and, last,
speedup_vs_transformers. The share counts 6 x (non-embedding parameters + the MLM head on the labelled share) +
attention per token against the device's dense peak in PEAKS (unknown devices: no share).
With --profile, per side first: `profile=` (wall against device-busy ms per step, kernels, copies, CPU ops),
`profile_split=` (the busy ms per step by kernel category, KERNEL_CATEGORIES, with their sum) and TOP_KERNELS
`profile_top=` lines (the kernels that took longest); on a CPU the split and the top are of the ops' self-times.
"""

from __future__ import annotations

import argparse
import copy
import math
import re
import resource
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor, nn
from torch._dynamo.utils import counters

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._smoke import add_smoke_flag  # noqa: E402
from bertviz_lite.model.config import BertConfig  # noqa: E402
from bertviz_lite.model.loss_rows import IGNORE_INDEX  # noqa: E402
from bertviz_lite.model.modeling import BertForPreTraining  # noqa: E402
from bertviz_lite.training.compiled_step import RowCapacity, compiled, host_padded  # noqa: E402
from bertviz_lite.training.optimization import (  # noqa: E402
    Bf16Weights,
    PretrainingStep,
    cpu_has_bf16,
    make_optimizer,
    optimizer_step,
    steps_bf16_weights,
    use_bf16,
)
from bertviz_lite.training.presets import PRESETS  # noqa: E402
from bertviz_lite.training.training_args import DTYPES  # noqa: E402

SIZES = {
    "tiny": {**PRESETS["tiny"]["config"], "vocab_size": PRESETS["tiny"]["vocab_size"]},
    "small": {**PRESETS["small"]["config"], "vocab_size": PRESETS["small"]["vocab_size"]},
    "minilm": dict(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536),
    "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
    "large": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096),
}
# Dense (no sparsity) peak TFLOP/s by device name (torch.cuda.get_device_name), bf16 and float32 without TF32.
# Sources: NVIDIA's datasheets (H100: "H100 Tensor Core GPU" datasheet, SXM column, 1,979 TFLOP/s bf16 "with sparsity",
# so 989 dense, FP32 67; PCIe column 1,513 / 2 = 756 and 51; H200: the "H200 Tensor Core GPU" datasheet, same
# compute as H100 SXM; A100: "A100 Tensor Core GPU" datasheet, bf16 312 dense, FP32 19.5). First match wins.
PEAKS = (
    ("H100 PCIe", 756.0, 51.0, "NVIDIA H100 datasheet, PCIe"),
    ("H100", 989.0, 67.0, "NVIDIA H100 datasheet, SXM"),
    ("H200", 989.0, 67.0, "NVIDIA H200 datasheet"),
    ("A100", 312.0, 19.5, "NVIDIA A100 datasheet"),
)
DEFAULT_THEIRS = {
    "cpu": ("eager", "sdpa"),
    "cuda": ("eager", "sdpa", "compiled"),
}  # compiling theirs: minutes on a CPU
DEFAULT_OURS = {"cpu": ("eager",), "cuda": ("compiled",)}  # as --compile auto


class HuggingFaceStep(nn.Module):
    """transformers' BertForPreTraining with the batch as keyword arguments; returns (loss,)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, batch: dict[str, Tensor]) -> tuple[Tensor]:
        out = self.model(
            input_ids=batch["input_ids"],
            token_type_ids=batch["token_type_ids"],
            attention_mask=batch["attention_mask"],
            labels=batch["labels"],
            next_sentence_label=batch["next_sentence_label"],
        )
        return (out.loss,)


@dataclass
class Side:
    """One contestant: its step module, optimizer, batches (on the device) and what `optimizer_step` is told."""

    name: str
    module: nn.Module
    optimizer: torch.optim.Optimizer
    batches: list[dict[str, Tensor]]
    padded: bool | None = None
    bf16_weights: Bf16Weights | None = None  # ours with --dtype bf16 where the trainer takes the copy


def random_batches(num: int, batch: int, seq_len: int, vocab: int, seed: int = 0) -> list[dict[str, Tensor]]:
    """Host batches of random tokens: [CLS] first, segment B on the second half, 15% of the rest labelled."""
    generator = torch.Generator().manual_seed(seed)
    made = []
    for _ in range(num):
        ids = torch.randint(5, vocab, (batch, seq_len), generator=generator)
        ids[:, 0] = 2
        labels = torch.full((batch, seq_len), IGNORE_INDEX)
        pick = torch.rand((batch, seq_len), generator=generator) < 0.15
        pick[:, 0] = False
        labels[pick] = ids[pick]
        ids[pick] = 4
        segments = torch.zeros((batch, seq_len), dtype=torch.long)
        segments[:, seq_len // 2 :] = 1
        made.append(
            {
                "input_ids": ids,
                "token_type_ids": segments,
                "attention_mask": torch.ones((batch, seq_len), dtype=torch.long),
                "labels": labels,
                "next_sentence_label": torch.randint(0, 2, (batch,), generator=generator),
            }
        )
    return made


def model_config(size: str, seq_len: int, vocab_size: int | None) -> BertConfig:
    values = {"vocab_size": 30522, **SIZES[size], "max_position_embeddings": max(512, seq_len)}
    return BertConfig(**{**values, **({"vocab_size": vocab_size} if vocab_size else {})})


def build_sides(args: argparse.Namespace, config: BertConfig, host: list[dict[str, Tensor]]) -> list[Side]:
    """Ours and transformers', each its own copy of the same initial weights and its own AdamW."""
    import transformers  # spelt with its module: theirs and ours share the name BertForPreTraining

    device = torch.device(args.device)
    torch.manual_seed(0)
    ours = BertForPreTraining(config)
    rows = RowCapacity()
    # As the trainer: the compiled step's MLM rows chosen on the host to one count (labelled, then -100 rows up to the
    # capacity); the eager step gathers the labelled rows itself, with no rows added.
    static_batches = [_to(device, {**b, "mlm_positions": rows.positions(b["labels"])}) for b in host]
    plain_batches = [_to(device, b) for b in host]
    padded = host_padded(host[0])
    sides = []
    for mode in args.ours:
        side = our_side(f"ours_{mode}", ours, device, bf16_weights(args, mode), padded)
        if mode == "compiled":
            side.module = _compiled(args, side.module)
        side.batches = static_batches if mode == "compiled" else plain_batches
        sides.append(side)
    for mode in args.theirs:
        attention = "sdpa" if mode == "compiled" else mode
        hf_config = transformers.BertConfig(**config.to_hf_dict(), attn_implementation=attention)
        hf_config.position_embedding_type = "absolute"
        module = HuggingFaceStep(transformers.BertForPreTraining(hf_config))
        module.model.load_state_dict(ours.hf_state_dict(), strict=False)
        module = module.to(device).train()
        step = _compiled(args, module) if mode == "compiled" else module
        sides.append(Side(f"transformers_{mode}", step, make_optimizer(module, 1e-4, 0.01), plain_batches))
    return sides


def our_side(
    name: str, model: BertForPreTraining, device: torch.device, copied: bool, padded: bool | None = None
) -> Side:
    """Our step on a copy of `model` and its own AdamW, as the trainer builds them; `copied`: it steps a bf16 copy
    of the weights (Bf16Weights). Its batches are the caller's to set."""
    module = PretrainingStep(copy.deepcopy(model)).to(device).train()
    weights = Bf16Weights(module) if copied else None
    stepped = weights.model if weights else module
    return Side(name, stepped, make_optimizer(module, 1e-4, 0.01), [], padded, weights)


def bf16_weights(args: argparse.Namespace, mode: str) -> bool:
    """Whether our side steps a bf16 copy of its model (optimization.Bf16Weights): as the trainer (bf16 on the CPU,
    uncompiled) with --bf16-weights auto, on every bf16 side of ours with `on` (to measure it on a GPU), never with
    `off` (bf16 autocast, the trainer's step on the CPU before 2026-11-28)."""
    if args.bf16_weights == "auto":
        return steps_bf16_weights(args.dtype, torch.device(args.device), 1, mode == "compiled", ours=True)
    return args.bf16_weights == "on" and use_bf16(args.dtype, torch.device(args.device))


def _compiled(args: argparse.Namespace, module: nn.Module) -> nn.Module:
    mode = None if args.compile_mode == "default" else args.compile_mode
    return compiled(module, backend=args.compile_backend, mode=mode)


def _to(device: torch.device, batch: dict[str, Tensor]) -> dict[str, Tensor]:
    return {name: tensor.to(device) for name, tensor in batch.items()}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def time_steps(
    side: Side, device: torch.device, dtype: str, batches: list[dict[str, Tensor]] | None = None
) -> float:
    """Seconds for one optimizer step per batch (the device drained before and after)."""
    _sync(device)
    start = time.perf_counter()
    for batch in side.batches if batches is None else batches:
        optimizer_step(side.module, side.optimizer, batch, 1.0, dtype, side.padded, side.bf16_weights)
    _sync(device)
    return time.perf_counter() - start


def compilations() -> tuple[int, int]:
    """(graphs compiled, recompilations) so far in this process, from torch._dynamo's counters."""
    return counters["stats"]["unique_graphs"], sum(counters["recompiles"].values())


def flops_per_token(config: BertConfig, seq_len: int, labelled: float) -> float:
    """Training FLOPs per token: 6 x (encoder and pooler matrices + the MLM head on the labelled share) + attention.

    Every layer is counted at every position, as a whole pass computes it: our step runs the last layer's output
    projection and feed-forward block on the labelled rows and [CLS] alone, so its share counts work it skips (the
    small preset's step 13% fewer multiply-adds than counted; the numbers stay comparable with earlier runs)."""
    h = config.hidden_size
    layers = config.num_hidden_layers
    ff = config.intermediate_size
    dense = layers * (4 * h * h + 2 * h * ff) + h * h
    head = labelled * (h * config.vocab_size + h * h)
    attention = 2 * layers * h * seq_len  # QK^T and AV, forward, per token
    return 6 * (dense + head) + 6 * attention


def device_peak(device: torch.device, dtype: str) -> tuple[float | None, str]:
    """The device's dense peak FLOP/s for this dtype and where the number comes from (None: not in PEAKS)."""
    if device.type != "cuda":
        return None, "no peak for CPUs"
    name = torch.cuda.get_device_name(device)
    bf16 = dtype != "fp32"
    for match, bf16_peak, fp32_peak, source in PEAKS:
        if match in name:
            return (bf16_peak if bf16 else fp32_peak) * 1e12, source
    return None, f"{name} is not in PEAKS"


def measure(args: argparse.Namespace, sides: list[Side], tokens: int) -> dict[str, dict[str, float]]:
    """Warm-up, then interleaved repetitions: per side its median tokens/s, peak memory and compilations."""
    device = torch.device(args.device)
    results = {}
    for side in sides:  # warm-up: compilation, allocator, kernels, optimizer state
        before = compilations()
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats()
        warmup_s = time_steps(side, device, args.dtype, side.batches[: args.warmup])
        graphs = compilations()[0] - before[0]
        peak_mib = torch.cuda.max_memory_allocated() / 2**20 if device.type == "cuda" else float("nan")
        results[side.name] = {
            "graphs": graphs,
            "warmup_s": warmup_s,
            "peak_mib": peak_mib,
            "recompiles": 0,
            "rates": [],
        }
    for _ in range(args.reps):  # interleaved, so that a busy moment hits every side alike
        for side in sides:
            before = compilations()
            rate = tokens / time_steps(side, device, args.dtype)
            after = compilations()
            results[side.name]["rates"].append(rate)
            results[side.name]["recompiles"] += after[0] - before[0] + after[1] - before[1]
    return results


def report(args, config: BertConfig, results: dict, labelled: float) -> None:
    """The key=value lines: the run, each side, then the totals (the ratio last)."""
    device = torch.device(args.device)
    peak, source = device_peak(device, args.dtype)
    per_token = flops_per_token(config, args.seq_len, labelled)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else _cpu_name()
    native = f" cpu_has_bf16={int(cpu_has_bf16())}" if device.type == "cpu" else ""
    print(
        f"device={args.device} name={name!r} threads={torch.get_num_threads()} torch={torch.__version__}{native}"
    )
    print(
        f"size={args.size} batch={args.batch}x{args.seq_len} vocab={config.vocab_size} labelled={labelled:.3f} "
        f"dtype={args.dtype} compile_mode={args.compile_mode} reps={args.reps} steps_per_rep={args.steps_per_rep} "
        f"peak_source={source!r} load={_load()}"
    )
    medians = {side: statistics.median(r["rates"]) for side, r in results.items()}
    for side, r in results.items():
        share = f"{per_token * medians[side] / peak:.3f}" if peak else "nan"
        print(
            f"{side}_tokens_per_s={medians[side]:.0f} share_of_peak={share} peak_mib={r['peak_mib']:.0f} "
            f"graphs_in_warmup={r['graphs']} warmup_s={r['warmup_s']:.1f} recompiles_while_timed={r['recompiles']} "
            f"all={[round(v) for v in r['rates']]}"
        )
    ours = max(v for side, v in medians.items() if side.startswith("ours"))
    theirs = max(v for side, v in medians.items() if side.startswith("transformers"))
    print(f"peak_rss_mib={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}")
    print(f"ours_tokens_per_s={ours:.0f}")
    print(f"transformers_tokens_per_s={theirs:.0f}")
    print(f"speedup_vs_transformers={ours / theirs:.2f}")


# Where a step's device time goes (--profile): each kernel in the first category whose pattern its name matches
# (case-insensitive), the rest in "other"; on a CPU (no kernels) the same split of the ops' self-times by aten name.
# Inductor names a kernel after the aten ops it fuses ("triton_poi_fused__to_copy_add_gelu_3"), so a fused kernel
# counts under the first category of its ops in this order (a LayerNorm fused with a dropout: norm).
LAYOUT_OPS = r"(_(view|t|permute|clone|transpose|expand|unsqueeze|squeeze|reshape|slice|select))*"
POINTWISE_OPS = (
    r"add|sub|mul|div|neg|pow|sqrt|rsqrt|exp|log|tanh|gelu|where|fill|zero|clamp|sum|mean|max|softmax"
)
KERNEL_CATEGORIES = (
    # SDPA's flash, memory-efficient (fmha_cutlass…) and cuDNN kernels
    ("attention", r"flash|fmha|attention|sdpa"),
    # cuBLAS(Lt), Hopper's nvjet, CUTLASS, inductor's matmul templates; on a CPU the aten matmuls
    (
        "gemm",
        r"gemm|gemv|nvjet|cublas|cutlass|xmma|splitkreduce|^triton_tem_|^aten::(mm|addmm|bmm|baddbmm|linear)$",
    ),
    # fused AdamW and the gradient clip (multi_tensor_apply and lpnorm on CUDA, per-tensor norms on a CPU)
    ("optimizer", r"adam|multi_tensor|lpnorm|foreach|linalg_vector_norm"),
    # LayerNorm forward and backward (GammaBetaBackward)
    ("norm", r"layer_norm|layernorm|gammabeta"),
    # dropout masks and their backward: eager's bernoulli/fused_dropout, inductor's random numbers
    ("dropout", r"bernoulli|dropout|philox|masked_scale|inductor_random|inductor_lookup_seed"),
    # copies and casts alone: memcpy, eager's direct_copy_kernel (casts too), aten::_to_copy and copy_, inductor's
    # kernels that fuse nothing but _to_copy and layout ops
    ("cast", rf"memcpy|^(?!triton_).*copy|^triton_[a-z]+_fused__to_copy{LAYOUT_OPS}_\d+$"),
    # inductor's other kernels, eager's element-wise and reduction loops; on a CPU the common point-wise aten ops
    ("elementwise", rf"^triton_|elementwise|vectorized|reduce|^aten::_?({POINTWISE_OPS})"),
)
# the profile_split line's order
SPLIT = ("gemm", "attention", "cast", "norm", "dropout", "optimizer", "elementwise", "other")
TOP_KERNELS = 8


def kernel_category(name: str) -> str:
    """The KERNEL_CATEGORIES name of a kernel (or CPU op), "other" when none matches."""
    return next((c for c, pattern in KERNEL_CATEGORIES if re.search(pattern, name, re.IGNORECASE)), "other")


def device_kernels(prof) -> list:
    """The profile's kernels and copies on the GPU: its CUDA events less the user annotations (a record_function
    range such as the optimizer's `Optimizer.step#…`, drawn on the GPU's timeline over the kernels it launched: counted,
    it added its span twice, ~1.1 ms a step of BERT-base on the H200 of 2026-11-28)."""
    return [
        e
        for e in prof.events()
        if e.device_type.name == "CUDA" and not getattr(e, "is_user_annotation", False)
    ]


def time_by_name(prof, device: torch.device) -> dict[str, tuple[float, int]]:
    """Per kernel name its summed device time (µs) and count; on a CPU per op its summed self time and count."""
    totals: dict[str, tuple[float, int]] = {}
    cuda = device.type == "cuda"
    events = device_kernels(prof) if cuda else [e for e in prof.events() if e.device_type.name == "CPU"]
    for event in events:
        spent = event.device_time_total if cuda else event.self_cpu_time_total
        total, count = totals.get(event.name, (0.0, 0))
        totals[event.name] = (total + spent, count + 1)
    return totals


def print_split(side: str, times: dict[str, tuple[float, int]], steps: int, busy: float, source: str) -> None:
    """The profile_split line (ms per step per category; their sum is the busy time) and the top kernels."""
    split = dict.fromkeys(SPLIT, 0.0)
    for name, (total, _) in times.items():
        split[kernel_category(name)] += total / steps / 1e3
    assert math.isclose(sum(split.values()), busy, rel_tol=1e-6, abs_tol=1e-6), (split, busy)
    columns = " ".join(f"{category}_ms={ms:.3f}" for category, ms in split.items())
    print(
        f"profile_split={side} source={source} {columns} sum_ms={sum(split.values()):.3f} busy_ms={busy:.3f}"
    )
    ranked = sorted(times.items(), key=lambda item: item[1][0], reverse=True)[:TOP_KERNELS]
    for rank, (name, (total, count)) in enumerate(ranked, 1):
        token = re.sub(r"[\s=]+", "", name.removeprefix("void "))[:100]  # one key=value token, cut
        print(
            f"profile_top={side} rank={rank} ms={total / steps / 1e3:.3f} calls={count / steps:.0f} "
            f"category={kernel_category(name)} name={token}"
        )


def profile(args, sides: list[Side]) -> None:
    """Per side: wall ms per step, device-busy ms per step (kernel time summed) and kernels (or CPU ops) per step,
    then that busy time split by KERNEL_CATEGORIES and the TOP_KERNELS kernels (on a CPU: ops' self-times)."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    device = torch.device(args.device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    steps = args.profile_steps
    for side in sides:
        batches = (side.batches * steps)[:steps]
        _sync(device)
        with torch_profile(activities=activities) as prof:
            wall = time_steps(side, device, args.dtype, batches) / steps * 1e3
        events = device_kernels(prof) if device.type == "cuda" else []
        busy = sum(e.device_time_total for e in events) / steps / 1e3 if events else float("nan")
        copies = sum(1 for e in events if "copy" in e.name.lower() or "Memcpy" in e.name) / steps
        cpu_ops = sum(1 for e in prof.events() if e.device_type.name == "CPU") / steps
        print(
            f"profile={side.name} wall_ms_per_step={wall:.2f} device_busy_ms_per_step={busy:.2f} "
            f"kernels_per_step={len(events) / steps:.0f} copy_kernels_per_step={copies:.0f} "
            f"cpu_ops_per_step={cpu_ops:.0f}"
        )
        times = time_by_name(prof, device)
        if device.type == "cuda":  # the same kernels as device_busy_ms_per_step, by name
            print_split(side.name, times, steps, 0.0 if math.isnan(busy) else busy, "kernels")
        else:
            cpu_busy = sum(total for total, _ in times.values()) / steps / 1e3
            print_split(side.name, times, steps, cpu_busy, "cpu_op_self_times")


# The --smoke values of add_step_options' options: one step of the tiny size, one thread.
SMOKE_STEPS = {
    "size": "tiny",
    "batch": 2,
    "seq_len": 32,
    "reps": 1,
    "steps_per_rep": 1,
    "warmup": 1,
    "threads": 1,
}


def add_step_options(parser: argparse.ArgumentParser, warmup: int = 3) -> None:
    """The options of a timed run of training steps (here and bench/bf16_speed.py): model size, batch, threads,
    interleaved repetitions and warm-up steps."""
    parser.add_argument("--size", default="small", choices=list(SIZES))
    parser.add_argument("--batch", type=int, default=16, help="sequences per step")
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument(
        "--vocab-size", type=int, default=None, help="default: the size's (30,522 for BERT's)"
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--steps-per-rep", type=int, default=4)
    parser.add_argument(
        "--warmup",
        type=int,
        default=warmup,
        help="steps per side before timing (compilation happens here: warmup_s)",
    )


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_step_options(parser)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument(
        "--dtype", default="auto", choices=list(DTYPES), help="auto: bf16 autocast on CUDA only"
    )
    parser.add_argument(
        "--bf16-weights",
        default="auto",
        choices=("auto", "on", "off"),
        help="our bf16 sides step a bf16 copy of the weights: auto as the trainer (eager on the CPU), on: every one",
    )
    parser.add_argument(
        "--ours", nargs="+", choices=("eager", "compiled"), help="default: compiled on CUDA only"
    )
    parser.add_argument(
        "--theirs", nargs="+", choices=("eager", "sdpa", "compiled"), help="default: all on CUDA"
    )
    parser.add_argument(
        "--compile-backend", default="inductor", help="torch.compile's backend (eager: dynamo only)"
    )
    parser.add_argument(
        "--compile-mode",
        default="default",
        choices=("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"),
        help="torch.compile's mode for every compiled side (reduce-overhead: CUDA graphs; max-autotune: CUDA graphs and "
        "GEMMs tuned for the shapes, minutes of compiling)",
    )
    parser.add_argument(
        "--profile", action="store_true", help="also profile each side (GPU busy vs step time)"
    )
    parser.add_argument("--profile-steps", type=int, default=5)
    add_smoke_flag(parser, argv, **SMOKE_STEPS, profile_steps=1)
    args = parser.parse_args(argv)
    if args.smoke:  # the compiled side through dynamo alone: inductor's code generation takes a minute
        args.ours = args.ours or ["eager", "compiled"]
        args.compile_backend = "eager"
        args.profile = True
    args.ours = args.ours or list(DEFAULT_OURS[args.device])
    args.theirs = args.theirs or list(DEFAULT_THEIRS[args.device])
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    torch.set_num_threads(args.threads)
    config = model_config(args.size, args.seq_len, args.vocab_size)
    host = random_batches(args.steps_per_rep, args.batch, args.seq_len, config.vocab_size)
    tokens = sum(int(b["attention_mask"].sum()) for b in host)
    labelled = sum(int((b["labels"] != IGNORE_INDEX).sum()) for b in host) / tokens
    sides = build_sides(args, config, host)
    results = measure(args, sides, tokens)
    if args.profile:
        profile(args, sides)
    report(args, config, results, labelled)


def _load() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "unknown"


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


if __name__ == "__main__":
    main()
