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
# The decision and score metrics of the one scan that both classification tasks have.
METRICS_ONE_SCAN_COMMON = (
    *DEFAULT_METRICS,
    "error_rate",
    "balanced_accuracy",
    "precision",
    "recall",
    "f1",
)
# The moment-sum calibration summaries of statistics v2 valid for binary and multiclass.
MOMENT_METRICS_COMMON = (
    "mean_prediction",
    "mean_label",
    "calibration_ratio",
    "calibration_in_the_large",
    "spiegelhalter_z",
    "spiegelhalter_p",
)
# Moment-sum metrics of the binary (positive-class) view only.
MOMENT_METRICS_BINARY = (
    "normalized_entropy",
    "brier_reliability",
    "brier_resolution",
    "brier_uncertainty",
)
# Metrics from the fine cells of the binary score (spark_calib.rows.cells); smooth_ece collects
# at most 1,001 node sums per key to the driver.
CELL_METRICS = (
    "roc_auc_binned",
    "pr_auc_binned",
    "ks_calibration",
    "hosmer_lemeshow",
    "hosmer_lemeshow_p",
    "calibration_slope",
    "calibration_intercept",
    "smooth_ece",
)
# Every binary metric that comes out of the one scan (no extra-pass roc_auc/pr_auc, no tables).
METRICS_ALL_BINARY = (
    *METRICS_ONE_SCAN_COMMON,
    *MOMENT_METRICS_COMMON,
    *MOMENT_METRICS_BINARY,
    *CELL_METRICS,
)
# The two metrics of the Newton fit on the cells (Cox 1958): metrics_all and ctr also time
# metrics_all without them, to show what the rest of metrics_all costs.
COX_METRICS = ("calibration_slope", "calibration_intercept")
METRICS_ALL_BINARY_WITHOUT_COX = tuple(m for m in METRICS_ALL_BINARY if m not in COX_METRICS)
# The same for multiclass: the cell metrics and the binary-view moment metrics are binary only.
METRICS_ALL_MULTICLASS = (*METRICS_ONE_SCAN_COMMON, *MOMENT_METRICS_COMMON)
CLASSWISE_METRICS = (*DEFAULT_METRICS, "classwise_ece")

STRATEGY_AUTO = "auto"
EQUAL_MASS = "equal_mass"
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
    binning: str | None = None,
) -> Config:
    """A full config: ``metrics`` None keeps the task defaults, ``strategy`` auto lets
    spark_calib choose (finest_grain up to 3 slice columns, else grouping_sets), ``binning``
    None keeps the default bins (``equal_mass``: ``binning.strategy: equal_mass``)."""
    cfg = base_config(task)
    cfg["slices"] = [list(s) for s in slices]
    if metrics is not None:
        cfg["metrics"] = list(metrics)
    if strategy != STRATEGY_AUTO:
        cfg["slice_strategy"] = strategy
    if binning is not None:
        cfg["binning"] = {"strategy": binning}
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
