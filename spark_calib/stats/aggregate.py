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
from spark_calib.rows import sql_statement as Q
from spark_calib.rows.binning import bin_index
from spark_calib.rows.internal_sql import quoted
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
    ``config.slices``, grouped as ``plan`` says (``spark_calib.slicing.plan``). One SQL
    statement (``spark_calib.rows.sql_statement``): its steps are sub-selects, not frames."""
    source = Q.source(rows)
    terms = [name for name in TERM_SUMS if name in source.columns]
    keys = [name for name in INDEX_KEYS if name in source.columns]
    all_slices = _slice_keys(config)
    if with_classes:
        items = _class_items(source, config, keys, terms)
        fine_group = [row.REASON, row.MODEL_VERSION, CLASS_INDEX, *keys]
        constant: list[Q.Item] = []
    else:
        # Top-label items have class null: a constant of the grouping's output, not a column
        # of a projection under it. Spark's optimizer merges a projection that adds a literal
        # column into the masked terms below it, and so copies the reason's checks into every
        # masked term (seen in the plan; the DataFrame form of the same step was not merged).
        items = source
        fine_group = [row.REASON, row.MODEL_VERSION, *keys]
        constant = [(S.lit(None).cast("int"), CLASS_INDEX)]
    # The keys of every grouping after the first (the class is a column of its output).
    group = [row.REASON, row.MODEL_VERSION, CLASS_INDEX, *keys]
    sums = _sums(terms, config.task == "regression")
    same = _same_sums(sums, unit_weight=config.columns.weight is None)
    sums = {name: column for name, column in sums.items() if name not in same}
    measures: list[Q.Item] = [
        (S.Sql(text.format(**{key: quoted(name) for key, name in names.items()})), name)
        for name, (text, names) in sums.items()
    ]
    if len(plan.groups) == 1:
        fine = Q.group_by(items, [*fine_group, *all_slices], [*measures, *constant, (0, GROUP)])
    else:
        group_keys = [_keys_of(config, cols) for cols in plan.groups]
        copied = _copied(items, GROUP, group_keys, all_slices)
        fine = Q.group_by(copied, [GROUP, *fine_group, *all_slices], [*measures, *constant])
    if plan.sets_are_groups:
        # The groups' table is already the statistics table.
        public = Q.select(
            fine, [(S.col(GROUP), SLICE_SET) if name == GROUP else name for name in fine.columns]
        )
    else:
        set_keys = [_keys_of(config, cols) for cols in config.slices]
        # Each set is re-aggregated from its group's small table: one copy of a group's row per
        # set it covers and one grouping, so one shuffle of a few thousand rows.
        copied = _copied(fine, SLICE_SET, set_keys, all_slices, source=plan.set_group)
        resums: list[Q.Item] = [(S.Sql(f"sum({quoted(name)})"), name) for name in sums]
        public = Q.group_by(copied, [SLICE_SET, *group, *all_slices], resums)
    params = Q.Params()
    columns = _public(config, keys, sums, same, params)
    return Q.run(
        rows, Q.select(public, [(columns[name], name) for name in stats.STATS_COLUMNS]), params
    )


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


def _slice_set_labels_sql(config: Config, params: Q.Params) -> tuple[S.Sql, S.Sql]:
    """``slice_set_labels`` as internal SQL text, each set's name a bound parameter."""
    name_expr: S.Case | None = None
    value_expr: S.Case | None = None
    for index, cols in enumerate(config.slices):
        is_set = S.col(SLICE_SET) == index
        name = params.bind(slice_name(cols))
        keys = _keys_of(config, cols)
        value = slice_value_expression([S.col(key) for key in keys]) if keys else S.lit("")
        name_expr = S.when(is_set, name) if name_expr is None else name_expr.when(is_set, name)
        value_expr = S.when(is_set, value) if value_expr is None else value_expr.when(is_set, value)
    assert name_expr is not None and value_expr is not None
    return name_expr, value_expr


def copy_per_slice_set(
    rows: DataFrame, config: Config, sets: Sequence[Sequence[str]] | None = None
) -> DataFrame:
    """Copy each row once per slice set (an ``inline`` of one struct per set): the result has
    ``_slice_set`` (the set's index in ``sets``, default ``config.slices``) and the slice keys,
    null where the set does not use them."""
    chosen = config.slices if sets is None else sets
    all_slices = _slice_keys(config)
    copies = _copy_structs(SLICE_SET, [_keys_of(config, cols) for cols in chosen], all_slices)
    other = [name for name in rows.columns if name not in all_slices and name != GROUP]
    return rows.select(*other, S.inline(copies))


