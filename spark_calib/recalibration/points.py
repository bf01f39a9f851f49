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
    NumPy (``head_cell_rows``), with no Spark job; else the merging is done in Spark and the
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
    source set into ``overall``, sums (a null sum counts as 0) and columns, summed in NumPy:
    one sort of the rows by (key, cell, bin, true class, fit) and one sum over each run of
    equal rows (its sums may differ from Spark's in the last bits: another order)."""
    read = (*stats.SLICE_KEY_COLUMNS, stats.RECALIBRATION_FIT, stats.CELL, stats.BIN)
    # Only the columns read are filtered: a filter copies every column it keeps.
    valid = head.select([*read, stats.TRUE_CLASS, *dict.fromkeys(_SUMS.values())]).filter(
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
    if valid.num_rows == 0:
        return {}
    code = key_codes(valid, stats.SLICE_KEY_COLUMNS)
    cell, bin_, fit, true_class = (
        _integers(valid.column(name), missing)
        for name, missing in (
            (stats.CELL, 0),
            (stats.BIN, 0),
            (stats.RECALIBRATION_FIT, -1),
            (stats.TRUE_CLASS, -1),
        )
    )
    # Arrow's and Spark's group-by hash the rows; a sort by integers is cheaper, and it
    # yields each group's rows as one run.
    order = np.lexsort((fit, true_class, bin_, cell, code))
    keys = [column[order] for column in (code, cell, bin_, true_class, fit)]
    changed = np.zeros(len(order), dtype=bool)
    changed[0] = True
    for column in keys:
        changed[1:] |= column[1:] != column[:-1]
    starts = np.flatnonzero(changed)
    sums = {
        name: np.add.reduceat(_numbers(valid.column(column))[order], starts)
        for name, column in _SUMS.items()
    }
    # An all-null weight sum (0 here) drops the row, as Spark's coalesce to 0 does.
    kept = sums["w"] > 0.0
    firsts = order[starts][kept]
    return _grouped(
        valid.select(stats.SLICE_KEY_COLUMNS).take(firsts),
        code[firsts],
        cell=cell[firsts],
        bin_=bin_[firsts],
        label=(sums["o"][kept] > 0.0).astype(np.int64),
        fit=fit[firsts],
        sums={name: column[kept] for name, column in sums.items()},
    )


def _integers(column: pa.ChunkedArray, missing: int) -> np.ndarray:
    """``column`` as int64, null → ``missing``."""
    filled = pc.fill_null(pc.cast(column, pa.int64()), missing)
    return np.asarray(filled.to_numpy(), dtype=np.int64)


def _numbers(column: pa.ChunkedArray) -> np.ndarray:
    """``column`` as float64, null → 0."""
    filled = pc.fill_null(pc.cast(column, pa.float64()), 0.0)
    return np.asarray(filled.to_numpy(), dtype=np.float64)


def _by_key(table: pa.Table) -> dict[Key, CellRows]:
    """The collected table's rows grouped by key, each key's rows sorted by (cell, bin, label,
    fit)."""
    if table.num_rows == 0:
        return {}
    columns = {name: table.column(name).to_numpy() for name in ("cell", "bin", "label", "fit")}
    return _grouped(
        table,
        key_codes(table, stats.SLICE_KEY_COLUMNS),
        cell=columns["cell"],
        bin_=columns["bin"],
        label=columns["label"],
        fit=columns["fit"],
        sums={name: table.column(name).to_numpy() for name in _SUMS},
    )


def _grouped(
    keys: pa.Table,
    code: np.ndarray,
    *,
    cell: np.ndarray,
    bin_: np.ndarray,
    label: np.ndarray,
    fit: np.ndarray,
    sums: dict[str, np.ndarray],
) -> dict[Key, CellRows]:
    """Rows grouped by key (``keys``' key columns, one integer per key in ``code``), each
    key's rows sorted by (cell, bin, label, fit)."""
    # One integer per key and one sort of every row by (key, cell, bin, label, fit): a Python
    # loop over the rows costs seconds at a backfill's million cell rows.
    order = np.lexsort((fit, label, bin_, cell, code))
    sorted_code = code[order]
    starts = np.flatnonzero(np.r_[True, sorted_code[1:] != sorted_code[:-1]])
    stops = np.r_[starts[1:], len(order)]
    firsts = order[starts].tolist()
    versions = keys.column(stats.MODEL_VERSION).take(firsts).to_pylist()
    names = keys.column(stats.SLICE_NAME).take(firsts).to_pylist()
    values = keys.column(stats.SLICE_VALUE).take(firsts).to_pylist()
    cell, bin_, label, fit = (column[order] for column in (cell, bin_, label, fit))
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
