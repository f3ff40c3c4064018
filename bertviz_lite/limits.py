"""How large a model, file or upload this server accepts: every check runs before anything is allocated.

A model folder (named by a user, uploaded as a zip, or a checkpoint) is untrusted input. Before a
loader builds anything it asks this module, which reads only sizes, a few header bytes and small
JSON files, and raises `ValueError` in plain words when a limit is passed.

Settings (environment variables, read at each check; MB means 2**20 bytes, decimals allowed):

- `BERTVIZ_LITE_MAX_PARAMETERS` (default 400000000): the most parameters a model may have, heads
  included. BERT-large has about 340 M, BERT-base 110 M.
- `BERTVIZ_LITE_MAX_ACTIVATION_MB` (default 1024): the most float32 memory one trace of a
  max_position_embeddings-token input may keep (attention weights of every layer and head, q/k/v,
  hidden states, logits). BERT-large at 512 tokens needs about 700 MB.
- `BERTVIZ_LITE_UPLOAD_MB` (default 1024): the most that the zip uploads being unpacked at one
  time may write under checkpoints/, counted byte by byte while they are written.

Fixed limits: JSON files (config.json, tokenizer_config.json) at most 1 MB and 32 levels deep;
vocab.txt at most 10 MB and 1,000,000 lines; a safetensors header at most 100 MB; a weight file at
most 8 bytes per parameter of its config (float64), plus 1 MB.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import zipfile
from pathlib import Path
from typing import Any, Protocol


def clamp(value: float, low: float, high: float) -> float:
    """value pulled into low..high (a layer, head, step or slider value that the input no longer offers)."""
    return min(max(value, low), high)


class BertConfig(Protocol):
    """The sizes of a model config these rules read (bertviz_lite.model.config.BertConfig has them)."""

    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    max_position_embeddings: int
    type_vocab_size: int


MB = 1 << 20
MAX_PARAMETERS_SETTING = "BERTVIZ_LITE_MAX_PARAMETERS"
MAX_ACTIVATION_SETTING = "BERTVIZ_LITE_MAX_ACTIVATION_MB"
UPLOAD_SETTING = "BERTVIZ_LITE_UPLOAD_MB"
TRAIN_MEMORY_SETTING = "BERTVIZ_LITE_TRAIN_MEMORY_MB"
TRAIN_EXAMPLES_SETTING = "BERTVIZ_LITE_MAX_TRAIN_EXAMPLES"
VISITOR_DISK_SETTING = "BERTVIZ_LITE_VISITOR_DISK_MB"
DISK_SETTING = "BERTVIZ_LITE_DISK_MB"
DEFAULT_VISITOR_DISK_MB = 2048  # uploads and runs of one visitor
DEFAULT_DISK_MB = (
    20480  # uploads and runs of all visitors together (shipped checkpoints and terminal runs aside)
)
MAX_SNAPSHOTS = (
    250  # snapshot files of one run (an upload's, or what an app run's steps / snapshot_every make)
)
MAX_SNAPSHOTS_BYTES = 256 * MB  # all snapshot files of one upload together
DEFAULT_TRAIN_MEMORY_MB = (
    8192  # BERT-base at batch 32 × 128 tokens needs about 7.1 GB by training_memory_bytes
)
DEFAULT_MAX_TRAIN_EXAMPLES = 1_000_000  # steps × batch of one app-launched run: the base preset is 320,000
DEFAULT_MAX_PARAMETERS = 400_000_000
DEFAULT_MAX_ACTIVATION_MB = 1024
DEFAULT_UPLOAD_MB = 1024
MAX_JSON_BYTES = 1 * MB
MAX_JSON_DEPTH = 32
MAX_VOCAB_BYTES = 10 * MB
MAX_VOCAB_LINES = 1_000_000
MAX_METRICS_BYTES = 64 * MB  # of an uploaded metrics.jsonl: a 100k-step run logs ~20 MB
# A safetensors header names each tensor with its dtype, shape and offsets, ~100 bytes a tensor: BERT-large's 400
# tensors take ~60 kB, a snapshot's header (its tokens and predictions) a few kB. 1 MB leaves room; 800,000 empty
# tensors (a 47 MB header) cost 12 s and 700 MB to parse before the 100 MB this limit was.
MAX_SAFETENSORS_HEADER_BYTES = 1 * MB
# The largest upload a visitor may really need: a base-preset run's zip at its worst, float32 weights with the tied
# decoder copy (510 MB), snapshots (256 MB), metrics (64 MB), vocab.txt and the JSON files: 842 MB. Streamlit holds
# an upload in memory before any check, so .streamlit/config.toml's maxUploadSize is this (a test keeps them equal).
MAX_UPLOAD_MB = 850
MAX_CONCURRENT_UPLOADS = 2  # zips being unpacked at once, in all app processes together
MAX_METRICS_READ_BYTES = 8 * MB  # of metrics.jsonl read back for a page: its last 8 MB
MAX_METRICS_READ_LINES = 50_000  # … and at most its last 50,000 lines
MAX_POINTS_DRAWN = 2000  # points per curve: longer curves are downsampled before they are drawn
# A logged number must be a finite float: a 400-digit literal is refused, a diverging run's 1e30 loss or learning
# rate is kept (that divergence is what the curves must show).
MAX_RECORDED_NUMBER = sys.float_info.max
MAX_STEP = 10**12  # a step, step count or pid past this is not a training run's
FLOAT_BYTES = 4  # activations are float32
TRAINING_RUNTIME_BYTES = (
    24 * MB
)  # autograd, the allocator's arenas, thread pools: a tiny model's step grows ~30 MB
WEIGHT_SLACK_BYTES = 1 * MB  # headers, position_ids buffers


# ---- settings ------------------------------------------------------------------------------------


def _setting(name: str, default: float) -> float:
    """A positive number from the environment variable `name`, else `default`."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text.replace("_", ""))
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"The setting {name} must be a number greater than 0, not {text[:40]!r}")
    return value


