"""The one declaration of a run's metrics: keys, labels for charts, tables and headline numbers, formats."""

from bertviz_lite.runs.store import final_metrics
from bertviz_lite.training import metrics
from bertviz_lite.training.metrics import METRICS


def test_labels_name_the_split_in_each_place_they_are_shown():
    assert METRICS["mlm_loss"].label == "MLM loss (train)"
    assert METRICS["eval_nsp_acc"].label == "NSP accuracy (held-out)"
    assert METRICS["lr"].label == "Learning rate" and METRICS["loss"].label == "Total loss (train)"
    assert METRICS["eval_mlm_acc"].column_label == "Held-out MLM acc."
    assert METRICS["nsp_acc"].column_label == "NSP acc."
    assert METRICS["eval_mlm_acc"].headline_label == "held-out MLM accuracy"


def test_every_chart_table_and_headline_key_is_declared_and_eval_keys_mirror_train_keys():
    groups = (metrics.LOSS_CURVES, metrics.ACCURACY_CURVES, metrics.TABLE_METRICS, metrics.HEADLINE_METRICS)
    assert all(key in METRICS for group in groups for key in group)
    held_out = [key for key, metric in METRICS.items() if metric.split == metrics.HELD_OUT]
    assert held_out and all(key.removeprefix("eval_") in METRICS for key in held_out)


def test_headline_formats_losses_and_accuracies_and_skips_missing_values():
    last = final_metrics([{"mlm_loss": 2.0, "nsp_loss": 0.7}, {"mlm_loss": 1.23456, "eval_mlm_acc": 0.4567}])
    assert metrics.headline(last) == [
        ("MLM loss", "1.235"),
        ("NSP loss", "0.700"),
        ("held-out MLM accuracy", "45.7%"),
    ]
