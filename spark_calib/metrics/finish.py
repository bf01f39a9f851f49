"""Statistics → outputs by the NumPy kernels (``spark_calib.kernels``), in one pass.

The families that a kernel finishes (``KERNEL_FAMILIES``) and the reliability table are
computed from the valid statistics rows of each slice key. When the statistics are few (at
most ``DRIVER_MAX_ROWS`` rows, or the session's ``spark.calib.driverMaxRows``), one
``toArrow()`` brings them to the driver
(``statistics_head``), which runs the kernels key by key and returns the outputs as local
frames: no Python worker, no further Spark job. Otherwise one ``applyInArrow`` pass runs the
same functions on the workers (one shuffle of the statistics, one Python pass), grouped by a
hash bucket of the slice key (``finish_groups``: a group holds every row of its keys, and
finishes them key after key), whose tagged output is cached and split once into the outputs.
The kernels and the names-only modules they read are pickled by value, so the workers need
numpy and pyarrow (pyspark's own dependencies) but not spark_calib.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel, cloudpickle
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import spark_calib.constants
import spark_calib.kernels
import spark_calib.registry.metrics
import spark_calib.stats.schema
from spark_calib.config import Config
from spark_calib.constants import DRIVER_MAX_ROWS_CONF
from spark_calib.errors import ConfigError
from spark_calib.kernels.decision import CLASS_NAMES, CLASS_WEIGHTS, COST_MATRIX, TASK
from spark_calib.kernels.finish import (
    METRICS,
    OUTPUT,
    OUTPUT_SCHEMAS,
    RELIABILITY,
    finish_group,
    finish_table,
    union_schema,
)
from spark_calib.kernels.output_columns import spark_ddl
from spark_calib.kernels.plan import FinishPlan
from spark_calib.kernels.regression import COVERAGE_LEVELS
from spark_calib.kernels.reliability import CONFIDENCE_BINS, WILSON_Z
from spark_calib.kernels.roc import ROC_POINTS
from spark_calib.kernels.thresholds import THRESHOLDS
from spark_calib.metrics.quantiles import normal_quantile
from spark_calib.metrics.uncertainty import critical_value
from spark_calib.registry import (
    CALIBRATION,
    CELL_CALIBRATION,
    CELLS,
    CONFUSION,
    PER_CLASS,
    REGRESSION,
    SMOOTH,
    MetricSpec,
)
from spark_calib.stats import schema as stats

__all__ = [
    "DRIVER_MAX_ROWS",
    "DRIVER_MAX_ROWS_CONF",
    "KERNEL_FAMILIES",
    "LOCAL_FRAME_MAX_ROWS",
    "METRICS",
    "RELIABILITY",
    "Finished",
    "finish",
    "finish_groups",
    "finish_plan",
    "finished_metrics",
    "finished_specs",
    "reads_cells",
    "ship_kernels",
    "statistics_head",
]

# Registry family → the kernel that finishes it.
KERNEL_FAMILIES = {
    CALIBRATION: "calibration",
    PER_CLASS: "calibration",
    CONFUSION: "decision",
    CELLS: "ranking",
    CELL_CALIBRATION: "cell_calibration",
    SMOOTH: "smooth",
    REGRESSION: "regression",
}
# The families whose kernels read the fine cells (and the output tables that do).
CELL_FAMILIES = frozenset({CELLS, CELL_CALIBRATION, SMOOTH})
CELL_TABLES = frozenset({"roc", "thresholds"})
# Statistics rows up to which the driver finishes them from one toArrow(): starting the Python
# workers and shuffling costs more than the driver's NumPy below this (docs/benchmarks.md).
DRIVER_MAX_ROWS = 200_000
# Statistics rows up to which evaluate replaces their cache with a local frame of the driver's
# copy. Above it the cache stays: Spark plans a local relation row by row, and writing one of
# 125,000 statistics rows (a demo day) into a catalog table took 8.5 s against 2.1 s from the
# cache (docs/benchmarks.md).
LOCAL_FRAME_MAX_ROWS = 20_000
# The grouped pass groups the statistics by a hash of the slice key into this many groups per
# shuffle partition, each group every row of its keys: Spark's cost per group (its Arrow
# stream to the worker and back) is above the kernels' per key (docs/benchmarks.md).
GROUPS_PER_SHUFFLE_PARTITION = 4
GROUP = "_finish_group"
SHUFFLE_PARTITIONS_CONF = "spark.sql.shuffle.partitions"
DEFAULT_SHUFFLE_PARTITIONS = 200
_KERNEL_MODULES = (
    spark_calib.kernels,
    spark_calib.stats.schema,
    spark_calib.registry.metrics,
    spark_calib.constants,
)


@dataclass(frozen=True)
class Finished:
    """The outputs by name, and the frames cached for them (release with ``unpersist``)."""

    outputs: dict[str, DataFrame]
    cached: tuple[DataFrame, ...] = ()


def finish_plan(cfg: Config, specs: Sequence[MetricSpec]) -> FinishPlan:
    """The plain-value plan of what the kernels compute for ``specs`` under ``cfg``."""
    uncertainty = cfg.uncertainty
    families = dict.fromkeys(spec.family for spec in specs)
    wilson = None if uncertainty.method == "none" else normal_quantile(uncertainty.level)
    return FinishPlan(
        metrics=tuple(
            (family, tuple(spec.name for spec in specs if spec.family == family))
            for family in families
        ),
        n_bins=cfg.binning.n_bins,
        equal_mass=cfg.binning.strategy == "equal_mass",
        method=uncertainty.method,
        critical_value=critical_value(cfg),
        buckets=uncertainty.buckets if uncertainty.jackknife else 0,
        settings=(
            (WILSON_Z, wilson),
            (CONFIDENCE_BINS, cfg.task != "regression"),
            (COVERAGE_LEVELS, tuple(cfg.coverage_levels)),
            *_class_settings(cfg),
        ),
    )


def _class_settings(cfg: Config) -> tuple[tuple[str, Any], ...]:
    """The task and its classes as the decision kernels read them (class names, the class
    weights by class label, the cost matrix), and the binary tables' points and thresholds."""
    names = list(cfg.class_names) if cfg.class_names is not None else None
    weights = {
        (names[index] if names is not None else str(index)): float(weight)
        for key, weight in (cfg.class_weights or {}).items()
        for index in [cfg.class_position(key, None)]
    }
    costs = (
        [[float(cost) for cost in row] for row in cfg.cost_matrix]
        if cfg.cost_matrix is not None
        else None
    )
    return (
        (TASK, cfg.task),
        (CLASS_NAMES, names),
        (CLASS_WEIGHTS, weights),
        (COST_MATRIX, costs),
        (ROC_POINTS, cfg.roc_points),
        (THRESHOLDS, tuple(cfg.thresholds)),
    )