def _copied(
    relation: Q.Relation,
    index_column: str,
    targets: list[list[str]],
    all_slices: list[str],
    source: tuple[int, ...] | None = None,
) -> Q.Relation:
    """``relation`` with each row copied as ``_copy_structs`` says."""
    copies = _copy_structs(index_column, targets, all_slices, source)
    other = [name for name in relation.columns if name not in all_slices and name != GROUP]
    return Q.select(
        relation,
        other,
        generator=S.Sql(f"inline({copies.text})"),
        generated=[index_column, *all_slices],
    )


def _copy_structs(
    index_column: str,
    targets: list[list[str]],
    all_slices: list[str],
    source: tuple[int, ...] | None = None,
) -> S.Sql:
    """The array of one struct per target t (``index_column`` = t, the slice keys outside
    ``targets[t]`` null), to ``inline``. With ``source``, a row of covering group g
    (``_group``) is copied only to the targets t with ``source[t]`` = g."""

    def copy(index: int, kept: list[str]) -> S.Sql:
        fields = {key: S.col(key) for key in all_slices}
        for key in all_slices:
            if key not in kept:
                fields[key] = S.typed_null(fields[key])
        return S.named_struct(**{index_column: index}, **fields)

    if source is None:
        return S.array(*[copy(index, kept) for index, kept in enumerate(targets)])
    by_group: dict[int, list[S.Sql]] = {}
    for index, kept in enumerate(targets):
        by_group.setdefault(source[index], []).append(copy(index, kept))
    chain: S.Case | None = None
    for group_index, structs in by_group.items():
        is_group = S.col(GROUP) == group_index
        branch = S.array(*structs)
        chain = S.when(is_group, branch) if chain is None else chain.when(is_group, branch)
    assert chain is not None
    return chain


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
    params: Q.Params,
) -> dict[str, S.Sql]:
    """The statistics table's columns by name, as internal SQL over the last grouping; a
    statistic in ``same`` is the column it equals; absent keys and sums are typed nulls."""
    present = {INDEX_KEYS[key]: key for key in keys}

    def cast(source: str | None, kind: str) -> S.Sql:
        return (S.lit(None) if source is None else S.col(source)).cast(kind)

    columns: dict[str, S.Sql] = {
        stats.MODEL_VERSION: S.col(row.MODEL_VERSION),
        stats.BIN: cast(present.get(stats.BIN), "int"),
        stats.CELL: cast(present.get(stats.CELL), "int"),
        stats.THRESHOLD_BIN: cast(present.get(stats.THRESHOLD_BIN), "int"),
        stats.BUCKET: cast(present.get(stats.BUCKET), "int"),
        stats.RECALIBRATION_FIT: cast(present.get(stats.RECALIBRATION_FIT), "boolean"),
        stats.REASON: S.col(row.REASON),
        stats.N: cast(stats.N, "bigint"),
        stats.N_POSITIVE: cast(stats.N_POSITIVE if stats.N_POSITIVE in sums else None, "bigint"),
    }
    for column in stats.SUM_COLUMNS:
        source = same.get(column, column)
        columns[column] = cast(source if source in sums else None, "double")
    columns[stats.SLICE_NAME], columns[stats.SLICE_VALUE] = _slice_set_labels_sql(config, params)
    columns[stats.CLASS] = _class_label_sql(config, S.col(CLASS_INDEX), params)
    for label in (stats.TRUE_CLASS, stats.PREDICTED_CLASS):
        index = present.get(label)
        columns[label] = _class_label_sql(config, None if index is None else S.col(index), params)
    return columns


def _class_label_sql(config: Config, index: S.Sql | None, params: Q.Params) -> S.Sql:
    """``class_label`` as internal SQL text, the class names one bound parameter."""
    if index is None:
        return S.lit(None).cast("string")
    if config.class_names is not None:
        names = params.bind_strings(config.class_names)
        return S.when(index.isNotNull(), S.element_at(names, index + 1))
    return index.cast("string")


def class_label(config: Config, index: Column | None) -> Column:
    """A class index as its name (``class_names``) or its decimal string; null stays null."""
    if index is None:
        return F.lit(None).cast("string")
    if config.class_names is not None:
        names = F.array(*[F.lit(class_name) for class_name in config.class_names])
        # Guarded: element_at with a null index is not reliably null across Spark versions.
        return F.when(index.isNotNull(), F.element_at(names, index + 1))
    return index.cast("string")


def _class_items(rows: Q.Relation, config: Config, keys: list[str], terms: list[str]) -> Q.Relation:
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
    return Q.select(
        rows,
        [row.REASON, row.MODEL_VERSION, *[row.slice_key(i) for i in range(n_slices)], row.WEIGHT],
        generator=S.Sql(f"inline({items.text})"),
        generated=[CLASS_INDEX, *keys, *terms],
    )
