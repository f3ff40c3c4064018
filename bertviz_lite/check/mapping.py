"""Which of the learner's parameters holds which of ours: Hugging Face names, tutorial names, module order and shape.

Pure functions of names, shapes and module types (`ParamInfo`), so they run in the learner's process and in tests
alike. A mapping entry says how to fill one of their tensors: our tensors listed in `sources`, stacked along the
first axis (a fused W_qkv is query + key + value); `ZERO_ROW` is a row of zeros (a 1/2 segment table's padding row),
`FINAL_NORM.weight` / `.bias` ones and zeros for a LayerNorm BERT has no weights for (after the last layer).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

ZERO_ROW = "<zero row>"
TRANSPOSED = "<transposed>"  # a raw matrix used as x @ W (in, out), where nn.Linear keeps (out, in)
FINAL_NORM = (
    "<final LayerNorm>"  # a LayerNorm after the last layer (pre-LN encoders end with one): weight 1, bias 0
)
EMB = "bert.embeddings."
HEAD_WORDS = ("cls", "mlm", "lm", "pred", "head", "transform", "nsp", "next", "classifier")


def _says_head(path: str) -> bool:
    """Whether a module's path names a head: a word of it starts with one of HEAD_WORDS (nanoGPT's container
    `transformer`, which holds the encoder, is not the MLM head's `transform`)."""
    words = [w for w in re.split(r"[._]", path.lower()) if not w.startswith("transformer")]
    return any(w.startswith(head) for w in words for head in HEAD_WORDS)


@dataclass(frozen=True)
class ParamInfo:
    """One of the learner's parameters: its name, shape, owner module's path and class name."""

    name: str
    shape: tuple[int, ...]
    module: str
    module_type: str
    ran: int | None = None  # when its module started in a trial pass (0 first); None where not observed
    output: tuple[int, ...] | None = None  # the shape of that module's first output tensor in that pass


@dataclass
class Sizes:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    max_position_embeddings: int
    num_hidden_layers: int


@dataclass
class Mapping:
    """their parameter -> our parameters stacked; plus what stayed unplaced on each side."""

    entries: dict[str, list[str]] = field(default_factory=dict)
    unmapped_theirs: list[str] = field(default_factory=list)
    unmapped_ours: list[str] = field(default_factory=list)

    def table(self) -> dict[str, str]:
        """their parameter -> ours as one string: `a + b + c` stacked, `(a).T` transposed."""
        rows = {}
        for theirs, sources in self.entries.items():
            text = " + ".join(s for s in sources if s != TRANSPOSED)
            rows[theirs] = f"({text}).T" if TRANSPOSED in sources else text
        return rows


def layer_role_names(i: int) -> dict[str, str]:
    """Our module prefix for each role inside encoder layer i."""
    p = f"bert.encoder.layer.{i}."
    return {
        "q": p + "attention.self.query",
        "k": p + "attention.self.key",
        "v": p + "attention.self.value",
        "o": p + "attention.output.dense",
        "ln1": p + "attention.output.LayerNorm",
        "ff1": p + "intermediate.dense",
        "ff2": p + "output.dense",
        "ln2": p + "output.LayerNorm",
    }


def map_parameters(
    theirs: list[ParamInfo],
    ours: dict[str, tuple[int, ...]],
    sizes: Sizes,
    override: dict[str, str] | None = None,
) -> Mapping:
    """Place every parameter of theirs on ours: override, then Hugging Face names, then roles by name and shape."""
    mapping = Mapping()
    for info in theirs:
        if override and info.name in override:
            mapping.entries[info.name] = [part.strip() for part in override[info.name].split("+")]
    rest = [p for p in theirs if p.name not in mapping.entries]
    for info in rest:
        match = _hf_name(info.name, ours)
        if match and tuple(ours[match]) == info.shape:
            mapping.entries[info.name] = [match]
    rest = [p for p in rest if p.name not in mapping.entries]
    if rest:
        _map_by_role(rest, sizes, mapping)
    used = {source for sources in mapping.entries.values() for source in sources}
    mapping.unmapped_theirs = [p.name for p in theirs if p.name not in mapping.entries]
    mapping.unmapped_ours = [name for name in ours if name not in used]
    return mapping


