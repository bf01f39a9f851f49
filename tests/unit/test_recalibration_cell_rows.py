"""The cell rows recalibration reads, merged on the driver (``head_cell_rows``) without Spark:
each key's rows summed over the statistics' other keys, grouped by slice key and sorted by
(cell, bin, label, fit), against sums written out row by row here."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa

from spark_calib.recalibration.points import head_cell_rows
from spark_calib.stats import schema as stats

SUMS = {
    "n": stats.N,
    "w": stats.SUM_WEIGHT,
    "o": stats.SUM_WEIGHT_OUTCOME,
    "c": stats.SUM_WEIGHT_CONFIDENCE,
    "z": stats.SUM_WEIGHT_LOGIT,
    "brier": stats.SUM_WEIGHT_BRIER,
    "nll": stats.SUM_WEIGHT_NLL,
    "correct": stats.SUM_WEIGHT_CORRECT,
}


def _statistics(seed: int) -> list[dict[str, object]]:
    """Statistics rows of two versions (one of them null), the country set, shuffled: each
    (cell, bin, label, fit) of a key appears in two rows (two threshold bins) to be summed."""
    rng = random.Random(seed)
    rows: list[dict[str, object]] = []
    for version in ("v1", None):
        for country in ("DE", "MX", "US"):
            for cell in rng.sample(range(40), 6):
                for label in (0, 1):
                    for fit in (None, 1, 0):
                        for threshold_bin in (0, 1):
                            w = rng.uniform(0.5, 2.0)
                            rows.append(
                                {
                                    stats.MODEL_VERSION: version,
                                    stats.SLICE_NAME: "country",
                                    stats.SLICE_VALUE: country,
                                    stats.CLASS: None,
                                    stats.TRUE_CLASS: str(label),
                                    stats.BIN: cell // 10,
                                    stats.CELL: cell,
                                    stats.RECALIBRATION_FIT: fit,
                                    stats.REASON: None,
                                    "threshold_bin": threshold_bin,
                                    stats.N: 3,
                                    stats.SUM_WEIGHT: w,
                                    stats.SUM_WEIGHT_OUTCOME: w * label,
                                    stats.SUM_WEIGHT_CONFIDENCE: rng.random(),
                                    stats.SUM_WEIGHT_LOGIT: rng.uniform(-3, 3),
                                    stats.SUM_WEIGHT_BRIER: rng.random(),
                                    stats.SUM_WEIGHT_NLL: rng.random(),
                                    stats.SUM_WEIGHT_CORRECT: rng.random(),
                                }
                            )
    # Rows the merge must leave out: an invalid reason, a class row, no cell.
    for change in ({stats.REASON: "null_score"}, {stats.CLASS: "1"}, {stats.CELL: None}):
        rows.append({**rows[0], **change})
    rng.shuffle(rows)
    return rows


def _expected(rows: list[dict[str, object]]) -> dict[tuple, list[tuple]]:
    """Key → its sorted (cell, bin, label, fit, sums...) rows, summed in plain Python, with
    the country set copied into each version's ``overall``."""
    sums: dict[tuple, dict[tuple, list[float]]] = {}
    for row in rows:
        if row[stats.REASON] is not None or row[stats.CLASS] is not None:
            continue
        if row[stats.CELL] is None:
            continue
        label = int(row[stats.SUM_WEIGHT_OUTCOME] > 0)  # type: ignore[operator]
        fit = -1 if row[stats.RECALIBRATION_FIT] is None else row[stats.RECALIBRATION_FIT]
        inner = (row[stats.CELL], row[stats.BIN], label, fit)
        for key in (
            (row[stats.MODEL_VERSION], row[stats.SLICE_NAME], row[stats.SLICE_VALUE]),
            (row[stats.MODEL_VERSION], "overall", ""),
        ):
            totals = sums.setdefault(key, {}).setdefault(inner, [0.0] * len(SUMS))
            for index, column in enumerate(SUMS.values()):
                totals[index] += float(row[column])  # type: ignore[arg-type]
    return {
        key: [(*inner, *totals) for inner, totals in sorted(cells.items())]
        for key, cells in sums.items()
    }


def test_cell_rows_are_grouped_by_key_summed_and_sorted() -> None:
    rows = _statistics(seed=7)
    table = pa.Table.from_pylist(rows)
    merged = head_cell_rows(table, "country")
    expected = _expected(rows)
    assert set(merged) == set(expected)
    for key, cells in merged.items():
        got = np.column_stack(
            [cells.cell, cells.bin, cells.label, cells.fit, *[cells.sums[name] for name in SUMS]]
        )
        np.testing.assert_allclose(got, np.array(expected[key], dtype=float), rtol=1e-12)


def test_no_cell_rows_give_no_keys() -> None:
    rows = [row for row in _statistics(seed=3) if row[stats.REASON] is not None]
    assert head_cell_rows(pa.Table.from_pylist(rows), "country") == {}
