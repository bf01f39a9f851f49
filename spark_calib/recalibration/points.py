"""Statistics → the small per-key cell sums recalibration reads, collected to the driver.

One collected row per (model_version, slice_name, slice_value, recalibration_fit, cell, bin,
label) of the valid class-free statistics of the binary score (or of the top-label confidence,
with y = correct): n, W = Σw, O = Σw·y (0 or W: one label), C = Σw·s, Z = Σw·logit(s), Σw·brier,
Σw·nll, Σw·correct. A fine cell can straddle a calibration bin edge, so a cell may have two rows
per label; each row is a subset of one cell and one label. Keeping the labels apart makes every
term linear in z exact (Σw·y·z = Σ over the positive rows' Z). The collect is bounded by keys ×
2 splits × 2 labels × (2,185 cells + 14 straddling cells), never by input rows.

The whole population of a model version is the sum over the values of any one slice set (each
set partitions the rows), so ``overall`` is always available, configured or not: when it is not
configured, the first set's rows are summed into it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_calib.constants import OVERALL_SLICE_NAME, OVERALL_SLICE_VALUE
from spark_calib.kernels.arrow_batch import key_codes
from spark_calib.stats import schema as stats

_SUMS = {
    "n": stats.N,
    "w": stats.SUM_WEIGHT,
    "o": stats.SUM_WEIGHT_OUTCOME,
    "c": stats.SUM_WEIGHT_CONFIDENCE,
    "z": stats.SUM_WEIGHT_LOGIT,
    "brier": stats.SUM_WEIGHT_BRIER,
    "nll": stats.SUM_WEIGHT_NLL,
    "correct": stats.SUM_WEIGHT_CORRECT,
}
Key = tuple[str | None, str, str]


def sort_key(key: Key) -> tuple[str, bool, str, str]:
    """Table order: model version, then ``overall`` first, then slice name and value."""
    return (key[0] or "", key[1] != OVERALL_SLICE_NAME, key[1], key[2])


@dataclass(frozen=True)
class CellRows:
    """The collected rows of one key, as arrays of equal length. ``label`` is y of the row
    set; ``fit`` is 1 (fit rows), 0
    (evaluated rows) or −1 (no fit condition: the rows are both)."""

    cell: np.ndarray
    bin: np.ndarray
    label: np.ndarray
    fit: np.ndarray
    sums: dict[str, np.ndarray]
    # What is derived from these rows once and read several times (the fit and evaluated
    # rows, the fit points): each method of a key reads the same.
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def select(self, mask: np.ndarray) -> CellRows:
        """The rows where ``mask`` holds."""
        return CellRows(
            self.cell[mask],
            self.bin[mask],
            self.label[mask],
            self.fit[mask],
            {name: values[mask] for name, values in self.sums.items()},
        )

    def fit_rows(self) -> CellRows:
        """The rows the maps are fitted on."""
        if "fit" not in self.memo:
            self.memo["fit"] = self.select(self.fit != 0)
        return cast(CellRows, self.memo["fit"])

    def eval_rows(self) -> CellRows:
        """The rows the maps are evaluated on."""
        if "eval" not in self.memo:
            self.memo["eval"] = self.select(self.fit != 1)
        return cast(CellRows, self.memo["eval"])


def collect_cell_rows(
    stats_df: DataFrame, source_slice_name: str, head: pa.Table | None = None
) -> dict[Key, CellRows]:
    """Key → its cell rows, sorted by (cell, bin, label, fit). ``source_slice_name`` is the
    slice set the ``overall`` key of each model version is summed from: ``overall`` itself when
    it is configured (then nothing is copied), else the first configured set.

    With ``head`` (every statistics row, already on the driver) the rows are merged there with
    Arrow (``head_cell_rows``), with no Spark job; else the merging is done in Spark and the
    result comes to the driver as one Arrow table (a Row per collected cell costs about 30 µs
    in PySpark; a column costs almost nothing)."""
    if head is not None:
        return head_cell_rows(head, source_slice_name)
    valid = stats_df.where(
        F.col(stats.REASON).isNull() & F.col(stats.CLASS).isNull() & F.col(stats.CELL).isNotNull()
    )
    if source_slice_name != OVERALL_SLICE_NAME:
        overall = valid.where(F.col(stats.SLICE_NAME) == source_slice_name).withColumns(
            {
                stats.SLICE_NAME: F.lit(OVERALL_SLICE_NAME),
                stats.SLICE_VALUE: F.lit(OVERALL_SLICE_VALUE),
            }
        )
        valid = valid.unionByName(overall)
    keys = (*stats.SLICE_KEY_COLUMNS, stats.RECALIBRATION_FIT, stats.CELL, stats.BIN)
    summed = (
        valid.groupBy(*keys, stats.TRUE_CLASS)
        .agg(*[F.coalesce(F.sum(column), F.lit(0.0)).alias(name) for name, column in _SUMS.items()])
        .where(F.col("w") > 0.0)
    )
    table = summed.select(
        *stats.SLICE_KEY_COLUMNS,
        F.col(stats.CELL).cast("long").alias("cell"),
        F.col(stats.BIN).cast("long").alias("bin"),
        # One label per row (true_class is a key): y = 1 where its weight has outcomes.
        (F.col("o") > 0.0).cast("long").alias("label"),
        F.coalesce(F.col(stats.RECALIBRATION_FIT).cast("long"), F.lit(-1)).alias("fit"),
        *[F.col(name).cast("double") for name in _SUMS],
    ).toArrow()
    return _by_key(table)


def head_cell_rows(head: pa.Table, source_slice_name: str) -> dict[Key, CellRows]:
    """``collect_cell_rows`` of a statistics table on the driver: the same filter, copy of the
    source set into ``overall``, sums (a null sum counts as 0) and columns, with Arrow's
    group-by (its sums may differ from Spark's in the last bits: another order)."""
    valid = head.filter(
        pc.and_(
            pc.and_(pc.is_null(head.column(stats.REASON)), pc.is_null(head.column(stats.CLASS))),
            pc.is_valid(head.column(stats.CELL)),
        )
    )
    if source_slice_name != OVERALL_SLICE_NAME:
        source = valid.filter(pc.equal(valid.column(stats.SLICE_NAME), source_slice_name))
        overall = source.set_column(
            source.schema.get_field_index(stats.SLICE_NAME),
            stats.SLICE_NAME,
            pa.array([OVERALL_SLICE_NAME] * source.num_rows, pa.string()),
        )
        overall = overall.set_column(
            overall.schema.get_field_index(stats.SLICE_VALUE),
            stats.SLICE_VALUE,
            pa.array([OVERALL_SLICE_VALUE] * overall.num_rows, pa.string()),
        )
        valid = pa.concat_tables([valid, overall])
    keys = (*stats.SLICE_KEY_COLUMNS, stats.RECALIBRATION_FIT, stats.CELL, stats.BIN)
    sums = {name: pc.cast(valid.column(column), pa.float64()) for name, column in _SUMS.items()}
    grouping = {name: valid.column(name) for name in (*keys, stats.TRUE_CLASS)}
    summed = (
        pa.table({**grouping, **sums})
        .group_by(list(grouping), use_threads=False)
        .aggregate([(name, "sum") for name in _SUMS])
    )
    # A null comparison (an all-null weight sum) drops the row, as Spark's coalesce to 0 does.
    kept = summed.filter(pc.greater(summed.column("w_sum"), 0.0))
    totals = {name: pc.fill_null(kept.column(f"{name}_sum"), 0.0) for name in _SUMS}
    table = pa.table(
        {
            **{name: kept.column(name) for name in stats.SLICE_KEY_COLUMNS},
            "cell": pc.cast(kept.column(stats.CELL), pa.int64()),
            "bin": pc.cast(kept.column(stats.BIN), pa.int64()),
            "label": pc.cast(pc.greater(totals["o"], 0.0), pa.int64()),
            "fit": pc.fill_null(pc.cast(kept.column(stats.RECALIBRATION_FIT), pa.int64()), -1),
            **totals,
        }
    )
    return _by_key(table)


def _by_key(table: pa.Table) -> dict[Key, CellRows]:
    """The collected table's rows grouped by key, each key's rows sorted by (cell, bin, label,
    fit)."""
    if table.num_rows == 0:
        return {}
    columns = {name: table.column(name).to_numpy() for name in ("cell", "bin", "label", "fit")}
    sums = {name: table.column(name).to_numpy() for name in _SUMS}
    # One integer per key and one sort of every row by (key, cell, bin, label, fit): a Python
    # loop over the rows costs seconds at a backfill's million cell rows.
    code = key_codes(table, stats.SLICE_KEY_COLUMNS)
    order = np.lexsort((columns["fit"], columns["label"], columns["bin"], columns["cell"], code))
    sorted_code = code[order]
    starts = np.flatnonzero(np.r_[True, sorted_code[1:] != sorted_code[:-1]])
    stops = np.r_[starts[1:], len(order)]
    firsts = order[starts].tolist()
    versions = table.column(stats.MODEL_VERSION).take(firsts).to_pylist()
    names = table.column(stats.SLICE_NAME).take(firsts).to_pylist()
    values = table.column(stats.SLICE_VALUE).take(firsts).to_pylist()
    cell, bin_, label, fit = (columns[name][order] for name in ("cell", "bin", "label", "fit"))
    ordered = {name: column[order] for name, column in sums.items()}
    grouped: dict[Key, CellRows] = {}
    for key, start, stop in zip(
        zip(versions, names, values, strict=True), starts, stops, strict=True
    ):
        part = slice(int(start), int(stop))
        grouped[key] = CellRows(
            cell=cell[part],
            bin=bin_[part],
            label=label[part],
            fit=fit[part],
            sums={name: column[part] for name, column in ordered.items()},
        )
    return grouped