PART_PREFIXES = {
    "embedding": (EMB,),
    "attention": ("bert.encoder.layer.0.attention.",),
    "mlp": ("bert.encoder.layer.0.intermediate.", "bert.encoder.layer.0.output."),
    "layer": ("bert.encoder.layer.0.",),
}


def map_part(
    theirs: list[ParamInfo],
    ours: dict[str, tuple[int, ...]],
    sizes: Sizes,
    part: str,
    override: dict[str, str] | None = None,
) -> Mapping:
    """One part on its own: an embedding maps onto our embeddings, an attention, MLP or layer onto our layer 0."""
    if part == "model":
        return map_parameters(theirs, ours, sizes, override)
    mapping = Mapping()
    modules = _modules(theirs)
    if part == "embedding":
        _map_outside_layers(modules, {}, sizes, mapping)
    else:
        _map_layer(modules, 0, sizes, mapping)
    if part == "mlp":  # a feed-forward's own LayerNorm is the layer's second
        for name, sources in mapping.entries.items():
            mapping.entries[name] = [
                s.replace("attention.output.LayerNorm", "output.LayerNorm") for s in sources
            ]
    for name, value in (override or {}).items():
        mapping.entries[name] = [piece.strip() for piece in value.split("+")]
    used = {source for sources in mapping.entries.values() for source in sources}
    mapping.unmapped_theirs = [p.name for p in theirs if p.name not in mapping.entries]
    mapping.unmapped_ours = [
        name for name in ours if name.startswith(PART_PREFIXES[part]) and name not in used
    ]
    return mapping


def _hf_name(name: str, ours: dict[str, tuple[int, ...]]) -> str | None:
    """Our name equal to theirs, or ending with it after a prefix (`bert.`, `model.`)."""
    candidates = [o for o in ours if o == name or o.endswith("." + name) or name.endswith("." + o)]
    return candidates[0] if len(candidates) == 1 else None


def _modules(params: list[ParamInfo]) -> dict[str, list[ParamInfo]]:
    """Owner module path -> its parameters, in registration order. A module holding several matrices of its own
    (raw nn.Parameter W_q, W_k, … as notebooks write them) is split: one group per matrix, with its bias (b_q)."""
    modules: dict[str, list[ParamInfo]] = {}
    for p in params:
        modules.setdefault(p.module, []).append(p)
    split = {}
    for path, group in modules.items():
        matrices = [p for p in group if len(p.shape) == 2]
        if len(matrices) < 2 or group[0].module_type == "MultiheadAttention":
            split[path] = group
            continue
        for matrix in matrices:
            key = _raw_key(matrix.name)
            bias = [p for p in group if len(p.shape) == 1 and _raw_key(p.name) == key]
            split[f"{path}.{_last(matrix.name)}" if path else _last(matrix.name)] = [matrix, *bias[:1]]
    return split


def _raw_key(name: str) -> str:
    """W_qkv and b_qkv -> qkv; Wq and bq -> q: what a raw matrix and its bias share."""
    last = _last(name)
    return re.sub(r"^(w|b|weight|bias)_?", "", last) or last


def layer_index(path: str, container: str | None) -> int | None:
    """The layer a module path lies in: the integer after the layers' container."""
    if container is None or not path.startswith(container + "."):
        return None
    head = path[len(container) + 1 :].split(".")[0]
    return int(head) if head.isdigit() else None


def layers_container(paths: list[str], num_layers: int) -> str | None:
    """The path prefix followed by 0..num_layers-1 (`encoder.layer`, `transformer_blocks`, `layers`)."""
    found: dict[str, set[int]] = {}
    for path in paths:
        parts = path.split(".")
        for at, part in enumerate(parts):
            if part.isdigit():
                found.setdefault(".".join(parts[:at]), set()).add(int(part))
                break
    for prefix, indices in found.items():
        if indices == set(range(num_layers)):
            return prefix
    return None