def finished_specs(specs: Sequence[MetricSpec]) -> list[MetricSpec]:
    """The metric rows among ``specs`` (not the names of an output table)."""
    return [spec for spec in specs if spec.family in KERNEL_FAMILIES and not spec.table]


def reads_cells(
    cfg: Config, specs: Sequence[MetricSpec], outputs: Sequence[str] = (METRICS,)
) -> bool:
    """Whether the kernels of ``specs`` and ``outputs`` read the fine cells (else the bin
    grain suffices)."""
    return (
        cfg.binning.strategy == "equal_mass"
        or any(spec.family in CELL_FAMILIES for spec in specs)
        or any(name in CELL_TABLES for name in outputs)
    )


def driver_max_rows(spark: SparkSession) -> int:
    """The session's ``spark.calib.driverMaxRows`` (a whole number ≥ 0; 0 finishes every
    statistics table in the grouped pass), else ``DRIVER_MAX_ROWS``. Raises ``ConfigError``
    for another value."""
    value = spark.conf.get(DRIVER_MAX_ROWS_CONF, None)
    if value is None:
        return DRIVER_MAX_ROWS
    try:
        rows = int(value.strip().replace("_", ""))
    except ValueError:
        rows = -1
    if rows < 0:
        raise ConfigError(
            f"{DRIVER_MAX_ROWS_CONF} must be a whole number of statistics rows >= 0, got {value!r}"
        )
    return rows


