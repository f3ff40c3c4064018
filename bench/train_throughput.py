"""Training-step throughput: our BertForPreTraining vs transformers' BertForPreTraining, same batches, same optimizer.

    python bench/train_throughput.py                       # small preset on CPU, 2 threads
    python bench/train_throughput.py --device cuda         # bf16 autocast on a GPU
    python bench/train_throughput.py --dtype bf16          # bf16 autocast on the CPU (AVX512-BF16 / AMX)

Both sides run the engine's `optimizer_step` (forward, backward, clip to 1.0, AdamW with BERT's
weight-decay groups) on the same masked batches (16 x 128 tokens, 15% masked, no padding), in
interleaved repetitions; tokens/s counts non-padding tokens. transformers gets its usual inputs
(labels at every position, -100 where not masked) and the better of its eager and sdpa attention.
Prints ours_tokens_per_s=..., transformers_tokens_per_s=... and, last, speedup_vs_transformers=<ratio>.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import Tensor, nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._smoke import add_smoke_flag  # noqa: E402
from bertviz_lite.model.config import BertConfig  # noqa: E402
from bertviz_lite.model.modeling import BertForPreTraining  # noqa: E402
from bertviz_lite.text.pretraining_data import PretrainingCollator, builtin_corpus  # noqa: E402
from bertviz_lite.text.tokenization import BertTokenizer  # noqa: E402
from bertviz_lite.training.optimization import PretrainingStep, make_optimizer, optimizer_step  # noqa: E402
from bertviz_lite.training.training_args import DTYPES, PRESETS  # noqa: E402


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


def full_length_batches(
    tokenizer: BertTokenizer,
    num_batches: int,
    batch_size: int,
    seq_len: int,
    seed: int = 0,
    num_documents: int = 2000,
) -> list[dict[str, Tensor]]:
    """Batches of sentence pairs that fill seq_len: each segment is several consecutive story sentences."""
    sentences = [s for doc in builtin_corpus(seed=seed, num_documents=num_documents) for s in doc]
    collator = PretrainingCollator(tokenizer, max_length=seq_len, mask_prob=0.15)
    generator = torch.Generator().manual_seed(seed)
    span, batches, cursor = 12, [], 0  # 12 sentences (~110 tokens) per segment, cut to fit
    for index in range(num_batches):
        pairs = []
        for row in range(batch_size):
            if cursor + 2 * span > len(sentences):  # large batches: go round the corpus again
                cursor = 0
            a, b = sentences[cursor : cursor + span], sentences[cursor + span : cursor + 2 * span]
            pairs.append((" ".join(a), " ".join(b), (index + row) % 2))
            cursor += 2 * span
        batch = collator(pairs, generator)
        batch.pop("special_tokens_mask")
        batches.append(batch)
    assert all(b["attention_mask"].all() and b["input_ids"].shape[1] == seq_len for b in batches), "padding"
    return batches


def build_models(config: BertConfig, device: torch.device) -> dict[str, nn.Module]:
    """Ours and transformers' (eager and sdpa), all from the same initial weights.

    transformers' classes are spelt with their module's name: theirs and ours share the name BertForPreTraining.
    """
    import transformers

    torch.manual_seed(0)
    ours = BertForPreTraining(config)
    models = {"ours": PretrainingStep(ours)}
    for implementation in ("eager", "sdpa"):
        hf_config = transformers.BertConfig(**config.to_hf_dict(), attn_implementation=implementation)
        hf_config.position_embedding_type = "absolute"
        hf = transformers.BertForPreTraining(hf_config)
        hf.load_state_dict(ours.hf_state_dict(), strict=False)
        models[f"transformers_{implementation}"] = HuggingFaceStep(hf)
    return {name: model.to(device).train() for name, model in models.items()}


def time_steps(
    step_module: nn.Module,
    optimizer,
    batches: list[dict[str, Tensor]],
    device: torch.device,
    dtype: str = "auto",
) -> float:
    """Seconds for one optimizer step per batch."""
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for batch in batches:
        optimizer_step(step_module, optimizer, batch, max_grad_norm=1.0, dtype=dtype)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument(
        "--dropout", type=float, default=None, help="hidden and attention dropout (default: the preset's)"
    )
    parser.add_argument(
        "--foreach-adamw", action="store_true", help="AdamW(foreach=True) instead of fused, both sides"
    )
    parser.add_argument(
        "--dtype",
        default="auto",
        choices=list(DTYPES),
        help="auto: bf16 autocast on CUDA, float32 on CPU; bf16: autocast on CPU too (both sides)",
    )
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--steps-per-rep", type=int, default=4)
    parser.add_argument(
        "--num-documents", type=int, default=2000, help="built-in stories for the vocabulary and batches"
    )
    add_smoke_flag(
        parser, argv, batch_size=2, seq_len=32, vocab_size=500, reps=1, steps_per_rep=1, num_documents=100
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    config = BertConfig(**{**PRESETS["small"]["config"], "vocab_size": args.vocab_size})
    if args.dropout is not None:
        config.hidden_dropout_prob = config.attention_probs_dropout_prob = args.dropout
    stories = builtin_corpus(num_documents=args.num_documents)
    tokenizer = BertTokenizer.train([s for d in stories for s in d], args.vocab_size)
    batches = full_length_batches(
        tokenizer, args.steps_per_rep, args.batch_size, args.seq_len, num_documents=args.num_documents
    )
    batches = [{k: v.to(device) for k, v in b.items()} for b in batches]
    tokens = sum(int(b["attention_mask"].sum()) for b in batches)
    masked = sum(int((b["labels"] != -100).sum()) for b in batches) / tokens
    models = build_models(config, device)
    optimizers = {name: make_optimizer(model, 1e-4, 0.01) for name, model in models.items()}
    if args.foreach_adamw:  # the multi-tensor AdamW the engine used before it switched to fused
        for optimizer in optimizers.values():
            optimizer.defaults.update(fused=None, foreach=True)
            for group in optimizer.param_groups:
                group.update(fused=None, foreach=True)
    for name, model in models.items():  # warm-up: allocator, kernels, optimizer state
        time_steps(model, optimizers[name], batches[:2], device, args.dtype)
    rates: dict[str, list[float]] = {name: [] for name in models}
    for _ in range(args.reps):  # interleaved, so that a busy moment hits every side alike
        for name, model in models.items():
            rates[name].append(tokens / time_steps(model, optimizers[name], batches, device, args.dtype))
    medians = {name: statistics.median(values) for name, values in rates.items()}
    cpu = _cpu_name()
    print(f"device={args.device} cpu={cpu!r} threads={torch.get_num_threads()} torch={torch.__version__}")
    print(
        f"batch={args.batch_size}x{args.seq_len} vocab={args.vocab_size} masked={masked:.3f} "
        f"dtype={args.dtype} dropout={config.hidden_dropout_prob} adamw={'foreach' if args.foreach_adamw else 'fused'} "
        f"reps={args.reps} steps_per_rep={args.steps_per_rep}"
    )
    for name, values in rates.items():
        print(f"{name}_tokens_per_s median={medians[name]:.0f} all={[round(v) for v in values]}")
    theirs = max(medians["transformers_eager"], medians["transformers_sdpa"])
    print(f"ours_tokens_per_s={medians['ours']:.0f}")
    print(f"transformers_tokens_per_s={theirs:.0f}")
    print(f"speedup_vs_transformers={medians['ours'] / theirs:.2f}")


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