def _map_by_role(params: list[ParamInfo], sizes: Sizes, mapping: Mapping) -> None:
    modules = _modules(params)
    container = layers_container(list(modules), sizes.num_hidden_layers)
    per_layer: dict[int, dict[str, list[ParamInfo]]] = {}
    before = {}
    after = {}
    starts = [
        g[0].ran for p, g in modules.items() if layer_index(p, container) is not None and g[0].ran is not None
    ]
    for path, group in modules.items():
        index = layer_index(path, container)
        if index is not None:
            per_layer.setdefault(index, {})[path] = group
        elif (
            group[0].ran is not None and starts
        ):  # run order decides: a head declared before the layers runs after
            (after if group[0].ran > min(starts) else before)[path] = group
        elif per_layer:
            after[path] = group
        else:
            before[path] = group
    for index, layer_modules in per_layer.items():
        _map_layer(layer_modules, index, sizes, mapping)
    _map_outside_layers(before, after, sizes, mapping)


def _is_norm(group: list[ParamInfo], hidden: int) -> bool:
    return "norm" in group[0].module_type.lower() and all(p.shape == (hidden,) for p in group)


WEIGHT_NAMES = ("weight", "gamma", "a_2", "scale", "g")


def _weight_and_bias(group: list[ParamInfo]) -> tuple[ParamInfo | None, ParamInfo | None]:
    weight = next((p for p in group if len(p.shape) == 2 or _last(p.name) in WEIGHT_NAMES), None)
    bias = next((p for p in group if p is not weight and len(p.shape) == 1), None)
    return weight, bias


def _last(name: str) -> str:
    return name.rsplit(".", 1)[-1].lower()


def _is_raw(weight: ParamInfo) -> bool:
    """A matrix that is not an nn.Linear's or an embedding's: a notebook's nn.Parameter, used as x @ W."""
    return len(weight.shape) == 2 and _last(weight.name) != "weight" and "Embedding" not in weight.module_type


def _assign(mapping: Mapping, group: list[ParamInfo], ours: str) -> None:
    """Their weight (and bias) <- our `ours.weight` (and `ours.bias`)."""
    weight, bias = _weight_and_bias(group)
    if weight is not None:
        mapping.entries[weight.name] = [ours + ".weight"] + ([TRANSPOSED] if _is_raw(weight) else [])
    if bias is not None:
        mapping.entries[bias.name] = [ours + ".bias"]


ROLE_WORDS = {
    "q": re.compile(r"^(q|query|wq|w_q|q_proj|to_q|project_query|q_linear|queries)$"),
    "k": re.compile(r"^(k|key|wk|w_k|k_proj|to_k|project_key|k_linear|keys)$"),
    "v": re.compile(r"^(v|value|wv|w_v|v_proj|to_v|project_value|v_linear|values)$"),
    "o": re.compile(
        r"^(o|wo|w_o|o_proj|out_proj|output_linear|out|proj|dense|c_proj|output|project_output|fc_out)$"
    ),
}


def _square_role(path: str) -> str | None:
    parts = path.lower().split(".")
    if parts[-1].isdigit() and len(parts) > 1 and "linear" in parts[-2] and int(parts[-1]) < 3:
        return "qkv"[int(parts[-1])]  # the tutorial's linear_layers[0..2]
    for role, pattern in ROLE_WORDS.items():
        if pattern.search(parts[-1]):
            return role
    return None


def _norm_order(paths: list[str]) -> list[str]:
    """LayerNorms in the order ln1, ln2: a trailing 1/2 in their names decides, else registration order."""
    numbers = [re.search(r"([12])\D*$", p.split(".")[-1]) for p in paths]
    if len(paths) == 2 and all(numbers) and numbers[0].group(1) != numbers[1].group(1):
        return [p for _, p in sorted(zip([n.group(1) for n in numbers], paths, strict=True))]
    return paths