def finish_groups(spark: SparkSession) -> int:
    """The grouped pass's number of groups: ``GROUPS_PER_SHUFFLE_PARTITION`` × the session's
    ``spark.sql.shuffle.partitions``."""
    partitions = spark.conf.get(SHUFFLE_PARTITIONS_CONF, None)
    return GROUPS_PER_SHUFFLE_PARTITION * max(int(partitions or DEFAULT_SHUFFLE_PARTITIONS), 1)


def statistics_head(stats_df: DataFrame, max_rows: int | None = None) -> pa.Table | None:
    """Every row of ``stats_df`` as Arrow when it has at most ``max_rows`` (None: the
    session's ``driver_max_rows``), else None: one Spark action that reads at most
    ``max_rows`` + 1 rows."""
    if max_rows is None:
        max_rows = driver_max_rows(stats_df.sparkSession)
    head = stats_df.limit(max_rows + 1).toArrow()
    return head if head.num_rows <= max_rows else None


def finish(
    source: DataFrame,
    cfg: Config,
    specs: Sequence[MetricSpec],
    outputs: Sequence[str],
    head: pa.Table | None,
) -> Finished:
    """The ``outputs`` (``METRICS``: the rows of the kernel families among ``specs``;
    ``RELIABILITY``: the reliability table) of the statistics ``source``: from ``head`` (all
    of ``source``'s rows, as ``statistics_head`` returns them) on the driver when given, else
    in one grouped pass over ``source``."""
    plan = finish_plan(cfg, specs)
    kernels = tuple(dict.fromkeys(KERNEL_FAMILIES[spec.family] for spec in specs))
    spark = source.sparkSession
    if head is not None:
        tables = finish_table(head, plan, kernels, outputs, valid_rows(head))
        return Finished(
            {
                name: spark.createDataFrame(table, spark_ddl(OUTPUT_SCHEMAS[name]))
                for name, table in tables.items()
            }
        )
    present = set(source.columns)
    feed = source.where(F.col(stats.REASON).isNull()).select(
        *[name for name in stats.STATS_COLUMNS if name in present and name != stats.REASON]
    )
    ship_kernels()
    schema = union_schema(outputs)
    group = F.pmod(F.xxhash64(*stats.SLICE_KEY_COLUMNS), F.lit(finish_groups(spark)))
    grouped = (
        feed.withColumn(GROUP, group)
        .groupBy(GROUP)
        .applyInArrow(finish_group(plan, kernels, outputs), spark_ddl(schema))
    )
    if len(outputs) > 1:
        grouped = grouped.persist(StorageLevel.MEMORY_AND_DISK)
    split = {
        name: grouped.where(F.col(OUTPUT) == name).select(
            *[field.name for field in OUTPUT_SCHEMAS[name]]
        )
        for name in outputs
    }
    return Finished(split, (grouped,) if len(outputs) > 1 else ())


def valid_rows(head: pa.Table) -> np.ndarray | None:
    """The positions of ``head``'s rows without a ``reason`` (None: every row is valid)."""
    if stats.REASON not in head.column_names:
        return None
    reason = head.column(stats.REASON)
    if reason.null_count == len(reason):
        return None
    return np.flatnonzero(np.asarray(pc.is_null(reason).to_numpy(), dtype=bool))


def finished_metrics(
    source: DataFrame,
    cfg: Config,
    specs: Sequence[MetricSpec],
    *,
    driver_max_rows: int | None = None,
) -> DataFrame:
    """The metrics rows of the kernel families among ``specs``, from the statistics ``source``
    (the bin grain, or the fine cells when a kernel reads them). Runs one Spark job at once."""
    head = statistics_head(source, driver_max_rows)
    return finish(source, cfg, specs, (METRICS,), head).outputs[METRICS]


def ship_kernels() -> None:
    """Pickle the kernels (and the names-only modules they read) by value, so that a function
    built on them runs on a Python worker without spark_calib installed."""
    for module in _KERNEL_MODULES:
        cloudpickle.register_pickle_by_value(sys.modules[module.__name__])
