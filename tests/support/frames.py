"""Small helpers shared by the engine tests: collect long outputs into plain dicts."""

from __future__ import annotations

from pyspark.sql import DataFrame


def metric_values(metrics: DataFrame) -> dict[tuple, float | None]:
    """(model_version, slice_name, slice_value, class, metric) → value."""
    return {
        (r.model_version, r.slice_name, r.slice_value, r["class"], r.metric): r.value
        for r in metrics.collect()
    }


def overall(metrics: DataFrame, model_version: str | None = None) -> dict[str, float | None]:
    """metric → value for the overall slice's top-label rows of one model version."""
    return {
        r.metric: r.value
        for r in metrics.collect()
        if r.slice_name == "overall" and r["class"] is None and r.model_version == model_version
    }
