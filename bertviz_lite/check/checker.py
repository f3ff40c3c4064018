"""Check learners' files: their code runs in the worker, the comparison and the naming of mistakes here."""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from bertviz_lite.check.compare import Finding, compare, explain, unexplained
from bertviz_lite.check.mapping import FINAL_NORM
from bertviz_lite.check.mistakes import DESIGN_CHOICES, OBSERVED
from bertviz_lite.check.reference import (
    Recipe,
    check_config,
    part_stages,
    reference_stages,
    reference_weights,
    seeded_weights,
    sentence_pairs,
)
from bertviz_lite.check.report import Report, error_report
from bertviz_lite.check.sandbox import MEMORY_LIMIT_BYTES, TIME_LIMIT_S, run_jobs

PARTS = ("embedding", "attention", "mlp", "layer", "model", "masking")
PART_STAGES = {
    "embedding": ("embeddings.",),
    "attention": ("layer.0.attention.",),
    "mlp": ("layer.0.feed_forward", "layer.0.output"),
    "layer": ("layer.0.",),
    "model": ("",),
}
FAILURES = {
    "exception": "raised an exception",
    "timeout": "ran past the time limit",
    "memory": "ran out of memory",
    "crashed": "crashed",
}


@dataclass
class CheckRequest:
    """One file to check: which part, which class (or function), and any weight names to map by hand."""

    file: Path
    part: str = "model"
    class_name: str | None = None
    override: dict[str, str] | None = None


def check_file(path: str | Path, part: str = "model", class_name: str | None = None, **limits) -> Report:
    """Check one learner's file; see check_files."""
    return check_files([CheckRequest(Path(path), part, class_name)], **limits)[0]


def check_files(
    requests: list[CheckRequest], time_limit: float = TIME_LIMIT_S, memory_limit: int = MEMORY_LIMIT_BYTES
) -> list[Report]:
    """One report per request; all of them run in one child process, one after another."""
    from bertviz_lite.check.masking_check import masking_report

    config = check_config()
    weights = seeded_weights(config)
    ids, seg = sentence_pairs(config)
    bert = reference_stages(reference_weights(weights, []), ids, seg, config)
    inputs = {
        "input_ids": ids,
        "token_type_ids": seg,
        "layer_input": bert["embeddings.layer_norm"].float(),
        "mlp_input": bert["layer.0.attention.layer_norm"].float(),
    }
    jobs = [
        {"file": str(r.file.resolve()), "part": r.part, "class": r.class_name, "override": r.override}
        for r in requests
    ]
    results = run_jobs(jobs, asdict(config), weights, inputs, time_limit, memory_limit)
    reports = []
    with one_thread():
        for request, (result, tensors) in zip(requests, results, strict=True):
            if request.part == "masking" and result.get("status") == "ran":
                reports.append(masking_report(result, tensors, _subject(request, result)))
            else:
                reports.append(report_for(request, result, tensors, weights, inputs))
    return reports


