"""Run the kernels over statistics: one key (a group of ``applyInArrow``) or a table of many
keys (one ``toArrow()`` on the driver), with the same functions either way.

Per slice key (model_version, slice_name, slice_value): n_eff = (Σw)²/Σw² of its top-label
(class null) rows, then every kernel of ``kernels`` in turn, their estimates as rows of the
metrics table (``spark_calib.kernels.estimates.table_rows``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from spark_calib.kernels.arrow_batch import floats, labels, split_keys, to_table
from spark_calib.kernels.estimates import table_rows
from spark_calib.kernels.output_columns import METRICS_ARROW_SCHEMA
from spark_calib.kernels.plan import FinishPlan
from spark_calib.kernels.registry import kernel
from spark_calib.stats.schema import CLASS, SLICE_KEY_COLUMNS, SUM_WEIGHT, SUM_WEIGHT_SQ


def key_n_eff(table: pa.Table) -> float:
    """(Σw)²/Σw² over the key's top-label rows; NaN when Σw² is 0 or there are none."""
    top = np.array([label is None for label in labels(table, CLASS)], dtype=bool)
    w = float(np.sum(floats(table, SUM_WEIGHT)[top]))
    w2 = float(np.sum(floats(table, SUM_WEIGHT_SQ)[top]))
    return w * w / w2 if w2 != 0.0 else float("nan")


def key_rows(
    key: tuple[Any, ...], table: pa.Table, plan: FinishPlan, kernels: tuple[str, ...]
) -> list[tuple[Any, ...]]:
    """The metrics-table rows of one slice key's statistics."""
    n_eff = key_n_eff(table)
    rows: list[tuple[Any, ...]] = []
    for name in kernels:
        estimates = kernel(name)(table, plan)
        if estimates is not None:
            rows.extend(table_rows(key, estimates, plan, n_eff))
    return rows


def finish_table(table: pa.Table, plan: FinishPlan, kernels: tuple[str, ...]) -> pa.Table:
    """The metrics rows of every slice key of ``table`` (the driver path)."""
    rows: list[tuple[Any, ...]] = []
    for key, part in split_keys(table, SLICE_KEY_COLUMNS):
        rows.extend(key_rows(key, part, plan, kernels))
    return to_table(rows, METRICS_ARROW_SCHEMA)


def finish_group(plan: FinishPlan, kernels: tuple[str, ...]) -> Callable[[pa.Table], pa.Table]:
    """The function ``applyInArrow`` runs on each slice key's rows (the grouped path)."""

    def finish(table: pa.Table) -> pa.Table:
        if table.num_rows == 0:
            return METRICS_ARROW_SCHEMA.empty_table()
        key = tuple(table.column(name)[0].as_py() for name in SLICE_KEY_COLUMNS)
        return to_table(key_rows(key, table, plan, kernels), METRICS_ARROW_SCHEMA)

    return finish