def max_parameters() -> int:
    """The most parameters a model may have (setting BERTVIZ_LITE_MAX_PARAMETERS)."""
    return int(_setting(MAX_PARAMETERS_SETTING, DEFAULT_MAX_PARAMETERS))


def max_activation_bytes() -> int:
    """The most bytes one trace may keep (setting BERTVIZ_LITE_MAX_ACTIVATION_MB)."""
    return int(_setting(MAX_ACTIVATION_SETTING, DEFAULT_MAX_ACTIVATION_MB) * MB)


def upload_budget_bytes() -> int:
    """The most bytes uploads being unpacked may hold at once (setting BERTVIZ_LITE_UPLOAD_MB)."""
    return int(_setting(UPLOAD_SETTING, DEFAULT_UPLOAD_MB) * MB)


def max_training_memory_bytes() -> int:
    """The most memory one app-launched training run may need (setting BERTVIZ_LITE_TRAIN_MEMORY_MB)."""
    return int(_setting(TRAIN_MEMORY_SETTING, DEFAULT_TRAIN_MEMORY_MB) * MB)


def visitor_disk_bytes() -> int:
    """The most disk one visitor's uploads and runs may use (setting BERTVIZ_LITE_VISITOR_DISK_MB)."""
    return int(_setting(VISITOR_DISK_SETTING, DEFAULT_VISITOR_DISK_MB) * MB)


def total_disk_bytes() -> int:
    """The most disk all visitors' uploads and runs may use together (setting BERTVIZ_LITE_DISK_MB)."""
    return int(_setting(DISK_SETTING, DEFAULT_DISK_MB) * MB)


def max_training_examples() -> int:
    """The most steps × batch size of one app-launched run (setting BERTVIZ_LITE_MAX_TRAIN_EXAMPLES)."""
    return int(_setting(TRAIN_EXAMPLES_SETTING, DEFAULT_MAX_TRAIN_EXAMPLES))


def amount(count: int) -> str:
    """A large count in words: 10^18, 7.1 billion, 340 M, 12345."""
    if count >= 10**15:
        return f"10^{int(count.bit_length() * math.log10(2))}"
    if count >= 10**9:
        return f"{count / 1e9:.1f} billion"
    return f"{count / 1e6:.0f} M" if count >= 10**7 else str(count)


def megabytes(size: int) -> str:
    """Bytes as MB (2**20 bytes) for messages."""
    return f"{amount(size // MB)} MB" if size >= 10 * MB else f"{size / MB:.1f} MB"


# ---- model size ----------------------------------------------------------------------------------


