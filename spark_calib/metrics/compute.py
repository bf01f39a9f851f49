"""Statistics → the long ``metrics`` table.

The table is the union of one frame per requested metric family, each built from the
statistics alone. The calibration and per-class families are finished by the NumPy kernels
(``spark_calib.kernels.calibration`` has their formulas) in one pass
(``spark_calib.metrics.finish``), with their standard errors and intervals; decision, ranking,
cell-calibration, smooth and regression families are still built in their modules as Spark
expressions over the statistics, with ``spark_calib.metrics.uncertainty``'s intervals.

Output columns: the metrics table's (``TABLE_COLUMNS``).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_calib.config import Config, ConfigSource, load_config
from spark_calib.metrics.finish import KERNEL_FAMILIES, finished_metrics, reads_cells
from spark_calib.metrics.output import (
    ERROR_BOUND,
    METRIC,
    SE,
    VALUE,
    WEIGHT_SUM,
    defined_values,
)
from spark_calib.metrics.uncertainty import (
    collapse_buckets,
    replicate_stats,
    with_intervals,
    with_jackknife_se,
)
from spark_calib.registry import (
    CELL_CALIBRATION,
    CELLS,
    CONFUSION,
    REGRESSION,
    SMOOTH,
    resolve_metrics,
)
from spark_calib.stats import schema as stats


def metrics_from_stats(
    stats_df: DataFrame, config: ConfigSource, *, bin_stats: DataFrame | None = None
) -> DataFrame:
    """The metrics table of ``config.metrics`` computed from a statistics table alone, with the
    standard errors and intervals of ``config.uncertainty`` (``spark_calib.metrics.uncertainty``).

    Exact ranking metrics (``roc_auc``, ``pr_auc``) need the input and are left out here;
    ``evaluate`` adds them. Tables (``confusion_matrix``, …) are separate outputs. A value is
    null when its denominator is 0 or a sum overflowed (``defined_values``).

    ``bin_stats``, when given, is ``stats_df`` summed over the fine cells (``sum_over_cells``;
    a caller that caches both passes it): the families that read no cells use it, the same
    sums in fewer rows.
    """
    cfg = load_config(config)
    bins = stats_df if bin_stats is None else bin_stats
    specs = [spec for spec in resolve_metrics(cfg.task, cfg.metrics, cfg.features())]
    finished = [spec for spec in specs if spec.family in KERNEL_FAMILIES and not spec.table]
    others = [spec.name for spec in specs if spec.family not in KERNEL_FAMILIES and not spec.table]
    frames = []
    if finished:
        source = stats_df if reads_cells(cfg, finished) else bins
        frames.append(finished_metrics(source, cfg, finished))
    if others or not finished:
        frames.append(
            _expression_metrics(stats_df, bins, cfg.model_copy(update={"metrics": tuple(others)}))
        )
    combined = frames[0]
    for frame in frames[1:]:
        combined = combined.unionByName(frame)
    return combined


def _expression_metrics(stats_df: DataFrame, bins: DataFrame, cfg: Config) -> DataFrame:
    """The families not yet finished by a kernel, as Spark expressions over the statistics,
    with ``spark_calib.metrics.uncertainty``'s standard errors and intervals."""
    if not cfg.uncertainty.jackknife:
        return with_intervals(_point_metrics(stats_df, bins, cfg), bins, cfg)
    point = _point_metrics(collapse_buckets(stats_df), collapse_buckets(bins), cfg)
    specs = resolve_metrics(cfg.task, cfg.metrics, cfg.features())
    # smooth_ece collects its node sums to the driver: G replicates would collect G times more.
    replicated = [spec.name for spec in specs if spec.family != SMOOTH and not spec.table]
    # Lazy: the replicates of the fine statistics are computed only if a cell family reads them.
    replicates = _point_metrics(
        replicate_stats(stats_df, cfg.uncertainty.buckets),
        replicate_stats(bins, cfg.uncertainty.buckets),
        cfg.model_copy(update={"metrics": tuple(replicated)}),
    )
    without_se = [spec.name for spec in specs if not spec.noise or spec.family == SMOOTH]
    with_se = with_jackknife_se(point, replicates, cfg.uncertainty.buckets, without_se)
    return with_intervals(with_se, bins, cfg)


def _point_metrics(stats_df: DataFrame, bin_stats: DataFrame, cfg: Config) -> DataFrame:
    """The metrics of ``cfg.metrics`` with the families' analytic ``se``: the cell families
    from ``stats_df``, the others from ``bin_stats``, the same sums
    summed over the cells."""
    # Imported here: the family modules import this module's helpers.
    from spark_calib.metrics.cells import cell_metrics
    from spark_calib.metrics.decision import decision_metrics
    from spark_calib.metrics.ranking import binned_ranking_metrics
    from spark_calib.metrics.regression import regression_metrics
    from spark_calib.metrics.smooth import smooth_ece_metrics

    specs = [spec for spec in resolve_metrics(cfg.task, cfg.metrics, cfg.features())]
    by_family = {
        family: [spec for spec in specs if spec.family == family and not spec.table]
        for family in (
            CONFUSION,
            CELLS,
            CELL_CALIBRATION,
            SMOOTH,
            REGRESSION,
        )
    }
    frames = []
    if by_family[CONFUSION]:
        frames.append(decision_metrics(bin_stats, cfg, by_family[CONFUSION]))
    if by_family[CELLS]:
        frames.append(binned_ranking_metrics(stats_df, cfg, by_family[CELLS]))
    if by_family[CELL_CALIBRATION]:
        frames.append(cell_metrics(stats_df, by_family[CELL_CALIBRATION]))
    if by_family[SMOOTH]:
        frames.append(smooth_ece_metrics(stats_df))
    if by_family[REGRESSION]:
        frames.append(regression_metrics(bin_stats, cfg, by_family[REGRESSION]))
    if not frames:
        return empty_metrics(bin_stats)
    combined = frames[0]
    for frame in frames[1:]:
        combined = combined.unionByName(frame, allowMissingColumns=True)
    return defined_values(combined)


def empty_metrics(stats_df: DataFrame) -> DataFrame:
    """A metrics table with no rows (the typed schema), for configs that request none."""
    return stats_df.where(F.lit(False)).select(
        *[F.col(name) for name in stats.KEY_COLUMNS],
        F.lit(None).cast("string").alias(METRIC),
        F.lit(None).cast("double").alias(VALUE),
        F.col(stats.N),
        F.lit(None).cast("double").alias(WEIGHT_SUM),
        F.lit(None).cast("double").alias(ERROR_BOUND),
        F.lit(None).cast("double").alias(SE),
    )