def _map_layer(layer_modules: dict[str, list[ParamInfo]], index: int, sizes: Sizes, mapping: Mapping) -> None:
    """Q, K, V (separate or fused), output, two LayerNorms and the feed-forward of one layer."""
    roles = layer_role_names(index)
    h = sizes.hidden_size
    inner = sizes.intermediate_size
    squares = []
    norms = []
    fused = False
    for path, group in layer_modules.items():
        names = {_last(p.name): p for p in group}
        weight, bias = _weight_and_bias(group)
        if "in_proj_weight" in names or (weight is not None and weight.shape in ((3 * h, h), (h, 3 * h))):
            fused_weight = names.get("in_proj_weight", weight)
            fused_bias = names.get("in_proj_bias", bias if "in_proj_weight" not in names else None)
            mapping.entries[fused_weight.name] = [roles[r] + ".weight" for r in "qkv"] + (
                [TRANSPOSED] if fused_weight.shape == (h, 3 * h) else []
            )
            if fused_bias is not None:
                mapping.entries[fused_bias.name] = [roles[r] + ".bias" for r in "qkv"]
            fused = True
        elif _is_norm(group, h):
            norms.append(path)
        elif weight is not None and weight.shape in ((inner, h), (h, inner)):
            first = (weight.shape == (inner, h)) != _is_raw(
                weight
            )  # a raw (H, I) matrix is the first, as x @ W
            _assign(mapping, group, roles["ff1" if first else "ff2"])
        elif weight is not None and weight.shape == (h, h):
            squares.append(path)
    _map_squares(squares, ["o"] if fused else ["q", "k", "v", "o"], layer_modules, roles, mapping)
    for path, role in zip(_norm_order(norms), ("ln1", "ln2"), strict=False):
        _assign(mapping, layer_modules[path], roles[role])


def _map_squares(
    squares: list[str],
    free: list[str],
    layer_modules: dict[str, list[ParamInfo]],
    roles: dict[str, str],
    mapping: Mapping,
) -> None:
    """The (H, H) projections: by name where names say, the rest in order Q, K, V, output."""
    named = {path: _square_role(path) for path in squares}
    placed = set()
    for path in squares:
        role = named[path]
        if role in free and list(named.values()).count(role) == 1:
            _assign(mapping, layer_modules[path], roles[role])
            free.remove(role)
            placed.add(path)
    for path, role in zip([p for p in squares if p not in placed], list(free), strict=False):
        _assign(mapping, layer_modules[path], roles[role])


def _embedding_role(info: ParamInfo, sizes: Sizes) -> str | None:
    """word / position / segment for a (rows, H) table, by its name, else by its number of rows."""
    name = info.name.lower()
    if re.search(r"seg|type|sent", name):
        return "segment"
    if re.search(r"pos", name):
        return "position"
    if re.search(r"word|tok|vocab", name):
        return "word"
    rows = info.shape[0]
    if rows == sizes.vocab_size:
        return "word"
    if rows == sizes.max_position_embeddings:
        return "position"
    return "segment" if rows in (2, 3) else None


def _map_table(mapping: Mapping, info: ParamInfo, role: str) -> None:
    ours = {
        "word": EMB + "word_embeddings.weight",
        "position": EMB + "position_embeddings.weight",
        "segment": EMB + "token_type_embeddings.weight",
    }[role]
    if (
        role == "segment" and info.shape[0] == 3
    ):  # segments 1/2 with 0 for padding, as the BERT-pytorch tutorial
        mapping.entries[info.name] = [ZERO_ROW, ours]
    else:
        mapping.entries[info.name] = [ours]


