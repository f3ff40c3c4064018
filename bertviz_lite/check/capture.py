"""The learner's side, inside the worker: our weights into their model, forward hooks on the modules that hold them.

A stage is named by our module whose output it is (`layer.0.attention.output` is what our attention output dense
gives); their module that holds the same weights is hooked for it. Shapes: B batch, T tokens, H hidden, nh heads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from bertviz_lite.check.mapping import (
    EMB,
    FINAL_NORM,
    TRANSPOSED,
    ZERO_ROW,
    Mapping,
    ParamInfo,
    layer_role_names,
)


def param_infos(
    model: nn.Module, observed: dict[int, tuple[int, tuple[int, ...] | None]] | None = None
) -> list[ParamInfo]:
    """Every parameter of theirs, tied ones under each name, with its owner module's path and class, and (from
    `observe`) when that module started in a trial pass and what it gave."""
    infos = []
    for path, module in model.named_modules(remove_duplicate=False):
        ran, output = (observed or {}).get(id(module), (None, None))
        for name, param in module.named_parameters(recurse=False):
            full = f"{path}.{name}" if path else name
            infos.append(ParamInfo(full, tuple(param.shape), path, type(module).__name__, ran, output))
    return infos


def observe(model: nn.Module, run: Callable[[], Any]) -> dict[int, tuple[int, tuple[int, ...] | None]]:
    """id(module) -> (the order it started in during `run`, the shape of its first output tensor): which dense
    runs per token and which on [CLS] alone, and which LayerNorm comes after which, whatever they are named."""
    seen: dict[int, tuple[int, tuple[int, ...] | None]] = {}

    def started(module, _inputs):
        seen.setdefault(id(module), (len(seen), None))

    def finished(module, _inputs, output):
        order, shape = seen[id(module)]
        value = first_tensor(output)
        if shape is None and value is not None and not value.is_nested:
            seen[id(module)] = (order, tuple(value.shape))

    handles = []
    for module in {id(m): m for m in model.modules()}.values():
        handles += [module.register_forward_pre_hook(started), module.register_forward_hook(finished)]
    try:
        with torch.no_grad():
            run()
    finally:
        for handle in handles:
            handle.remove()
    return seen


def _their_params(model: nn.Module) -> dict[str, nn.Parameter]:
    return {
        f"{path}.{name}" if path else name: param
        for path, module in model.named_modules(remove_duplicate=False)
        for name, param in module.named_parameters(recurse=False)
    }


@torch.no_grad()
def load_weights(model: nn.Module, mapping: Mapping, ours: dict[str, Tensor]) -> list[str]:
    """Fill their parameters from ours as the mapping says; returns a sentence per one that did not fit."""
    problems = []
    params = _their_params(model)
    for theirs, sources in list(mapping.entries.items()):
        hidden = ours[EMB + "word_embeddings.weight"].shape[1]
        stacked = [s for s in sources if s != TRANSPOSED]
        parts = [
            _constant(s, hidden) if s.startswith("<") else ours[s]
            for s in stacked
            if s.startswith("<") or s in ours
        ]
        value = torch.cat(parts) if len(parts) > 1 else parts[0] if parts else None
        target = params.get(theirs)
        if value is not None and TRANSPOSED in sources:
            value = value.T
        if value is not None and target is not None and target.shape == (1, *value.shape):
            value = value[None]  # a (1, P, H) position table
        if value is None or target is None or value.shape != target.shape:
            problems.append(
                f"{theirs} {tuple(target.shape) if target is not None else '?'} cannot take "
                f"{' + '.join(sources)}"
            )
            del mapping.entries[theirs]
            continue
        target.copy_(value.to(target.dtype))
    return problems


def _constant(source: str, hidden: int) -> Tensor:
    """A zero row (ZERO_ROW), or a final LayerNorm's ones (weight) and zeros (bias)."""
    if source == ZERO_ROW:
        return torch.zeros(1, hidden)
    return torch.ones(hidden) if source == FINAL_NORM + ".weight" else torch.zeros(hidden)


def first_tensor(value: Any, last_dim: int | None = None) -> Tensor | None:
    """The first tensor in a module's output (a tensor, a tuple, a list or a dict), with that last size if given."""
    if isinstance(value, Tensor):
        return value if last_dim is None or value.shape[-1] == last_dim else None
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (tuple, list)) else ()
    for item in items:
        if isinstance(item, Tensor) and (last_dim is None or item.shape[-1] == last_dim):
            return item
    return None


