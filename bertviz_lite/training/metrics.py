"""The metrics a run logs in metrics.jsonl, declared once: key, name, table label, split and kind.

The trainer writes these keys (train lines, and eval lines with `eval_` in front); the Train, Compare runs and
Checkpoints pages, and the checkpoints table, take their keys, labels and number formats from here.
"""

from __future__ import annotations

from dataclasses import dataclass

TRAIN = "train"
HELD_OUT = "held-out"


@dataclass(frozen=True)
class Metric:
    """One logged metric: its key in metrics.jsonl and how people read it."""

    key: str
    name: str  # "MLM accuracy"
    short: str  # a table column's name, "MLM acc."
    split: str | None = None  # TRAIN, HELD_OUT, or None for lr and speed
    kind: str = "loss"  # "loss", "accuracy", "rate" or "speed"

    @property
    def label(self) -> str:
        """The name with its split, "MLM accuracy (held-out)"."""
        return f"{self.name} ({self.split})" if self.split else self.name

    @property
    def column_label(self) -> str:
        """A table column's title, "Held-out MLM acc."."""
        return f"Held-out {self.short}" if self.split == HELD_OUT else self.short

    @property
    def headline_label(self) -> str:
        """A headline number's label, "held-out MLM accuracy"."""
        return f"held-out {self.name}" if self.split == HELD_OUT else self.name

    @property
    def percent(self) -> bool:
        return self.kind == "accuracy"

    def format(self, value: float) -> str:
        """The value as the pages print it: accuracies as percentages, losses with 3 decimals."""
        return f"{value:.1%}" if self.percent else f"{value:.3f}"


def _pair(key: str, name: str, short: str, kind: str) -> tuple[Metric, Metric]:
    return Metric(key, name, short, TRAIN, kind), Metric(f"eval_{key}", name, short, HELD_OUT, kind)


_MLM_LOSS, _EVAL_MLM_LOSS = _pair("mlm_loss", "MLM loss", "MLM loss", "loss")
_NSP_LOSS, _EVAL_NSP_LOSS = _pair("nsp_loss", "NSP loss", "NSP loss", "loss")
_MLM_ACC, _EVAL_MLM_ACC = _pair("mlm_acc", "MLM accuracy", "MLM acc.", "accuracy")
_NSP_ACC, _EVAL_NSP_ACC = _pair("nsp_acc", "NSP accuracy", "NSP acc.", "accuracy")
METRICS = {
    metric.key: metric
    for metric in (
        _MLM_LOSS,
        _NSP_LOSS,
        Metric("loss", "Total loss", "Loss", TRAIN),
        _EVAL_MLM_LOSS,
        _EVAL_NSP_LOSS,
        _MLM_ACC,
        _NSP_ACC,
        _EVAL_MLM_ACC,
        _EVAL_NSP_ACC,
        Metric("lr", "Learning rate", "LR", kind="rate"),
        Metric("tokens_per_s", "Tokens per second", "Tokens/s", kind="speed"),
    )
}
LOSS_CURVES = ("mlm_loss", "nsp_loss", "eval_mlm_loss", "eval_nsp_loss")  # the Train page's loss chart
ACCURACY_CURVES = ("mlm_acc", "nsp_acc", "eval_mlm_acc", "eval_nsp_acc")  # its accuracy chart
# The checkpoints table's columns.
TABLE_METRICS = ("mlm_loss", "nsp_loss", "mlm_acc", "nsp_acc", "eval_mlm_acc", "eval_nsp_acc")
HEADLINE_METRICS = ("mlm_loss", "nsp_loss", "eval_mlm_acc", "eval_nsp_acc")  # a finished run's numbers


def headline(last: dict[str, float]) -> list[tuple[str, str]]:
    """(label, formatted value) of the headline metrics present in `last` (a run's final values)."""
    shown = [METRICS[key] for key in HEADLINE_METRICS if key in last]
    return [(metric.headline_label, metric.format(last[metric.key])) for metric in shown]
