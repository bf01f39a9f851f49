"""Rows → per-level segment statistics of the slice search: column expressions and one
aggregation per level, then the segment kernel in one grouped Arrow pass.

The search rows are the valid rows of ``canonical_rows`` (calibration probability c, outcome
o ∈ {0, 1}, weight w) with each candidate column's value, encoded as a ``slice_value`` of one
column (``spark_calib.slicing.values``; a numeric column cut at edges gives its range's label),
the fine cell of c and the per-row terms of the segment kernel
(``spark_calib.kernels.multicalibration``): w, w·o, w·c, w·o·c, w²·c(1 − c) and the label odds
(1 − c)/c for o = 1, c/(1 − c) for o = 0 (+∞ at c = 0 or 1). Each value also has a code,
the xxhash64 of its encoded text, so that levels 2 and up copy, join and group 64-bit integers
rather than text.

A level's statistics: each row is copied once per column combination of the level (its key the
combination's value codes), kept when the (model version, combination, codes) is a candidate (a
broadcast semi-join; level 1 keeps all, with the values' text, and adds the overall segment as
combination −1), and summed per (model version, combination, codes, cell).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, NumericType

from spark_calib.config import Config
from spark_calib.config.slice_search import SliceSearchConfig
from spark_calib.constants import OVERALL_SLICE_VALUE
from spark_calib.errors import SchemaError
from spark_calib.kernels.multicalibration import (
    BIN_COLUMNS,
    CELL_SUMS,
    SEGMENT_COLUMNS,
    segment_table_function,
)
from spark_calib.metrics.finish import ship_kernels
from spark_calib.rows.canonical import (
    CONFIDENCE,
    MODEL_VERSION,
    OUTCOME,
    REASON,
    WEIGHT,
    canonical_rows,
    slice_key,
)
from spark_calib.rows.cells import cell_index, coarse_cell
from spark_calib.rows.needs import RowNeeds
from spark_calib.rows.schema import check_input_schema
from spark_calib.slicing.values import escape_text, slice_value_expression

COMBO = "_combo"
KEY = "_key"
CELL = "_cell"
OVERALL_COMBO = -1
# Groups of the grouped Arrow pass: each holds whole segments, so a group's kernel call is
# vectorised over many segments rather than one Python call per segment.
KERNEL_GROUPS = 32
# percentile_approx's accuracy for ``bins`` cuts (rank error ≤ 1/accuracy of the rows), and
# the significant digits the edges keep.
QUANTILE_ACCURACY = 10_000
EDGE_DIGITS = 6


def value_column(index: int) -> str:
    """Internal name of the index-th candidate column's encoded value."""
    return f"_value_{index}"


def cut_edges(df: DataFrame, cfg: Config) -> dict[str, tuple[float, ...]]:
    """Candidate column → the edges its values are cut at: the given ``edges``, or for
    ``bins: N`` the N − 1 quantiles k/N of the column's non-null input values (unweighted,
    ``percentile_approx`` with accuracy ``QUANTILE_ACCURACY``: each within 1/10,000 of the
    rows of its rank), rounded to ``EDGE_DIGITS`` significant digits (the labels show them
    whole) and with repeats dropped. One Spark job when a column has ``bins``, none else.
    Raises ``SchemaError`` for a cut of a non-numeric column."""
    search = cfg.slice_search
    assert search is not None
    _checked_types(df, cfg)
    cuts = [cut for name in search.column_names() if (cut := search.cut_of(name)) is not None]
    edges = {cut.column: cut.edges for cut in cuts if cut.edges is not None}
    binned = [cut for cut in cuts if cut.bins is not None]
    if not binned:
        return edges
    found = df.agg(
        *[
            F.percentile_approx(
                F.col(cut.column).cast("double"),
                [k / cut.bins for k in range(1, cut.bins)],
                QUANTILE_ACCURACY,
            ).alias(f"_q{i}")
            for i, cut in enumerate(binned)
            if cut.bins is not None
        ]
    ).first()
    assert found is not None
    for i, cut in enumerate(binned):
        values = found[f"_q{i}"] or []
        kept = {float(f"{v:.{EDGE_DIGITS}g}") for v in values if v is not None and math.isfinite(v)}
        edges[cut.column] = tuple(sorted(kept))
    return edges