def owner(model: nn.Module, mapping: Mapping, ours: str, want: Callable[[nn.Module], bool] = lambda m: True):
    """Their module holding the parameter filled from our `ours` (and passing `want`)."""
    modules = dict(model.named_modules(remove_duplicate=False))
    params = _their_params(model)
    for theirs, sources in mapping.entries.items():
        if ours in sources and not _raw_matrix(theirs, params[theirs]):
            path = theirs.rsplit(".", 1)[0] if "." in theirs else ""
            if want(modules[path]):
                return path, modules[path]
    return None, None


def _raw_matrix(name: str, param: Tensor) -> bool:
    """A notebook's own nn.Parameter matrix, or a (1, P, H) position table: its module computes more than this
    parameter gives, so no hook."""
    raw = param.dim() == 2 and not name.endswith("weight")  # weight, in_proj_weight: a module's own
    return raw or param.dim() == 3


def _common_ancestor(paths: list[str]) -> str:
    parts = [p.split(".") for p in paths]
    common = []
    for pieces in zip(*parts, strict=False):
        if len(set(pieces)) != 1:
            break
        common.append(pieces[0])
    return ".".join(common)


class StageHooks:
    """Forward hooks that keep, per stage, the first tensor a module gives in one forward pass."""

    def __init__(self, model: nn.Module, mapping: Mapping, sizes: dict[str, int]):
        self.model = model
        self.mapping = mapping
        self.sizes = sizes
        self.modules = dict(model.named_modules(remove_duplicate=False))
        self.captured: dict[str, Tensor] = {}
        self.handles = []
        self.attention_modules: dict[str, str] = {}  # probabilities' stage -> their attention module's path

    def hook(self, stage: str, module: nn.Module, pick: Callable[[Any, Any], Tensor | None]) -> None:
        def keep(_module, inputs, output):
            value = pick(inputs, output)
            if isinstance(value, Tensor) and stage not in self.captured:
                self.captured[stage] = value.detach().float().clone()

        self.handles.append(module.register_forward_hook(keep))

    def output_of(
        self, stage: str, ours: str, want=lambda m: True, last_dim: int | None = None
    ) -> str | None:
        path, module = owner(self.model, self.mapping, ours, want)
        if module is not None:
            if type(module).__name__ == "NonDynamicallyQuantizableLinear":  # nn.MultiheadAttention's out_proj
                path, module = path.rsplit(".", 1)[0], self.modules[path.rsplit(".", 1)[0]]
            self.hook(stage, module, lambda _i, out: first_tensor(out, last_dim))
        return path

    def install(self) -> None:
        h = self.sizes["hidden_size"]
        token = self.output_of("embeddings.token", EMB + "word_embeddings.weight", _is_embedding)
        self.output_of("embeddings.position", EMB + "position_embeddings.weight")
        segment = self.output_of("embeddings.segment", EMB + "token_type_embeddings.weight")
        _, norm = owner(self.model, self.mapping, EMB + "LayerNorm.weight")
        if norm is not None:
            self.hook("embeddings.layer_norm", norm, lambda _i, out: first_tensor(out))
            self.hook("embeddings.sum", norm, lambda inputs, _o: first_tensor(inputs))
        elif (
            token is not None
            and segment is not None
            and self._embeddings_alone(_common_ancestor([token, segment]))
        ):
            self.hook(
                "embeddings.sum",
                self.modules[_common_ancestor([token, segment])],
                lambda _i, out: first_tensor(out, h),
            )
        for i in range(self.sizes["num_hidden_layers"]):
            self.install_layer(i)
        self.output_of("pooler", "bert.pooler.dense.weight")
        self.output_of("nsp_logits", "cls.seq_relationship.weight")  # MLM logits: what their model returns

    def _embeddings_alone(self, path: str) -> bool:
        """Whether their module at `path` (below the model) holds no layer: then its output is the embeddings' sum,
        else (an encoder that adds them inline, then runs the layers) the sum is no module's output."""
        inside = [theirs for theirs in self.mapping.entries if theirs.startswith(path + ".")]
        return bool(path) and not any(
            source.startswith("bert.encoder.layer.")
            for theirs in inside
            for source in self.mapping.entries[theirs]
        )

    def install_layer(self, i: int) -> None:
        roles = layer_role_names(i)
        name = f"layer.{i}."
        h = self.sizes["hidden_size"]
        attention = [self.output_of(name + "attention.output", roles["o"] + ".weight", last_dim=h)]
        self.output_of(name + "attention.layer_norm", roles["ln1"] + ".weight")
        self.output_of(name + "feed_forward", roles["ff2"] + ".weight")
        attention += [owner(self.model, self.mapping, roles[r] + ".weight")[0] for r in "qkv"]
        attention = [p for p in attention if p is not None]
        everything = [
            theirs.rsplit(".", 1)[0]
            for theirs, sources in self.mapping.entries.items()
            if any(s.startswith(f"bert.encoder.layer.{i}.") for s in sources)
        ]
        if everything:
            self.hook(
                name + "output",
                self.modules[_common_ancestor(everything)],
                lambda _i, out: first_tensor(out, h),
            )
            if (
                i == 0
            ):  # what the first layer reads: the embeddings' output, where no module of theirs gives it
                self.hook(
                    "layer.0.input",
                    self.modules[_common_ancestor(everything)],
                    lambda inputs, _o: first_tensor(inputs, h),
                )
        if attention:
            container = _common_ancestor(attention)
            if isinstance(
                self.modules.get(container), nn.ModuleList
            ):  # linears[0..3]: their attention is its parent
                container = container.rsplit(".", 1)[0] if "." in container else ""
            self.hook_probabilities(name + "attention.probs", container)
            self.attention_modules[name + "attention.probs"] = container

    def hook_probabilities(self, stage: str, container: str) -> None:
        """Attention probabilities where their attention exposes them: a module's (B, nh, T, T) output or input
        (a Softmax, a Dropout on the probabilities, an attention function returning them)."""
        nh = self.sizes["num_attention_heads"]

        def pick(inputs, output):
            candidates = [*(output if isinstance(output, (tuple, list)) else (output,)), *inputs]
            return next((item for item in candidates if _looks_like_probs(item, nh)), None)

        for path, module in self.modules.items():
            if path == container or path.startswith(container + ".") or not container:
                self.hook(stage, module, pick)
                if isinstance(module, nn.MultiheadAttention):
                    self.handles.append(
                        module.register_forward_pre_hook(_every_heads_weights, with_kwargs=True)
                    )

    def exposed(self, batch: int) -> None:
        """After a pass of `batch` rows: probabilities their attention keeps as an attribute (self.attn,
        self.last_attention), and every head's probabilities as (B, nh, T, T) where their code folds the heads into
        the batch, (B * nh, T, T), as Dive into Deep Learning's `transpose_qkv` does."""
        nh = self.sizes["num_attention_heads"]
        for stage, path in self.attention_modules.items():
            if stage in self.captured or path not in self.modules:
                continue
            for value in vars(self.modules[path]).values():
                if _looks_like_probs(value, nh):
                    self.captured[stage] = value.detach().float().clone()
                    break
        for stage, value in self.captured.items():
            if stage.endswith("attention.probs") and nh > 1 and value.dim() == 3 and len(value) == batch * nh:
                self.captured[stage] = value.reshape(batch, nh, *value.shape[1:])

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def _every_heads_weights(_module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """nn.MultiheadAttention called as if with need_weights=True, average_attn_weights=False: it then returns each
    head's (B, nh, T, T) probabilities beside its output, which its caller (nn.TransformerEncoderLayer, or theirs
    taking `[0]` or `out, _`) leaves unused; the output is the same."""
    args = list(args)
    for index, name in ((4, "need_weights"), (6, "average_attn_weights")):  # their positions in its forward
        if len(args) > index:
            args[index] = name == "need_weights"
        else:
            kwargs[name] = name == "need_weights"
    return tuple(args), kwargs


def _is_embedding(module: nn.Module) -> bool:
    return isinstance(module, nn.Embedding) or "embed" in type(module).__name__.lower()


def _looks_like_probs(value: Any, heads: int) -> bool:
    """(B, nh, T, T) with rows or columns summing to 1, or nn.MultiheadAttention's head average (B, T, T)."""
    if not isinstance(value, Tensor) or value.dim() not in (3, 4) or value.shape[-1] != value.shape[-2]:
        return False
    if value.dim() == 4 and value.shape[1] != heads:
        return False
    if not torch.is_floating_point(value) or bool((value < 0).any()):
        return False
    ones = torch.ones((), dtype=value.dtype)
    return bool(
        torch.allclose(value.sum(-1), ones, atol=1e-4) or torch.allclose(value.sum(-2), ones, atol=1e-4)
    )
