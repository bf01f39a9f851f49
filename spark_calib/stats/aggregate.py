"""The one statistics aggregation: canonical rows → the public statistics table.

Per group it sums n = Σ1, Σw and Σw·term for every per-row term present in the canonical rows
(see ``spark_calib.rows.canonical.TERM_COLUMNS``; Σw·target² too for regression). Top-label
items have class null. When per-class statistics are requested, each valid row also
contributes one item per class k with confidence p_k and correct [y = k] (one-vs-rest); that is
the only place the probability array is exploded.

Slice sets: ``finest_grain`` groups once by every slice column and re-aggregates each set from
that small table (one copy of each of its rows per set, one grouping); ``grouping_sets`` copies
each input item once per slice set (an ``inline`` of one struct per set, the same work as
Spark's GROUPING SETS Expand) and groups once. The copy is written as a generator rather than
``groupingSets`` because Spark does not match a cached GROUPING SETS plan inside a self-union,
so outputs built from several views of the statistics would rescan.
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
SLICE_SET = "_slice_set"

# Canonical term column → the statistics column holding Σ w·term.
TERM_SUMS = {
    row.CONFIDENCE: stats.SUM_WEIGHT_CONFIDENCE,
    row.CORRECT: stats.SUM_WEIGHT_CORRECT,
    row.BRIER: stats.SUM_WEIGHT_BRIER,
    row.NLL: stats.SUM_WEIGHT_NLL,
    row.COST: stats.SUM_WEIGHT_COST,
    row.TARGET: stats.SUM_WEIGHT_TARGET,
    row.SQ_ERROR: stats.SUM_WEIGHT_SQ_ERROR,
    row.ABS_ERROR: stats.SUM_WEIGHT_ABS_ERROR,
    row.GAUSSIAN_NLL: stats.SUM_WEIGHT_GAUSSIAN_NLL,
}
# Canonical index key → the statistics key column.
INDEX_KEYS = {
    row.TRUE_CLASS: stats.TRUE_CLASS,
    row.PREDICTED_CLASS: stats.PREDICTED_CLASS,
    row.BIN: stats.BIN,
    row.SCORE_BIN: stats.SCORE_BIN,
    row.THRESHOLD_BIN: stats.THRESHOLD_BIN,
}


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
    terms = [name for name in TERM_SUMS if name in rows.columns]
    keys = [name for name in INDEX_KEYS if name in rows.columns]
    items = _class_items(rows, config, keys, terms) if with_classes else _top_items(rows)
    all_slices = [row.slice_key(i) for i in range(len(config.slice_columns()))]
    group = [row.REASON, row.MODEL_VERSION, CLASS_INDEX, *keys]
    sums = _sums(terms, config.task == "regression")
    measures = [column.alias(name) for name, column in sums.items()]
    if strategy == FINEST_GRAIN:
        fine = items.groupBy(*group, *all_slices).agg(*measures)
        # The slice sets are re-aggregated from the small fine table the same way grouping_sets
        # treats the input: one copy per set and one grouping, so one shuffle of a few
        # thousand rows instead of one per set plus a union.
        copied = copy_per_slice_set(fine, config)
        resums = [F.sum(name).alias(name) for name in sums]
        regrouped = copied.frame.groupBy(SLICE_SET, *group, *all_slices).agg(*resums)
        public = regrouped.select(*_public(config, keys, sums, copied.name, copied.value))
        return StatsFrames(primary=fine, stats=public)
    copied = copy_per_slice_set(items, config)
    grouped = copied.frame.groupBy(SLICE_SET, *group, *all_slices).agg(*measures)
    public = grouped.select(*_public(config, keys, sums, copied.name, copied.value))
    return StatsFrames(primary=public, stats=public)


@dataclass(frozen=True)
class SliceSetCopies:
    """Rows copied once per slice set: ``frame`` has ``_slice_set`` (the set's index) and the
    slice keys, null where the set does not use them; ``name``/``value`` are the set's
    slice_name and slice_value as Columns over ``frame``'s (grouped) columns."""

    frame: DataFrame
    name: Column
    value: Column


def copy_per_slice_set(rows: DataFrame, config: Config) -> SliceSetCopies:
    """Copy each row once per slice set (an ``inline`` of one struct per set)."""
    all_slices = [row.slice_key(i) for i in range(len(config.slice_columns()))]
    positions = {name: i for i, name in enumerate(config.slice_columns())}
    slice_sets = [[row.slice_key(positions[name]) for name in cols] for cols in config.slices]
    types = {field.name: field.dataType for field in rows.schema.fields}
    copies = F.array(
        *[
            F.struct(
                F.lit(index).alias(SLICE_SET),
                *[
                    (F.col(key) if key in set_keys else F.lit(None).cast(types[key])).alias(key)
                    for key in all_slices
                ],
            )
            for index, set_keys in enumerate(slice_sets)
        ]
    )
    other = [name for name in rows.columns if name not in all_slices]
    name_expr: Column | None = None
    value_expr: Column | None = None
    for index, (cols, set_keys) in enumerate(zip(config.slices, slice_sets, strict=True)):
        is_set = F.col(SLICE_SET) == index
        name_expr = (F if name_expr is None else name_expr).when(is_set, slice_name(cols))
        value_expr = (F if value_expr is None else value_expr).when(is_set, _value(set_keys))
    assert name_expr is not None and value_expr is not None
    return SliceSetCopies(rows.select(*other, F.inline(copies)), name_expr, value_expr)


def _value(keys: list[str]) -> Column:
    return slice_value_expression([F.col(key) for key in keys])


def _sums(terms: list[str], regression: bool) -> dict[str, Column]:
    """Statistics column → its aggregate: n, Σw, Σw·term per present term (and Σw·y²)."""
    weight = F.col(row.WEIGHT)
    sums = {stats.N: F.count(F.lit(1)), stats.SUM_WEIGHT: F.sum(weight)}
    for term in terms:
        sums[TERM_SUMS[term]] = F.sum(weight * F.col(term))
    if regression:
        target = F.col(row.TARGET)
        sums[stats.SUM_WEIGHT_TARGET_SQ] = F.sum(weight * target * target)
    return sums


def _public(
    config: Config, keys: list[str], sums: dict[str, Column], name: Column, value: Column
) -> list[Column]:
    """The statistics table's columns, in ``stats.STATS_COLUMNS`` order; absent keys and sums
    are typed nulls."""
    present = {INDEX_KEYS[key]: F.col(key) for key in keys}
    columns = {
        stats.MODEL_VERSION: F.col(row.MODEL_VERSION),
        stats.SLICE_NAME: name,
        stats.SLICE_VALUE: value,
        stats.CLASS: class_label(config, F.col(CLASS_INDEX)),
        stats.TRUE_CLASS: class_label(config, present.get(stats.TRUE_CLASS)),
        stats.PREDICTED_CLASS: class_label(config, present.get(stats.PREDICTED_CLASS)),
        stats.BIN: present.get(stats.BIN, F.lit(None)).cast("int"),
        stats.SCORE_BIN: present.get(stats.SCORE_BIN, F.lit(None)).cast("int"),
        stats.THRESHOLD_BIN: present.get(stats.THRESHOLD_BIN, F.lit(None)).cast("int"),
        stats.REASON: F.col(row.REASON),
        stats.N: F.col(stats.N).cast("long"),
    }
    for column in stats.SUM_COLUMNS:
        columns[column] = (F.col(column) if column in sums else F.lit(None)).cast("double")
    return [columns[name].alias(name) for name in stats.STATS_COLUMNS]


def class_label(config: Config, index: Column | None) -> Column:
    """A class index as its name (``class_names``) or its decimal string; null stays null."""
    if index is None:
        return F.lit(None).cast("string")
    if config.class_names is not None:
        names = F.array(*[F.lit(class_name) for class_name in config.class_names])
        # Guarded: element_at with a null index is not reliably null across Spark versions.
        return F.when(index.isNotNull(), F.element_at(names, index + 1))
    return index.cast("string")


def _top_items(rows: DataFrame) -> DataFrame:
    return rows.withColumn(CLASS_INDEX, F.lit(None).cast("int"))


def _class_items(rows: DataFrame, config: Config, keys: list[str], terms: list[str]) -> DataFrame:
    """One item per row for top-label statistics plus, for valid rows, one per class."""
    top = F.struct(
        F.lit(None).cast("int").alias(CLASS_INDEX),
        *[F.col(name).cast("int").alias(name) for name in keys],
        *[F.col(name).cast("double").alias(name) for name in terms],
    )
    label = F.col(row.LABEL)

    def one_vs_rest(p: Column, k: Column) -> Column:
        values = {
            row.BIN: bin_index(p, config.binning.n_bins, config.binning.edges),
            row.CONFIDENCE: p,
            row.CORRECT: (k == label).cast("double"),
        }
        return F.struct(
            k.alias(CLASS_INDEX),
            *[values.get(name, F.lit(None)).cast("int").alias(name) for name in keys],
            *[values.get(name, F.lit(None)).cast("double").alias(name) for name in terms],
        )

    per_class = F.transform(F.col(row.PROBS), one_vs_rest)
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