def _as_slices(cfg: Config, search: SliceSearchConfig) -> Config:
    """``cfg`` with one slice set per candidate column."""
    return cfg.model_copy(update={"slices": tuple((name,) for name in search.column_names())})


def _checked_types(df: DataFrame, cfg: Config) -> dict[str, DataType]:
    """``check_input_schema`` of the candidate columns as slices; ``SchemaError`` for a cut
    of a non-numeric column."""
    search = cfg.slice_search
    assert search is not None
    check_input_schema(df, cfg)
    types = check_input_schema(df, _as_slices(cfg, search))
    by_name = {field.name: field.dataType for field in df.schema.fields}
    for name in search.column_names():
        if search.cut_of(name) is not None and not isinstance(by_name[name], NumericType):
            raise SchemaError(
                f"slice_search column {name!r} has edges but type {by_name[name].simpleString()}"
                f"; edges cut numeric columns only"
            )
    return types


def search_rows(df: DataFrame, cfg: Config, edges: Mapping[str, tuple[float, ...]]) -> DataFrame:
    """The search rows of ``df`` (the module docstring), numeric candidates cut at ``edges``
    (``cut_edges``); no Spark action."""
    search = cfg.slice_search
    assert search is not None
    names = search.column_names()
    types = _checked_types(df, cfg)
    rows = canonical_rows(df, _as_slices(cfg, search), types, cfg.known_num_classes(), RowNeeds())
    c, o, w = F.col(CONFIDENCE), F.col(OUTCOME), F.col(WEIGHT)
    valid = rows.where(F.col(REASON).isNull() & c.isNotNull() & o.isNotNull())
    infinity = F.lit(float("inf"))
    encoded = valid.select(
        F.col(MODEL_VERSION),
        *[
            _encoded(F.col(slice_key(index)), edges.get(name)).alias(value_column(index))
            for index, name in enumerate(names)
        ],
        cell_index(c).alias(CELL),
        w.alias("w"),
        (w * o).alias("wy"),
        (w * c).alias("ws"),
        (w * o * c).alias("wys"),
        (w * w * c * (1.0 - c)).alias("w2v"),
        F.when(o == 0, F.lit(0.0))
        .when(c <= 0.0, infinity)
        .otherwise((1.0 - c) / c)
        .alias("odds_pos"),
        F.when(o == 1, F.lit(0.0))
        .when(c >= 1.0, infinity)
        .otherwise(c / (1.0 - c))
        .alias("odds_neg"),
    )
    return encoded.select(
        "*",
        *[F.xxhash64(value_column(i)).alias(code_column(i)) for i in range(len(names))],
    )


def range_label(low: float | None, high: float | None) -> str:
    """The value of a numeric candidate in [low, high): ``[low, high)``, with ``-inf``/``inf``
    for an open end."""
    left = "(-inf" if low is None else f"[{low:g}"
    right = "inf)" if high is None else f"{high:g})"
    return f"{left}, {right}"


def _encoded(value: Column, edges: tuple[float, ...] | None) -> Column:
    if edges is None:
        return slice_value_expression([value])
    if not edges:
        # A column with no non-null value has no quantiles: one range holds every value.
        edges_text = escape_text(range_label(None, None))
        return F.coalesce(
            F.when(value.isNotNull(), F.lit(edges_text)),
            slice_value_expression([F.lit(None).cast("string")]),
        )
    labels = [range_label(None, edges[0])] + [
        range_label(low, high) for low, high in zip(edges, [*edges[1:], None], strict=True)
    ]
    # The CASE picks the first true branch: test the highest edge first.
    ordered = F.when(value.isNull(), F.lit(None).cast("string"))
    for edge, label in reversed(list(zip(edges, labels[1:], strict=True))):
        ordered = ordered.when(value >= F.lit(edge), F.lit(escape_text(label)))
    return F.coalesce(
        ordered.otherwise(F.lit(escape_text(labels[0]))),
        slice_value_expression([F.lit(None).cast("string")]),
    )


