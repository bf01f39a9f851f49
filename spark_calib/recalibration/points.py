"""Statistics → the small per-key cell sums recalibration reads, collected to the driver.

One collected row per (model_version, slice_name, slice_value, recalibration_fit, cell, bin,
label) of the valid class-free statistics of the binary score (or of the top-label confidence,
with y = correct): n, W = Σw, O = Σw·y (0 or W: one label), C = Σw·s, Z = Σw·logit(s), Σw·brier,
Σw·nll, Σw·correct. A fine cell can straddle a calibration bin edge, so a cell may have two rows
per label; each row is a subset of one cell and one label. Keeping the labels apart makes every
term linear in z exact (Σw·y·z = Σ over the positive rows' Z). The collect is bounded by keys ×
2 splits × 2 labels × (2,185 cells + 14 straddling cells), never by input rows.

The whole population of a model version is the sum over the values of any one slice set (each
set partitions the rows), so ``overall`` is always available, configured or not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_calib.constants import OVERALL_SLICE_NAME, OVERALL_SLICE_VALUE
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


_POSITIVE = list(_SUMS).index("o")
# (cell, bin, label, fit, sums)
_Entry = tuple[int, int, int, int, list[float]]


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
        return self.select(self.fit != 0)

    def eval_rows(self) -> CellRows:
        """The rows the maps are evaluated on."""
        return self.select(self.fit != 1)


def collect_cell_rows(stats_df: DataFrame, first_slice_name: str) -> dict[Key, CellRows]:
    """Key → its cell rows, plus one ``overall`` key per model version summed from the slice
    set named ``first_slice_name`` (when ``overall`` is not configured)."""
    keys = (
        *stats.SLICE_KEY_COLUMNS,
        stats.RECALIBRATION_FIT,
        stats.CELL,
        stats.BIN,
        stats.TRUE_CLASS,
    )
    rows = (
        stats_df.where(
            F.col(stats.REASON).isNull()
            & F.col(stats.CLASS).isNull()
            & F.col(stats.CELL).isNotNull()
        )
        .groupBy(*keys)
        .agg(*[F.sum(column).alias(name) for name, column in _SUMS.items()])
        .where(F.col("w") > 0.0)
        .collect()
    )
    grouped: dict[Key, list[_Entry]] = {}
    for row in rows:
        fit = row[stats.RECALIBRATION_FIT]
        sums = [float(row[name] or 0.0) for name in _SUMS]
        label = int(sums[_POSITIVE] > 0.0)
        entry = (
            int(row[stats.CELL]),
            int(row[stats.BIN]),
            label,
            -1 if fit is None else int(fit),
            sums,
        )
        key = (row[stats.MODEL_VERSION], row[stats.SLICE_NAME], row[stats.SLICE_VALUE])
        grouped.setdefault(key, []).append(entry)
        if first_slice_name != OVERALL_SLICE_NAME and row[stats.SLICE_NAME] == first_slice_name:
            overall = (row[stats.MODEL_VERSION], OVERALL_SLICE_NAME, OVERALL_SLICE_VALUE)
            grouped.setdefault(overall, []).append(entry)
    return {key: _arrays(entries) for key, entries in grouped.items()}


def _arrays(entries: list[_Entry]) -> CellRows:
    """Entries (merged where a key repeats, as for a summed overall) sorted by cell."""
    merged: dict[tuple[int, int, int, int], np.ndarray] = {}
    for cell, bin_, label, fit, sums in entries:
        key = (cell, bin_, label, fit)
        values = np.array(sums)
        merged[key] = merged[key] + values if key in merged else values
    ordered = sorted(merged)
    table = np.array([merged[key] for key in ordered])
    return CellRows(
        cell=np.array([key[0] for key in ordered], dtype=np.int64),
        bin=np.array([key[1] for key in ordered], dtype=np.int64),
        label=np.array([key[2] for key in ordered], dtype=np.int64),
        fit=np.array([key[3] for key in ordered], dtype=np.int64),
        sums={name: table[:, index] for index, name in enumerate(_SUMS)},
    )
