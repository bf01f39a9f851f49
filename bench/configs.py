"""The evaluation configs that are timed, and the input columns each one reads.

Every case is a ``spark_calib.evaluate`` config mapping over a log of ``bench.generate``. The
binary configs name ``score``/``label``; the multiclass ones ``probs``/``label`` with a fixed K,
so that no case spends a job inferring K from the data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.generate import num_classes

Config = dict[str, Any]

BINARY = "binary"
MODEL_VERSION = "model_version"
OVERALL: list[str] = []
TYPICAL_SLICES = [OVERALL, ["country"], ["device"], ["country", "device"]]
WIDE_SLICES = [
    OVERALL,
    ["country"],
    ["device"],
    ["tier"],
    ["event_date"],
    ["country", "device"],
]
# The one slice set whose every value MLlib is timed on (see bench.baselines_mllib).
MLLIB_SLICE = "device"

# The task defaults of spark_calib (README, "Config reference").
DEFAULT_METRICS = ("ece", "mce", "rmsce", "brier", "nll", "accuracy", "count")
METRICS_3 = ("ece", "brier", "accuracy")
# Every binary metric that comes out of the one scan (no extra-pass roc_auc/pr_auc, no tables).
METRICS_ALL_BINARY = (
    *DEFAULT_METRICS,
    "error_rate",
    "balanced_accuracy",
    "precision",
    "recall",
    "f1",
    "roc_auc_binned",
    "pr_auc_binned",
)
# The same for multiclass: the binned ranking metrics are binary only.
METRICS_ALL_MULTICLASS = METRICS_ALL_BINARY[: -len(("roc_auc_binned", "pr_auc_binned"))]
CLASSWISE_METRICS = (*DEFAULT_METRICS, "classwise_ece")

STRATEGY_AUTO = "auto"
STRATEGIES = ("finest_grain", "grouping_sets")


def base_config(task: str) -> Config:
    """Task and columns of a log of ``bench.generate`` (``binary`` or ``multiclassK``)."""
    if task == BINARY:
        columns = {"score": "score", "label": "label", MODEL_VERSION: MODEL_VERSION}
        return {"task": BINARY, "columns": columns}
    columns = {"probs": "probs", "label": "label", MODEL_VERSION: MODEL_VERSION}
    return {"task": "multiclass", "num_classes": num_classes(task), "columns": columns}


def config(
    task: str,
    slices: Sequence[Sequence[str]],
    metrics: Sequence[str] | None = None,
    strategy: str = STRATEGY_AUTO,
) -> Config:
    """A full config: ``metrics`` None keeps the task defaults, ``strategy`` auto lets
    spark_calib choose (finest_grain up to 3 slice columns, else grouping_sets)."""
    cfg = base_config(task)
    cfg["slices"] = [list(s) for s in slices]
    if metrics is not None:
        cfg["metrics"] = list(metrics)
    if strategy != STRATEGY_AUTO:
        cfg["slice_strategy"] = strategy
    return cfg


def metrics_all(task: str) -> tuple[str, ...]:
    """Every one-pass metric of ``task``."""
    return METRICS_ALL_BINARY if task == BINARY else METRICS_ALL_MULTICLASS


def needed_columns(cfg: Config) -> list[str]:
    """The input columns the evaluation of ``cfg`` reads: the column roles, then the slice
    columns, each once, in that order."""
    names = list(cfg["columns"].values())
    for slice_set in cfg["slices"]:
        names.extend(slice_set)
    return list(dict.fromkeys(names))


def slice_columns(slices: Sequence[Sequence[str]]) -> list[str]:
    """The distinct slice columns of a slice list, in first-use order."""
    return list(dict.fromkeys(name for slice_set in slices for name in slice_set))