def parameter_count(config: BertConfig) -> int:
    """Parameters of `BertForPreTraining(config)` (MLM and NSP heads included, the tied decoder counted once)."""
    h = config.hidden_size
    i = config.intermediate_size
    v = config.vocab_size
    embeddings = (v + config.max_position_embeddings + config.type_vocab_size) * h + 2 * h
    layer = 4 * (h * h + h) + (2 * h * i + i + h) + 4 * h  # q, k, v, output; feed-forward; two LayerNorms
    heads = (h * h + h) + (h * h + 3 * h + v) + (2 * h + 2)  # pooler; MLM transform, LayerNorm, bias; NSP
    return embeddings + config.num_hidden_layers * layer + heads


def activation_bytes(config: BertConfig) -> int:
    """Float32 bytes one trace of max_position_embeddings tokens (batch 1) keeps at its peak."""
    t = config.max_position_embeddings
    h = config.hidden_size
    layers = config.num_hidden_layers
    heads = config.num_attention_heads
    attentions = layers * heads * t * t  # (L, nh, T, T) probabilities, all kept by the trace
    kept = (4 * layers + 6) * t * h  # q, k, v and output of each layer; the five embedding parts
    working = heads * t * t + t * (config.intermediate_size + config.vocab_size)  # scores, FFN, MLM logits
    return FLOAT_BYTES * (attentions + kept + working)


def training_memory_bytes(config: BertConfig, batch_size: int, seq_len: int) -> int:
    """Bytes a training process grows by, about: weights, gradients and AdamW's two moments (16 bytes a parameter),
    the activations autograd keeps for the backward pass at batch × sequence length, and the runtime's own.

    bench/train_memory_estimate.py measures it against real steps (0.80-1.26 of the peak growth, tiny models to
    BERT-base); a property test keeps it within 2×. It counts float32: bf16 on the CPU adds a bf16 copy of the
    weights and its gradients (4 bytes a parameter, training/optimization.py's Bf16Weights) and halves what the
    activations take: for BERT-base the two cancel at about 5 sequences of 128 tokens, and a smaller batch needs up
    to 0.44 GB more than this says.
    """
    t = seq_len
    h = config.hidden_size
    i = config.intermediate_size
    # Per layer: the inputs and outputs of q/k/v, the context and its copies, dropouts, residuals and LayerNorms
    # (~16 h), the feed-forward before and after GELU (~3 i), scores, probabilities and dropout mask (3 × nh t²).
    per_layer = t * (16 * h + 3 * i) + 3 * config.num_attention_heads * t * t
    # The MLM logits (and their gradient) at the masked positions, counted at every position: mask_prob may be high.
    per_example = config.num_hidden_layers * per_layer + t * (config.vocab_size + 4 * h)
    return 16 * parameter_count(config) + FLOAT_BYTES * batch_size * per_example + TRAINING_RUNTIME_BYTES


def check_training_budget(config: BertConfig, batch_size: int, seq_len: int, steps: int) -> None:
    """Refuse, in a sentence, a run whose memory or steps × batch passes this server's limits."""
    need = training_memory_bytes(config, batch_size, seq_len)
    most = max_training_memory_bytes()
    if need > most:
        raise ValueError(
            f"This run would need about {megabytes(need)} of memory (weights, optimizer state and activations at "
            f"batch {batch_size} × {seq_len} tokens); this server allows {megabytes(most)} per run "
            f"(the setting {TRAIN_MEMORY_SETTING}). Use a smaller batch, sequence length or model."
        )
    examples = steps * batch_size
    limit = max_training_examples()
    if examples > limit:
        raise ValueError(
            f"{amount(steps)} steps × batch {batch_size} is {amount(examples)} examples; a run started here may "
            f"train on at most {amount(limit)} (the setting {TRAIN_EXAMPLES_SETTING}). Use fewer steps, or "
            "train from a terminal."
        )


def check_model_size(config: BertConfig, source: str = "config.json") -> None:
    """Refuse a config whose parameters or trace activations pass the limits (nothing is allocated)."""
    count = parameter_count(config)
    most = max_parameters()
    if count > most:
        size = f"{amount(config.num_hidden_layers)} layers of hidden size {amount(config.hidden_size)}"
        raise ValueError(
            f"{source} asks for {size} and a vocabulary of {amount(config.vocab_size)} tokens: about "
            f"{amount(count)} parameters. This server allows models up to {amount(most)} parameters "
            f"(BERT-large has about 340 M); a setting raises the limit: {MAX_PARAMETERS_SETTING}"
        )
    needed = activation_bytes(config)
    allowed = max_activation_bytes()
    if needed > allowed:
        raise ValueError(
            f"{source} allows {amount(config.max_position_embeddings)}-token inputs through "
            f"{amount(config.num_hidden_layers)} layers of {amount(config.num_attention_heads)} heads: one "
            f"trace would keep about {megabytes(needed)} of activations. This server allows {megabytes(allowed)} "
            f"(BERT-large at 512 tokens needs about 700 MB); a setting raises the limit: {MAX_ACTIVATION_SETTING}"
        )


