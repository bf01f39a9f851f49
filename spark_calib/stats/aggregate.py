"""The one statistics aggregation: canonical rows → the public statistics table.

Per group it sums n = Σ1, Σw, Σw·confidence, Σw·correct, Σw·brier_term and Σw·nll_term.
Top-label groups have class null. When per-class statistics are requested, each valid row also
contributes one item per class k with confidence p_k and correct [y = k] (one-vs-rest); that is
the only place the probability array is exploded.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_calib.config import Config
from spark_calib.rows import canonical as row
from spark_calib.rows.binning import bin_index
from spark_calib.slices import slice_name, slice_value_expression
from spark_calib.stats import schema as stats
from spark_calib.stats.strategy import FINEST_GRAIN

CLASS_INDEX = "_class"
GROUPING_ID = "_grouping_id"


@dataclass(frozen=True)
class StatsFrames:
    """``primary`` is the one aggregation over the input; ``stats`` is the public table derived
    from it (the same frame under grouping_sets)."""

    primary: DataFrame
    stats: DataFrame


def aggregate_stats(
    rows: DataFrame, config: Config, with_classes: bool, strategy: str
) -> StatsFrames:
    """Aggregate canonical rows into statistics for every slice set of ``config.slices``."""
    items = _class_items(rows, config) if with_classes else _top_label_items(rows)
    all_slices = [row.slice_key(i) for i in range(len(config.slice_columns()))]
    positions = {name: i for i, name in enumerate(config.slice_columns())}
    slice_sets = [[row.slice_key(positions[name]) for name in cols] for cols in config.slices]
    if strategy == FINEST_GRAIN:
        fine = items.groupBy(*_keys(all_slices)).agg(*_sums())
        per_set = [
            fine.groupBy(*_keys(keys))
            .agg(*_resums())
            .select(*_public(config, F.lit(slice_name(cols)), _value(keys)))
            for cols, keys in zip(config.slices, slice_sets, strict=True)
        ]
        combined = per_set[0]
        for frame in per_set[1:]:
            combined = combined.unionByName(frame)
        return StatsFrames(primary=fine, stats=combined)
    grouped = items.groupingSets([_keys(keys) for keys in slice_sets], *_keys(all_slices)).agg(
        *_sums(), F.grouping_id().alias(GROUPING_ID)
    )
    all_keys = _keys(all_slices)
    name_expr: Column | None = None
    value_expr: Column | None = None
    for cols, keys in zip(config.slices, slice_sets, strict=True):
        is_set = F.col(GROUPING_ID) == _grouping_id(all_keys, _keys(keys))
        name_expr = (F if name_expr is None else name_expr).when(is_set, slice_name(cols))
        value_expr = (F if value_expr is None else value_expr).when(is_set, _value(keys))
    assert name_expr is not None and value_expr is not None
    public = grouped.select(*_public(config, name_expr, value_expr))
    return StatsFrames(primary=public, stats=public)


def _keys(slice_keys: list[str]) -> list[str]:
    return [row.REASON, row.MODEL_VERSION, *slice_keys, CLASS_INDEX, row.BIN]


def _grouping_id(all_keys: list[str], kept: list[str]) -> int:
    """Spark's grouping_id: bit (L−1−i) is set when the i-th grouping column is aggregated away."""
    width = len(all_keys)
    return sum(1 << (width - 1 - i) for i, key in enumerate(all_keys) if key not in kept)


def _value(keys: list[str]) -> Column:
    return slice_value_expression([F.col(key) for key in keys])


def _sums() -> list[Column]:
    weight = F.col(row.WEIGHT)
    return [
        F.count(F.lit(1)).alias(stats.N),
        F.sum(weight).alias(stats.SUM_WEIGHT),
        F.sum(weight * F.col(row.CONFIDENCE)).alias(stats.SUM_WEIGHT_CONFIDENCE),
        F.sum(weight * F.col(row.CORRECT)).alias(stats.SUM_WEIGHT_CORRECT),
        F.sum(weight * F.col(row.BRIER)).alias(stats.SUM_WEIGHT_BRIER),
        F.sum(weight * F.col(row.NLL)).alias(stats.SUM_WEIGHT_NLL),
    ]


def _resums() -> list[Column]:
    return [F.sum(name).alias(name) for name in (stats.N, *stats.SUM_COLUMNS)]


def _public(config: Config, name: Column, value: Column) -> list[Column]:
    index = F.col(CLASS_INDEX)
    if config.class_names is not None:
        names = F.array(*[F.lit(class_name) for class_name in config.class_names])
        # Guarded: element_at with a null index is not reliably null across Spark versions.
        class_label = F.when(index.isNotNull(), F.element_at(names, index + 1))
    else:
        class_label = index.cast("string")
    return [
        F.col(row.MODEL_VERSION).alias(stats.MODEL_VERSION),
        name.alias(stats.SLICE_NAME),
        value.alias(stats.SLICE_VALUE),
        class_label.alias(stats.CLASS),
        F.col(row.BIN).alias(stats.BIN),
        F.col(row.REASON).alias(stats.REASON),
        F.col(stats.N).cast("long").alias(stats.N),
        *[F.col(column).cast("double").alias(column) for column in stats.SUM_COLUMNS],
    ]


def _top_label_items(rows: DataFrame) -> DataFrame:
    return rows.withColumn(CLASS_INDEX, F.lit(None).cast("int"))


def _class_items(rows: DataFrame, config: Config) -> DataFrame:
    """One item per row for top-label statistics plus, for valid rows, one per class."""
    top = F.struct(
        F.lit(None).cast("int").alias(CLASS_INDEX),
        F.col(row.BIN).alias(row.BIN),
        F.col(row.CONFIDENCE).alias(row.CONFIDENCE),
        F.col(row.CORRECT).alias(row.CORRECT),
        F.col(row.BRIER).alias(row.BRIER),
        F.col(row.NLL).alias(row.NLL),
    )
    label = F.col(row.LABEL)
    per_class = F.transform(
        F.col(row.PROBS),
        lambda p, k: F.struct(
            k.alias(CLASS_INDEX),
            bin_index(p, config.binning.n_bins, config.binning.edges).alias(row.BIN),
            p.alias(row.CONFIDENCE),
            (k == label).cast("double").alias(row.CORRECT),
            F.lit(None).cast("double").alias(row.BRIER),
            F.lit(None).cast("double").alias(row.NLL),
        ),
    )
    items = F.when(F.col(row.REASON).isNull(), F.concat(F.array(top), per_class)).otherwise(
        F.array(top)
    )
    n_slices = len(config.slice_columns())
    return rows.select(
        row.REASON,
        row.MODEL_VERSION,
        *[row.slice_key(i) for i in range(n_slices)],
        row.WEIGHT,
        F.inline(items),
    )
