"""The one statistics aggregation: canonical rows → the public statistics table.

Per group it sums n = Σ1, Σw and Σw·term for every per-row term present in the canonical rows
(see ``spark_calib.rows.canonical.TERM_COLUMNS``; Σw·target² too for regression, and
n_positive = Σy when the binary label is a term). Without a weight column each Σw²·x equals
its Σw·x and is copied from it rather than summed again (``UNIT_WEIGHT_EQUAL``). Top-label
items have class null. When per-class statistics are requested, each valid row also
contributes one item per class k with confidence p_k and correct [y = k] (one-vs-rest); that is
the only place the probability array is exploded.

Slice sets: each input item is copied once per covering group of the plan
(``spark_calib.slicing.plan``; no copy when there is one group) and grouped once; each slice
set is then re-aggregated from its group's small table, unless every set is its own group. The
copies are written as an ``inline`` of one struct per target rather than ``groupingSets``
because Spark does not match a cached GROUPING SETS plan inside a self-union, so outputs built
from several views of the statistics would rescan.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_calib.config import Config
from spark_calib.rows import canonical as row
from spark_calib.rows import internal_sql as S
from spark_calib.rows.binning import bin_index
from spark_calib.rows.internal_sql import internal_expr
from spark_calib.slicing.plan import SlicePlan
from spark_calib.slicing.values import slice_name, slice_value_expression
from spark_calib.stats import schema as stats

CLASS_INDEX = "_class"
SLICE_SET = "_slice_set"
GROUP = "_group"

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
    row.OUTCOME: stats.SUM_WEIGHT_OUTCOME,
    row.WEIGHT_TERM: stats.SUM_WEIGHT_SQ,
    row.CONFIDENCE_SQ: stats.SUM_WEIGHT_CONFIDENCE_SQ,
    row.CONFIDENCE_OUTCOME: stats.SUM_WEIGHT_CONFIDENCE_OUTCOME,
    row.SPIEGELHALTER: stats.SUM_WEIGHT_SQ_SPIEGELHALTER,
    row.LOGIT: stats.SUM_WEIGHT_LOGIT,
    row.POSITIVE: stats.SUM_WEIGHT_POSITIVE,
    row.POSITIVE_NLL: stats.SUM_WEIGHT_POSITIVE_NLL,
    row.W_OUTCOME: stats.SUM_WEIGHT_SQ_OUTCOME,
    row.W_CONFIDENCE: stats.SUM_WEIGHT_SQ_CONFIDENCE,
    row.W_CONFIDENCE_SQ: stats.SUM_WEIGHT_SQ_CONFIDENCE_SQ,
    row.W_CONFIDENCE_OUTCOME: stats.SUM_WEIGHT_SQ_CONFIDENCE_OUTCOME,
    row.W_CORRECT: stats.SUM_WEIGHT_SQ_CORRECT,
    row.W_BRIER: stats.SUM_WEIGHT_SQ_BRIER,
    row.W_BRIER_SQ: stats.SUM_WEIGHT_SQ_BRIER_SQ,
    row.W_NLL: stats.SUM_WEIGHT_SQ_NLL,
    row.W_NLL_SQ: stats.SUM_WEIGHT_SQ_NLL_SQ,
}
# Without a weight column every valid row has w = 1, so Σw²·x is Σw·x: the statistic on the left
# is then the same column as the one on the right, summed once (an aggregation spends most of
# its time updating its sums, and these are 8 of the 20-odd of a classification task; 1 for
# regression).
UNIT_WEIGHT_EQUAL = {
    stats.SUM_WEIGHT_SQ: stats.SUM_WEIGHT,
    stats.SUM_WEIGHT_SQ_OUTCOME: stats.SUM_WEIGHT_OUTCOME,
    stats.SUM_WEIGHT_SQ_CONFIDENCE: stats.SUM_WEIGHT_CONFIDENCE,
    stats.SUM_WEIGHT_SQ_CONFIDENCE_SQ: stats.SUM_WEIGHT_CONFIDENCE_SQ,
    stats.SUM_WEIGHT_SQ_CONFIDENCE_OUTCOME: stats.SUM_WEIGHT_CONFIDENCE_OUTCOME,
    stats.SUM_WEIGHT_SQ_CORRECT: stats.SUM_WEIGHT_CORRECT,
    stats.SUM_WEIGHT_SQ_BRIER: stats.SUM_WEIGHT_BRIER,
    stats.SUM_WEIGHT_SQ_NLL: stats.SUM_WEIGHT_NLL,
}
# Canonical index key → the statistics key column.
INDEX_KEYS = {
    row.TRUE_CLASS: stats.TRUE_CLASS,
    row.PREDICTED_CLASS: stats.PREDICTED_CLASS,
    row.BIN: stats.BIN,
    row.CELL: stats.CELL,
    row.THRESHOLD_BIN: stats.THRESHOLD_BIN,
    row.BUCKET: stats.BUCKET,
    row.FIT: stats.RECALIBRATION_FIT,
}


def aggregate_stats(
    rows: DataFrame, config: Config, with_classes: bool, plan: SlicePlan
) -> DataFrame:
    """Aggregate canonical rows into the public statistics table for every slice set of
    ``config.slices``, grouped as ``plan`` says (``spark_calib.slicing.plan``)."""
    terms = [name for name in TERM_SUMS if name in rows.columns]
    keys = [name for name in INDEX_KEYS if name in rows.columns]
    items = _class_items(rows, config, keys, terms) if with_classes else _top_items(rows)
    all_slices = _slice_keys(config)
    group = [row.REASON, row.MODEL_VERSION, CLASS_INDEX, *keys]
    sums = _sums(terms, config.task == "regression")
    same = _same_sums(sums, unit_weight=config.columns.weight is None)
    sums = {name: column for name, column in sums.items() if name not in same}
    measures = [internal_expr(text, name, **names) for name, (text, names) in sums.items()]
    labels = slice_set_labels(config)
    if len(plan.groups) == 1:
        fine = items.groupBy(*group, *all_slices).agg(*measures).withColumn(GROUP, F.lit(0))
    else:
        group_keys = [_keys_of(config, cols) for cols in plan.groups]
        copied = _copies(items, GROUP, group_keys, all_slices)
        fine = copied.groupBy(GROUP, *group, *all_slices).agg(*measures)
    if plan.sets_are_groups:
        # The groups' table is already the statistics table.
        public = fine.withColumnRenamed(GROUP, SLICE_SET)
    else:
        set_keys = [_keys_of(config, cols) for cols in config.slices]
        # Each set is re-aggregated from its group's small table: one copy of a group's row per
        # set it covers and one grouping, so one shuffle of a few thousand rows.
        copied = _copies(fine, SLICE_SET, set_keys, all_slices, source=plan.set_group)
        resums = [internal_expr("sum({c})", name, c=name) for name in sums]
        public = copied.groupBy(SLICE_SET, *group, *all_slices).agg(*resums)
    return public.select(*_public(config, keys, sums, same, labels.name, labels.value))


@dataclass(frozen=True)
class SliceSetLabels:
    """A slice set's ``slice_name`` and ``slice_value`` as Columns over a frame with the
    ``_slice_set`` index and the slice keys."""

    name: Column
    value: Column


def slice_set_labels(config: Config, sets: Sequence[Sequence[str]] | None = None) -> SliceSetLabels:
    """slice_name and slice_value of the set whose index is in ``_slice_set``; ``sets``
    (default ``config.slices``) are the slice sets the indices stand for."""
    name_expr: Column | None = None
    value_expr: Column | None = None
    for index, cols in enumerate(config.slices if sets is None else sets):
        is_set = F.col(SLICE_SET) == index
        name_expr = (F if name_expr is None else name_expr).when(is_set, slice_name(cols))
        value_expr = (F if value_expr is None else value_expr).when(
            is_set, _value(_keys_of(config, cols))
        )
    assert name_expr is not None and value_expr is not None
    return SliceSetLabels(name_expr, value_expr)


def copy_per_slice_set(
    rows: DataFrame, config: Config, sets: Sequence[Sequence[str]] | None = None
) -> DataFrame:
    """Copy each row once per slice set (an ``inline`` of one struct per set): the result has
    ``_slice_set`` (the set's index in ``sets``, default ``config.slices``) and the slice keys,
    null where the set does not use them."""
    chosen = config.slices if sets is None else sets
    return _copies(
        rows, SLICE_SET, [_keys_of(config, cols) for cols in chosen], _slice_keys(config)
    )


def _copies(
    frame: DataFrame,
    index_column: str,
    targets: list[list[str]],
    all_slices: list[str],
    source: tuple[int, ...] | None = None,
) -> DataFrame:
    """One row per target t (``index_column`` = t) with the slice keys outside ``targets[t]``
    set to null. With ``source``, a row of covering group g (``_group``) is copied only to the
    targets t with ``source[t]`` = g. Internal SQL: one round trip for the whole ``inline``."""

    def copy(index: int, kept: list[str]) -> S.Sql:
        fields = {key: S.col(key) for key in all_slices}
        for key in all_slices:
            if key not in kept:
                fields[key] = S.typed_null(fields[key])
        return S.named_struct(**{index_column: index}, **fields)

    if source is None:
        copies: S.Sql = S.array(*[copy(index, kept) for index, kept in enumerate(targets)])
    else:
        by_group: dict[int, list[S.Sql]] = {}
        for index, kept in enumerate(targets):
            by_group.setdefault(source[index], []).append(copy(index, kept))
        chain: S.Case | None = None
        for group_index, structs in by_group.items():
            is_group = S.col(GROUP) == group_index
            branch = S.array(*structs)
            chain = S.when(is_group, branch) if chain is None else chain.when(is_group, branch)
        assert chain is not None
        copies = chain
    other = [name for name in frame.columns if name not in all_slices and name != GROUP]
    return frame.select(*other, S.inline(copies))


def _slice_keys(config: Config) -> list[str]:
    return [row.slice_key(i) for i in range(len(config.slice_columns()))]


def _keys_of(config: Config, columns: Sequence[str]) -> list[str]:
    positions = {name: i for i, name in enumerate(config.slice_columns())}
    return [row.slice_key(positions[name]) for name in columns]


def _value(keys: list[str]) -> Column:
    return slice_value_expression([F.col(key) for key in keys])


# An aggregate as internal SQL: its template and the internal names it reads
# (``spark_calib.rows.internal_sql``).
Sql = tuple[str, dict[str, str]]


def _sums(terms: list[str], regression: bool) -> dict[str, Sql]:
    """Statistics column → its aggregate: n, Σw, Σw·term per present term (and Σw·y², and
    n_positive = Σ y for binary labels). Internal SQL, not Column arithmetic: each Column
    operation is a round trip to the JVM, and the plan is built on every run."""
    weight = row.WEIGHT
    sums: dict[str, Sql] = {
        stats.N: ("count(1)", {}),
        stats.SUM_WEIGHT: ("sum({w})", {"w": weight}),
    }
    if row.POSITIVE in terms:
        sums[stats.N_POSITIVE] = ("sum(CAST({p} AS BIGINT))", {"p": row.POSITIVE})
    for term in terms:
        sums[TERM_SUMS[term]] = ("sum({w} * {t})", {"w": weight, "t": term})
    if regression:
        sums[stats.SUM_WEIGHT_TARGET_SQ] = ("sum({w} * {y} * {y})", {"w": weight, "y": row.TARGET})
    return sums


def _same_sums(sums: dict[str, Sql], unit_weight: bool) -> dict[str, str]:
    """Statistic → the statistic it equals exactly (``UNIT_WEIGHT_EQUAL``, when every weight is
    1 and both are summed); such a statistic is not aggregated but copied."""
    if not unit_weight:
        return {}
    return {name: base for name, base in UNIT_WEIGHT_EQUAL.items() if name in sums and base in sums}


def _public(
    config: Config,
    keys: list[str],
    sums: dict[str, Sql],
    same: dict[str, str],
    name: Column,
    value: Column,
) -> list[Column]:
    """The statistics table's columns, in ``stats.STATS_COLUMNS`` order; a statistic in
    ``same`` is the column it equals; absent keys and sums are typed nulls."""
    present = {INDEX_KEYS[key]: key for key in keys}

    def cast(source: str | None, kind: str) -> Sql:
        if source is None:
            return f"CAST(NULL AS {kind})", {}
        return f"CAST({{c}} AS {kind})", {"c": source}

    text: dict[str, Sql] = {
        stats.MODEL_VERSION: ("{c}", {"c": row.MODEL_VERSION}),
        stats.BIN: cast(present.get(stats.BIN), "INT"),
        stats.CELL: cast(present.get(stats.CELL), "INT"),
        stats.THRESHOLD_BIN: cast(present.get(stats.THRESHOLD_BIN), "INT"),
        stats.BUCKET: cast(present.get(stats.BUCKET), "INT"),
        stats.RECALIBRATION_FIT: cast(present.get(stats.RECALIBRATION_FIT), "BOOLEAN"),
        stats.REASON: ("{c}", {"c": row.REASON}),
        stats.N: cast(stats.N, "BIGINT"),
        stats.N_POSITIVE: cast(stats.N_POSITIVE if stats.N_POSITIVE in sums else None, "BIGINT"),
    }
    for column in stats.SUM_COLUMNS:
        source = same.get(column, column)
        text[column] = cast(source if source in sums else None, "DOUBLE")
    columns = {name: internal_expr(sql, name, **names) for name, (sql, names) in text.items()}
    columns[stats.SLICE_NAME] = name.alias(stats.SLICE_NAME)
    columns[stats.SLICE_VALUE] = value.alias(stats.SLICE_VALUE)
    columns[stats.CLASS] = class_label(config, F.col(CLASS_INDEX)).alias(stats.CLASS)
    for label in (stats.TRUE_CLASS, stats.PREDICTED_CLASS):
        index = present.get(label)
        columns[label] = class_label(config, None if index is None else F.col(index)).alias(label)
    return [columns[name] for name in stats.STATS_COLUMNS]


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
    top = S.named_struct(
        **{CLASS_INDEX: S.lit(None).cast("int")},
        **{name: S.col(name).cast("int") for name in keys},
        **{name: S.col(name).cast("double") for name in terms},
    )
    label = S.col(row.LABEL)

    def one_vs_rest(p: S.Sql, k: S.Sql) -> S.Sql:
        is_class = (k == label).cast("double")
        values = {
            row.BIN: bin_index(p, config.binning.n_bins, config.binning.edges),
            row.CONFIDENCE: p,
            row.CORRECT: is_class,
            **row.moment_terms(p, is_class, S.col(row.WEIGHT)),
        }
        if row.BUCKET in keys:
            values[row.BUCKET] = S.col(row.BUCKET)
        return S.named_struct(
            **{CLASS_INDEX: k},
            **{name: values.get(name, S.lit(None)).cast("int") for name in keys},
            **{name: values.get(name, S.lit(None)).cast("double") for name in terms},
        )

    per_class = S.transform(S.col(row.PROBS), one_vs_rest)
    items = S.when(S.col(row.REASON).isNull(), S.concat(S.array(top), per_class)).otherwise(
        S.array(top)
    )
    n_slices = len(config.slice_columns())
    return rows.select(
        row.REASON,
        row.MODEL_VERSION,
        *[row.slice_key(i) for i in range(n_slices)],
        row.WEIGHT,
        S.inline(items),
    )
