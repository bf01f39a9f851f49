"""Merge statistics tables: stats(A ∪ B) = stats(A) + stats(B), key by key."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_calib.config import Config
from spark_calib.rows.needs import config_needs
from spark_calib.stats import schema as stats


def combine_stats(*frames: DataFrame) -> DataFrame:
    """Sum statistics tables of disjoint inputs (other days, other shards) into one.

    Extra columns such as ``run_date`` or ``run_id`` are dropped; the result has the statistics
    table's columns, one row per (model_version, slice_name, slice_value, class, bin, reason).
    """
    union = _union(frames, "combine_stats")
    return (
        union.groupBy(*stats.GROUP_COLUMNS)
        .agg(*[F.sum(column).alias(column) for column in stats.MEASURE_COLUMNS])
        .select(*stats.STATS_COLUMNS)
    )


def sum_to_bins(*frames: DataFrame, keep_cells: bool = True) -> DataFrame:
    """Statistics tables summed over everything but the key, the bin, the fine cell, the
    recalibration split and the reason: the decision and ranking keys (``true_class``,
    ``predicted_class``, ``threshold_bin``) become null. What the calibration, per-class and
    regression metrics read (equal-mass bins are built from the cells), in fewer rows.
    ``keep_cells=False`` sums over the fine cell too (``cell`` null): enough for uniform bins,
    and on a binary task with cells some 25 times fewer rows."""
    dropped = _DROPPED_KEYS if keep_cells else (*_DROPPED_KEYS, stats.CELL)
    return _summed_over(_union(frames, "sum_to_bins"), dropped)


def sum_over_cells(stats_df: DataFrame) -> DataFrame:
    """A statistics table summed over the fine cell and the threshold count (``cell`` and
    ``threshold_bin`` null), every other key kept: the table at the grain of the calibration
    bins and the confusion cells. Everything but the cell and threshold families reads this
    (on a binary task with cells some 25 times fewer rows than the statistics)."""
    return _summed_over(_columns(stats_df), (stats.CELL, stats.THRESHOLD_BIN))


def bin_grain(stats_df: DataFrame, config: Config) -> DataFrame:
    """What the outputs that read no fine cells need of ``stats_df``: ``sum_over_cells`` when
    the statistics of ``config`` hold fine cells or threshold counts, else ``stats_df`` itself
    (the same frame, so a caller caches it only when it is another one)."""
    return sum_over_cells(stats_df) if config_needs(config).fine else stats_df


def _summed_over(union: DataFrame, dropped: tuple[str, ...]) -> DataFrame:
    """``union`` (the statistics columns) summed per key with the ``dropped`` keys null."""
    kept = [name for name in stats.GROUP_COLUMNS if name not in dropped]
    summed = union.groupBy(*kept).agg(
        *[F.sum(column).alias(column) for column in stats.MEASURE_COLUMNS]
    )
    nulls = [F.lit(None).cast(_KEY_TYPES[name]).alias(name) for name in dropped]
    return summed.select("*", *nulls).select(*stats.STATS_COLUMNS)


_DROPPED_KEYS = (stats.TRUE_CLASS, stats.PREDICTED_CLASS, stats.THRESHOLD_BIN)
_TYPES = {stats.BUCKET: "int", stats.N: "long", stats.N_POSITIVE: "long"}
_KEY_TYPES = {
    stats.CELL: "int",
    stats.TRUE_CLASS: "string",
    stats.PREDICTED_CLASS: "string",
    stats.THRESHOLD_BIN: "int",
}


def _union(frames: tuple[DataFrame, ...], caller: str) -> DataFrame:
    """The statistics columns of ``frames``, one after the other; a column a frame lacks (a
    table written before it existed) is null there."""
    if not frames:
        raise ValueError(f"{caller} needs at least one statistics table")
    union = _columns(frames[0])
    for frame in frames[1:]:
        union = union.unionByName(_columns(frame))
    return union


def _columns(frame: DataFrame) -> DataFrame:
    present = set(frame.columns)
    return frame.select(
        *[
            F.col(name) if name in present else F.lit(None).cast(_TYPES.get(name, "double"))
            for name in stats.STATS_COLUMNS
        ]
    ).toDF(*stats.STATS_COLUMNS)
