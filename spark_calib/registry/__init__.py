"""The metric registry: every metric name, its family, tasks, defaults, requirements, value
expression and whether drift and alerts apply. It sits below ``config`` (which validates
names against it) and imports nothing of the package but ``errors``."""

from spark_calib.registry.metrics import (
    ALL_TASKS,
    BINARY,
    CALIBRATION,
    CELL_CALIBRATION,
    CELLS,
    CLASSIFICATION_TASKS,
    CONFUSION,
    DRIFT_FAMILIES,
    EXACT_RANKING,
    METRICS,
    PER_CLASS,
    PROBABILISTIC_TASKS,
    REGRESSION,
    SMOOTH,
    THRESHOLDS,
    MetricSpec,
    available_metrics,
    families,
    resolve_metrics,
)

__all__ = [
    "ALL_TASKS",
    "BINARY",
    "CALIBRATION",
    "CELLS",
    "CELL_CALIBRATION",
    "CLASSIFICATION_TASKS",
    "CONFUSION",
    "DRIFT_FAMILIES",
    "EXACT_RANKING",
    "METRICS",
    "PER_CLASS",
    "PROBABILISTIC_TASKS",
    "REGRESSION",
    "SMOOTH",
    "THRESHOLDS",
    "MetricSpec",
    "available_metrics",
    "families",
    "resolve_metrics",
]