@contextmanager
def one_thread():
    """Torch on one thread while the search runs ~100 tiny reference passes: on a busy 2-core machine two threads
    made each pass 80 ms instead of 1 ms."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _subject(request: CheckRequest, result: dict[str, Any]) -> str:
    return f"{result.get('class') or request.class_name or 'the model'} in {request.file.name}"


def report_for(
    request: CheckRequest,
    result: dict[str, Any],
    tensors: dict[str, Tensor],
    weights: dict[str, Tensor],
    inputs: dict[str, Tensor],
) -> Report:
    """The report of one finished (or failed) job."""
    subject = _subject(request, result)
    if result.get("status") != "ran":
        return _failed_report(request, result, subject)
    eps = result["eps"][0] if len(result.get("eps", [])) == 1 else 1e-12
    reference = partial(
        _reference,
        reference_weights(weights, result["unmapped"]["ours"], eps),
        inputs["input_ids"],
        inputs["token_type_ids"],
        inputs,
        request.part,
    )
    theirs, evidence, recipe, findings = _prepared(request.part, result, tensors, reference)
    ours = reference(Recipe())
    stages = compare(theirs, ours)
    absent = set(result["unmapped"]["ours"])
    if "nsp_logits" not in theirs:  # no NSP head: a pooler it does not have is no finding
        absent.discard("bert.pooler.dense.weight")
    recipe, named = explain(theirs, reference, recipe, evidence, absent)
    findings = _in_stage_order(findings + named, [s.name for s in stages])
    final = compare(theirs, reference(recipe))
    leftover = unexplained(final)
    findings += [leftover] if leftover else []
    notes = list(result.get("problems", [])) + _absent_notes(request.part, theirs, ours)
    if eps != 1e-12:
        notes.append(f"your LayerNorms use eps={eps:g} (BERT: 1e-12); the reference used yours")
    design_only = all(f.code in DESIGN_CHOICES for f in findings)
    if design_only and findings:  # each stage against BERT as their design choices change it
        stages = final
        ours = reference(recipe)
        notes.append(
            f"stages compared with BERT as your design choices change it ({', '.join(_codes(findings))})"
        )
    verdict = "match" if design_only and all(s.ok for s in stages) else "differs"
    return Report(
        verdict,
        stages,
        findings,
        result["mapping"],
        result["unmapped"],
        notes,
        subject,
        request.part,
        tensors={"theirs": theirs, "ours": ours},
    )


def _failed_report(request: CheckRequest, result: dict[str, Any], subject: str) -> Report:
    """A job that did not run through: their file would not load or map (an error), or their model failed."""
    status = result.get("status")
    sentence = _failure_sentence(request, result)
    if status == "cannot-build" or result.get("phase") in ("load", "map"):
        return error_report(sentence, subject, request.part)
    return Report(
        "differs",
        findings=[Finding(status, result.get("phase", "run"), sentence)],
        subject=subject,
        part=request.part,
    )


def _codes(findings: list[Finding]) -> list[str]:
    return list(dict.fromkeys(f.code for f in findings))


def _absent_notes(part: str, theirs: dict[str, Tensor], ours: dict[str, Tensor]) -> list[str]:
    """What was not compared because their model has no such stage, said as such rather than as a difference."""
    notes = []
    hidden = [
        name.removesuffix(".attention.probs")
        for name in ours
        if name.endswith(".attention.probs") and name not in theirs
    ]
    if hidden:
        notes.append(
            f"attention probabilities not compared ({', '.join(hidden)}): your attention does not expose "
            "them (F.scaled_dot_product_attention keeps them inside; return them or keep them as self.attn to have "
            "them compared); the stages after them were compared"
        )
    if part == "model" and "nsp_logits" not in theirs:
        notes.append("no NSP head: NSP and pooler not checked (the exercise's Bert returns MLM logits only)")
    return notes


def _failure_sentence(request: CheckRequest, result: dict[str, Any]) -> str:
    status = result.get("status")
    if status == "cannot-build":
        return result["message"]
    what = {"load": "loading the file", "map": "building the model", "run": "running the model"}.get(
        result.get("phase", "run"), "running it"
    )
    where = f" (last frame: {result['where']})" if result.get("where") else ""
    return f"{request.file.name} {FAILURES.get(status, 'failed')} while {what}: {result.get('message', '')}{where}."


def _reference(
    weights: dict[str, Tensor], ids: Tensor, seg: Tensor, inputs: dict[str, Tensor], part: str, recipe: Recipe
) -> dict[str, Tensor]:
    """The reference's stages for `part`; an attention, MLP or layer starts from the input their part was given."""
    if part in ("attention", "mlp", "layer"):
        stages = part_stages(
            weights,
            ids,
            inputs["mlp_input" if part == "mlp" else "layer_input"],
            part,
            check_config(),
            recipe,
        )
    else:
        stages = reference_stages(weights, ids, seg, check_config(), recipe)
    return {k: v for k, v in stages.items() if k.startswith(PART_STAGES[part])}


def _prepared(part: str, result: dict[str, Any], tensors: dict[str, Tensor], reference):
    """Their stages as the reference names them, the evidence mistakes may use, the starting recipe and the
    findings seen in the run itself (live dropout, an untied decoder, log-probabilities)."""
    theirs = {k: v.double() for k, v in tensors.items()}
    findings = []
    recipe = Recipe()
    evidence = {}
    unmapped = result["unmapped"]["ours"]
    if part in ("attention", "mlp") and not any(
        "output.LayerNorm" in s and "attention" not in s for s in result["mapping"].values()
    ):
        theirs.pop("layer.0.output", None)  # their part ends before the residual + LayerNorm
    if part == "attention":
        theirs.pop("layer.0.output", None)
    if "part.output" in theirs and part in ("model", "embedding"):
        normed = "bert.embeddings.LayerNorm.weight" not in unmapped
        stage = (
            "encoder.output" if part == "model" else "embeddings.layer_norm" if normed else "embeddings.sum"
        )
        theirs.setdefault(stage, theirs["part.output"])
    if (
        "bert.embeddings.position_embeddings.weight" in unmapped
        and "embeddings.position" not in theirs
        and all(k in theirs for k in ("embeddings.sum", "embeddings.token", "embeddings.segment"))
    ):
        position = theirs["embeddings.sum"] - theirs["embeddings.token"] - theirs["embeddings.segment"]
        theirs["embeddings.position"] = position
        if bool(torch.allclose(position, position[:1].expand_as(position), atol=1e-5)):
            evidence["position_table"] = position[0]
    if "model.output" in theirs:
        output = theirs.pop("model.output")
        log_probs = bool((output.logsumexp(-1).abs() < 1e-3).all())
        theirs["mlm_logits"] = output
        recipe = replace(recipe, log_softmax=log_probs)
        if log_probs:
            findings.append(Finding("log-probabilities", "mlm_logits", OBSERVED["log-probabilities"]))
    if any(FINAL_NORM in source for source in result["mapping"].values()):
        recipe = replace(recipe, final_layernorm=True)
        findings.append(Finding("final-layernorm", "encoder.output", OBSERVED["final-layernorm"]))
    if result.get("dropout_stage"):
        findings.append(Finding("dropout-active", result["dropout_stage"], OBSERVED["dropout-active"]))
    if result.get("tied") is False:
        findings.append(Finding("mlm-head-untied", "mlm_logits", OBSERVED["mlm-head-untied"]))
    return theirs, evidence, recipe, findings


def _in_stage_order(findings: list[Finding], order: list[str]) -> list[Finding]:
    rank = {name: i for i, name in enumerate(order)}
    return sorted(findings, key=lambda f: rank.get(f.stage, math.inf))
