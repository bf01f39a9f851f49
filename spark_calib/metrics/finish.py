"""Statistics → metrics rows by the NumPy kernels (``spark_calib.kernels``), in one pass.

The families that a kernel finishes (``KERNEL_FAMILIES``) are computed from the valid
statistics rows of each slice key. When those rows are few (at most ``DRIVER_MAX_ROWS``), one
``toArrow()`` brings them to the driver, which runs the kernels key by key: one Spark job, no
Python worker. Otherwise one ``groupBy(slice key).applyInArrow`` runs the same functions on the
workers: one shuffle of the statistics, one Python pass. The kernels and the names-only
statistics schema are pickled by value, so the workers need numpy and pyarrow (pyspark's own
dependencies) but not spark_calib.

Output columns: the metrics table's (``TABLE_COLUMNS``).
"""

from __future__ import annotations

import sys

from pyspark import cloudpickle
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

import spark_calib.kernels
import spark_calib.registry.metrics
import spark_calib.stats.schema
from spark_calib.config import Config
from spark_calib.kernels.finish import finish_group, finish_table
from spark_calib.kernels.output_columns import METRICS_DDL
from spark_calib.kernels.plan import FinishPlan
from spark_calib.metrics.uncertainty import critical_value
from spark_calib.registry import CALIBRATION, PER_CLASS, MetricSpec
from spark_calib.stats import schema as stats

# Registry family → the kernel that finishes it.
KERNEL_FAMILIES = {CALIBRATION: "calibration", PER_CLASS: "calibration"}
# The families whose kernels read the fine cells.
CELL_FAMILIES: frozenset[str] = frozenset()
# Statistics rows up to which the driver finishes them from one toArrow(): starting the Python
# workers and shuffling costs more than the driver's NumPy below this (docs/benchmarks.md).
DRIVER_MAX_ROWS = 200_000
_KERNEL_MODULES = (spark_calib.kernels, spark_calib.stats.schema, spark_calib.registry.metrics)


def finish_plan(cfg: Config, specs: list[MetricSpec]) -> FinishPlan:
    """The plain-value plan of what the kernels compute for ``specs`` under ``cfg``."""
    uncertainty = cfg.uncertainty
    families = dict.fromkeys(spec.family for spec in specs)
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
    )


def reads_cells(cfg: Config, specs: list[MetricSpec]) -> bool:
    """Whether the kernels of ``specs`` read the fine cells (else the bin grain suffices)."""
    return cfg.binning.strategy == "equal_mass" or any(
        spec.family in CELL_FAMILIES for spec in specs
    )


def finished_metrics(
    source: DataFrame,
    cfg: Config,
    specs: list[MetricSpec],
    *,
    driver_max_rows: int = DRIVER_MAX_ROWS,
) -> DataFrame:
    """The metrics rows of the kernel families among ``specs``, from the statistics ``source``
    (the bin grain, or the fine cells for equal-mass bins). Runs one Spark job at once."""
    plan = finish_plan(cfg, specs)
    kernels = tuple(dict.fromkeys(KERNEL_FAMILIES[spec.family] for spec in specs))
    present = set(source.columns)
    feed = source.where(F.col(stats.REASON).isNull()).select(
        *[name for name in stats.STATS_COLUMNS if name in present and name != stats.REASON]
    )
    head = feed.limit(driver_max_rows + 1).toArrow()
    spark = source.sparkSession
    if head.num_rows <= driver_max_rows:
        return spark.createDataFrame(finish_table(head, plan, kernels), METRICS_DDL)
    ship_kernels()
    grouped = feed.groupBy(*stats.SLICE_KEY_COLUMNS)
    return grouped.applyInArrow(finish_group(plan, kernels), METRICS_DDL)


def ship_kernels() -> None:
    """Pickle the kernels (and the names-only statistics schema they read) by value, so that
    a function built on them runs on a Python worker without spark_calib installed."""
    for module in _KERNEL_MODULES:
        cloudpickle.register_pickle_by_value(sys.modules[module.__name__])