# ---- files ---------------------------------------------------------------------------------------


def read_limited(path: Path, max_bytes: int, name: str) -> bytes:
    """The bytes of a regular file, reading at most max_bytes + 1 of them; ValueError past the limit."""
    if not path.is_file():
        raise FileNotFoundError(f"No {name} in the model folder")
    with open(path, "rb") as handle:
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValueError(f"{name} is larger than {megabytes(max_bytes)}, the most this server reads")
    return data


_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_JSON_BRACKET = re.compile(r"[\[\]{}]")


def check_json_depth(text: str, name: str, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Refuse JSON nested deeper than max_depth, counted before any parser recurses into it."""
    depth = 0
    for match in _JSON_BRACKET.finditer(_JSON_STRING.sub('""', text)):
        depth += 1 if match.group() in "[{" else -1
        if depth > max_depth:
            raise ValueError(
                f"{name} is nested more than {max_depth} levels deep; this server reads no deeper"
            )


def read_json(path: Path, name: str, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """Parse a small JSON file after checking its size, encoding and nesting depth."""
    data = read_limited(path, max_bytes, name)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{name} is not UTF-8 text") from None
    check_json_depth(text, name)
    try:
        return json.loads(text)
    except ValueError as err:  # JSONDecodeError, or an integer of more than 4300 digits
        raise ValueError(f"{name} is not valid JSON: {err}") from None


def count_lines(data: bytes) -> int:
    """Lines as `str.split` on universal newlines counts them, a final empty line not counted."""
    newlines = data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")
    return newlines + (0 if data.endswith((b"\n", b"\r")) or not data else 1)


def check_vocab_file(path: Path, vocab_size: int, name: str = "vocab.txt") -> None:
    """Refuse a vocabulary past 10 MB or 1,000,000 lines, or of another size than the config's."""
    lines = count_lines(read_limited(path, MAX_VOCAB_BYTES, name))
    if lines > MAX_VOCAB_LINES:
        raise ValueError(
            f"{name} has {lines} lines; this server reads vocabularies of at most {MAX_VOCAB_LINES}"
        )
    if lines != vocab_size:
        raise ValueError(f"{name} has {lines} tokens but config.json says vocab_size {vocab_size}")


# ---- weights -------------------------------------------------------------------------------------


def max_weight_bytes(config: BertConfig) -> int:
    """The largest weight file a model of this config can need: float64, a tied decoder copy, slack."""
    tied_copies = config.vocab_size * config.hidden_size + config.vocab_size
    return 8 * (parameter_count(config) + tied_copies) + WEIGHT_SLACK_BYTES


def safetensors_header_length(head: bytes, size: int, name: str) -> int:
    """The header length in a safetensors file's first 8 bytes (`head` holds at least 9); refuse one past the
    file or 100 MB, or a header that does not start a JSON object."""
    length = int.from_bytes(head[:8], "little") if len(head) >= 9 else 0
    if not 0 < length <= size - 8 or head[8:9] != b"{":
        raise ValueError(
            f"{name} is damaged or not a weight file (its first bytes are not a safetensors header)"
        )
    if length > MAX_SAFETENSORS_HEADER_BYTES:
        raise ValueError(
            f"{name} has a {megabytes(length)} header; this server reads at most {megabytes(MAX_SAFETENSORS_HEADER_BYTES)}"
        )
    return length


def read_safetensors_header(path: Path, name: str) -> dict[str, Any]:
    """The JSON header of a safetensors file, read within MAX_SAFETENSORS_HEADER_BYTES (no tensor is read)."""
    with open(path, "rb") as handle:
        length = safetensors_header_length(handle.read(9), path.stat().st_size, name)
        handle.seek(8)
        text = handle.read(length).decode("utf-8", errors="replace")
    check_json_depth(text, name)
    try:
        header = json.loads(text)
    except ValueError:
        header = None
    if not isinstance(header, dict):
        raise ValueError(f"{name} is damaged or not a weight file (its header is not a JSON object)")
    return header


def _check_torch_zip(path: Path, budget: int, name: str) -> None:
    """A torch.save file is a zip of stored records; compressed records could unpack past the budget."""
    if not zipfile.is_zipfile(path):
        raise ValueError(
            f"{name} is in torch's legacy (pre-1.6) format, which this server does not read: "
            "save the weights as model.safetensors"
        )
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as err:
        raise ValueError(f"{name} is damaged or not a weight file ({err})") from None
    if any(info.compress_type != zipfile.ZIP_STORED for info in infos):
        raise ValueError(f"{name} holds compressed records; torch.save never writes those")
    if sum(info.file_size for info in infos) > budget:
        raise ValueError(f"{name} unpacks to more than {megabytes(budget)}, more than this config.json needs")


def check_weight_file(path: Path, config: BertConfig) -> None:
    """Refuse a weight file larger than the config can need, or with a header past the limits."""
    size = path.stat().st_size
    budget = max_weight_bytes(config)
    name = path.name
    if size > budget:
        raise ValueError(
            f"{name} is {megabytes(size)}, but a model with this config.json needs at most {megabytes(budget)}"
        )
    if path.suffix == ".safetensors":
        with open(path, "rb") as handle:
            safetensors_header_length(handle.read(9), size, name)
    else:
        _check_torch_zip(path, budget, name)


# ---- typed text ----------------------------------------------------------------------------------
# What a visitor types, links or pastes is checked against these before any work (tokenizing, a file system call);
# the pages give the same numbers to their widgets' max_chars, which a link or a script can bypass.

# Sentence A and B: 512 tokens are ~3,000 characters and 600 words ~3,600; 20,000 tokenize in ~15 ms. A link: 2,000.
MAX_SENTENCE_CHARS = 20_000
MAX_LINK_SENTENCE_CHARS = 2000
MAX_WORD_CHARS = 50  # Why this word's target and foil
MAX_PATH_CHARS = 1024  # the model folder's path (Linux's PATH_MAX is 4096)
MAX_NAME_CHARS = 100  # a run's or a checkpoint's name
MAX_TOKEN_CHARS = 256  # the admin token typed on the Checkpoints page
MAX_CORPUS_CHARS = 5_000_000  # a pasted training corpus (an uploaded one: 5 MB)
MAX_USER_SENTENCES = 100  # lines of Meaning in context's "Your sentences"
MAX_USER_SENTENCE_CHARS = 20_000  # its whole text (~200 characters a line)
MAX_USER_OCCURRENCES = 200  # times the word may occur in them (each one is a vector at every layer)


def check_text(text: str, limit: int, what: str) -> str:
    """`text` if it has at most `limit` characters, else ValueError saying so (nothing else is read)."""
    if len(text) > limit:
        raise ValueError(f"{what} is {len(text):,} characters long; this server takes at most {limit:,}.")
    return text


# ---- exported files (bertviz_lite/export) -------------------------------------------------------

# A view with pickers, or a lesson, carries every layer and head it offers: L × H × T² numbers grow fast with T.
MAX_EXPORT_TOKENS = 128
MAX_EXPORT_BYTES = 40 * MB  # the figures one exported file carries, as JSON before it is compressed


def export_token_problem(count: int, what: str) -> str | None:
    """Why `what` (a lesson, a view with pickers) cannot be exported for a pair of `count` tokens; None if it can."""
    if count <= MAX_EXPORT_TOKENS:
        return None
    return (
        f"{what} carries every layer and head, so it takes at most {MAX_EXPORT_TOKENS} tokens; this pair has "
        f"{count}. Shorten the sentences or lower the max length."
    )


# ---- numbers read back from run folders ----------------------------------------------------------


def recorded_number(value: Any, bound: float = MAX_RECORDED_NUMBER) -> int | float | None:
    """`value` if it is a finite int or float (not a bool) of at most `bound` in size, else None.

    JSON turns a 400-digit literal into an int no float can hold: it is refused here, not by an OverflowError later.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, int):
        return value if -bound <= value <= bound else None
    return value if math.isfinite(value) and abs(value) <= bound else None


def recorded_count(value: Any) -> int | None:
    """`value` if it is an int in 0..MAX_STEP (a step, a step count, a pid), else None."""
    return (
        value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_STEP else None
    )
