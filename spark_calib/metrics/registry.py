"""The explicit registry of metric names: what each computes, for which tasks, at which scope.

A metric is a Column expression over the per-key sums built in ``spark_calib.metrics.compute``
(``_n``, ``_w`` = W, ``_abs_gap`` = Σ_b |S_b|, ``_max_gap``, ``_sq_gap`` = Σ_b S_b²/W_b,
``_brier``, ``_nll``, ``_correct``), where S_b = Σ_{i∈b} w_i (correct_i − conf_i).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F

from spark_calib.errors import ConfigError

TOP_LABEL = "top_label"
PER_CLASS = "per_class"
ALL_TASKS = frozenset({"binary", "multiclass", "top_label"})
PROBABILISTIC_TASKS = frozenset({"binary", "multiclass"})


@dataclass(frozen=True)
class MetricSpec:
    """One metric: ``value`` builds its Column from the per-key sums; ``scope`` says whether it
    reads the top-label statistics or the one-vs-rest per-class statistics."""

    name: str
    scope: str
    tasks: frozenset[str]
    value: Callable[[], Column]
    default: bool = True


def _ratio(numerator: str) -> Callable[[], Column]:
    return lambda: F.try_divide(F.col(numerator), F.col("_w"))


def _ece() -> Column:
    return F.try_divide(F.col("_abs_gap"), F.col("_w"))


METRICS: dict[str, MetricSpec] = {
    spec.name: spec
    for spec in [
        MetricSpec("ece", TOP_LABEL, ALL_TASKS, _ece),
        MetricSpec("mce", TOP_LABEL, ALL_TASKS, lambda: F.col("_max_gap")),
        MetricSpec(
            "rmsce",
            TOP_LABEL,
            ALL_TASKS,
            lambda: F.sqrt(F.try_divide(F.col("_sq_gap"), F.col("_w"))),
        ),
        MetricSpec("brier", TOP_LABEL, ALL_TASKS, _ratio("_brier")),
        MetricSpec("nll", TOP_LABEL, PROBABILISTIC_TASKS, _ratio("_nll")),
        MetricSpec("accuracy", TOP_LABEL, ALL_TASKS, _ratio("_correct")),
        MetricSpec("count", TOP_LABEL, ALL_TASKS, lambda: F.col("_n").cast("double")),
        MetricSpec("classwise_ece", PER_CLASS, PROBABILISTIC_TASKS, _ece, default=False),
    ]
}


def available_metrics(task: str) -> list[str]:
    """Every metric name valid for ``task``, in registry order."""
    return [name for name, spec in METRICS.items() if task in spec.tasks]


def resolve_metrics(task: str, requested: Iterable[str] | None) -> list[MetricSpec]:
    """The specs of ``requested`` (default: every default metric of the task).

    Raises ``ConfigError`` naming an unknown metric, or one the task cannot compute, with the
    valid names.
    """
    valid = available_metrics(task)
    if requested is None:
        return [METRICS[name] for name in valid if METRICS[name].default]
    specs = []
    for name in requested:
        if name not in METRICS:
            raise ConfigError(f"unknown metric {name!r}; valid metrics for task {task}: {valid}")
        if name not in valid:
            raise ConfigError(
                f"metric {name!r} is not defined for task {task}; valid metrics: {valid}"
            )
        specs.append(METRICS[name])
    return list(dict.fromkeys(specs))