def _map_outside_layers(
    before: dict[str, list[ParamInfo]], after: dict[str, list[ParamInfo]], sizes: Sizes, mapping: Mapping
) -> None:
    """Embeddings and their LayerNorm before the layers; pooler, MLM and NSP heads after them."""
    h = sizes.hidden_size
    squares = []
    norms = []
    for path, group in [*before.items(), *after.items()]:
        weight, bias = _weight_and_bias(group)
        if _is_norm(group, h):
            if path in before or "emb" in path.lower():
                _assign(mapping, group, EMB + "LayerNorm")
            else:
                norms.append(path)
        elif weight is None or len(weight.shape) != 2:
            _map_loose(mapping, group, sizes)
        elif "Embedding" in weight.module_type or (weight.shape[1] == h and "emb" in weight.name.lower()):
            role = _embedding_role(weight, sizes)
            if role:
                _map_table(mapping, weight, role)
        elif weight.shape == (sizes.vocab_size, h):
            mapping.entries[weight.name] = [EMB + "word_embeddings.weight"]
            if bias is not None:
                mapping.entries[bias.name] = ["cls.predictions.bias"]
        elif weight.shape == (2, h):
            _assign(mapping, group, "cls.seq_relationship")
        elif weight.shape == (h, h):
            squares.append(path)
    modules = {**before, **after}
    transform = _map_head_squares(squares, modules, mapping)
    for path in norms:
        _assign(mapping, modules[path], _head_norm_role(path, modules, transform))


def _map_loose(mapping: Mapping, group: list[ParamInfo], sizes: Sizes) -> None:
    """Parameters of a module that holds no matrix: the MLM decoder's bias (V,), and a position table (1, P, H)
    added to the (B, T, H) sum as it is (Dive into Deep Learning's `pos_embedding`)."""
    vectors = [p for p in group if p.shape == (sizes.vocab_size,)]
    if vectors:
        mapping.entries[vectors[0].name] = ["cls.predictions.bias"]
    for info in group:
        if info.shape == (1, sizes.max_position_embeddings, sizes.hidden_size):
            mapping.entries[info.name] = [EMB + "position_embeddings.weight"]


def _head_norm_role(path: str, modules: dict[str, list[ParamInfo]], transform: str | None) -> str:
    """A LayerNorm after the layers: the MLM transform's when it runs after the transform's dense (as observed in
    the trial pass), a final LayerNorm on the encoder's output when it runs before; else by its name."""
    ran = modules[path][0].ran
    dense_ran = modules[transform][0].ran if transform else None
    if ran is not None and dense_ran is not None:
        return "cls.predictions.transform.LayerNorm" if ran > dense_ran else FINAL_NORM
    if _says_head(path):
        return "cls.predictions.transform.LayerNorm"
    return FINAL_NORM


def _observed_head(group: list[ParamInfo]) -> str | None:
    """What a (H, H) dense after the layers does, from its output in the trial pass: (B, H) from the [CLS] position
    is the pooler's, (B, T, H) per token the MLM transform's."""
    output = group[0].output
    return None if output is None else {2: "pooler", 3: "transform"}.get(len(output))


def _map_head_squares(
    squares: list[str], modules: dict[str, list[ParamInfo]], mapping: Mapping
) -> str | None:
    """The pooler's dense and the MLM transform's dense: by what they output, by name, else the pooler first.
    Returns the transform's module path."""
    seen = {p: _observed_head(modules[p]) for p in squares}
    pooler = [p for p in squares if seen[p] == "pooler" or (seen[p] is None and "pool" in p.lower())]
    transform = [
        p
        for p in squares
        if p not in pooler and (seen[p] == "transform" or (seen[p] is None and _says_head(p)))
    ]
    rest = [p for p in squares if p not in pooler and p not in transform and seen[p] is None]
    if not pooler and rest:
        pooler.append(rest.pop(0))
    if not transform and rest:
        transform.append(rest.pop(0))
    if pooler:
        _assign(mapping, modules[pooler[0]], "bert.pooler.dense")
    if transform:
        _assign(mapping, modules[transform[0]], "cls.predictions.transform.dense")
    return transform[0] if transform else None