def code_column(index: int) -> str:
    """Internal name of the index-th candidate column's value code: xxhash64 of its encoded
    value (the driver checks that a column's observed values have distinct codes)."""
    return f"_code_{index}"


def predicate_column(position: int) -> str:
    """Internal name of a level's position-th predicate code."""
    return f"_k{position}"


def level_segments(
    rows: DataFrame,
    combos: Sequence[tuple[int, ...]],
    candidates: pa.Table | None,
    n_bins: int,
    width: int,
    coarse: bool = False,
) -> pa.Table:
    """One row per segment of the level: ``_model_version``, ``_combo`` (the index into
    ``combos``, −1 for the overall segment), the predicates' value codes ``_k0`` …
    ``_k{width−1}`` (0 past the level), at level 1 also ``_key`` (the value's ``slice_value``),
    then the kernel's ``SEGMENT_COLUMNS`` and ``BIN_COLUMNS``. ``candidates`` (``_model_version``,
    ``_combo`` and the codes) restricts the segments; None is level 1: every value of every
    column, and the overall segment. ``combos`` may mix levels (a refinement pass). With
    ``coarse``, each copy is summed per coarse cell (``spark_calib.rows.cells.coarse_cell``)
    rather than per fine cell. One Spark job: the copies, the semi-join, the aggregation and
    the grouped kernel pass."""
    codes = [predicate_column(p) for p in range(width)]
    first = candidates is None

    def entry(combo: int, columns: Sequence[int], key: Column | None) -> Column:
        fields = [F.lit(combo).alias(COMBO)]
        for position, name in enumerate(codes):
            code = F.col(code_column(columns[position])) if position < len(columns) else None
            fields.append((code if code is not None else F.lit(0).cast("long")).alias(name))
        if first:
            fields.append((key if key is not None else F.lit(OVERALL_SLICE_VALUE)).alias(KEY))
        return F.struct(*fields)

    entries = [
        entry(index, combo, F.col(value_column(combo[0])) if first else None)
        for index, combo in enumerate(combos)
    ]
    if first:
        entries.append(entry(OVERALL_COMBO, (), None))
    keys = (MODEL_VERSION, COMBO, *codes, *([KEY] if first else []))
    cell = coarse_cell(F.col(CELL)).alias(CELL) if coarse else F.col(CELL)
    copies = rows.select(
        MODEL_VERSION, cell, *CELL_SUMS[1:], F.explode(F.array(*entries)).alias("_entry")
    ).select(MODEL_VERSION, "_entry.*", CELL, *CELL_SUMS[1:])
    if candidates is not None:
        wanted = rows.sparkSession.createDataFrame(candidates).select(
            F.col(MODEL_VERSION).alias("_c_version"),
            *[F.col(name).alias(f"_c{name}") for name in (COMBO, *codes)],
        )
        match = F.col(MODEL_VERSION).eqNullSafe(F.col("_c_version"))
        for name in (COMBO, *codes):
            match = match & (F.col(name) == F.col(f"_c{name}"))
        copies = copies.join(F.broadcast(wanted), match, "left_semi")
    statistics = copies.groupBy(*keys, CELL).agg(
        F.count(F.lit(1)).cast("double").alias("n"),
        *[F.sum(name).alias(name) for name in CELL_SUMS[1:]],
    )
    ship_kernels()
    schema = ", ".join(
        [f"{MODEL_VERSION} string", f"{COMBO} int"]
        + [f"{name} bigint" for name in codes]
        + ([f"{KEY} string"] if first else [])
        + [f"{name} double" for name in SEGMENT_COLUMNS]
        + [f"{name} array<double>" for name in BIN_COLUMNS]
    )
    bucket = F.pmod(F.xxhash64(*keys), F.lit(KERNEL_GROUPS))
    return (
        statistics.groupBy(bucket.alias("_group"))
        .applyInArrow(segment_table_function(keys, CELL, n_bins), schema)
        .toArrow()
    )
