"""Run the kernels over statistics: a hash bucket of keys (a group of ``applyInArrow``) or a
table of every key (one ``toArrow()`` on the driver), key after key either way, with the same
functions.

Per slice key (model_version, slice_name, slice_value): n_eff = (Σw)²/Σw² of its top-label
(class null) rows, then every metric kernel of ``kernels`` in turn, their estimates as rows of
the metrics table (``spark_calib.kernels.estimates.table_rows``), and the rows of the other
requested output tables (``spark_calib.kernels.registry.TABLES``). On the workers the outputs
of a group travel as one Arrow table, a tagged union (``OUTPUT`` names the output of a row;
``union_schema``), which the caller splits once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from spark_calib.kernels.arrow_batch import Rows, floats, is_null, split_keys, to_table
from spark_calib.kernels.estimates import table_rows
from spark_calib.kernels.output_columns import METRICS_ARROW_SCHEMA
from spark_calib.kernels.plan import FinishPlan
from spark_calib.kernels.registry import TABLES, kernel
from spark_calib.kernels.registry import table as table_kernel
from spark_calib.stats.schema import CLASS, SLICE_KEY_COLUMNS, SUM_WEIGHT, SUM_WEIGHT_SQ

METRICS = "metrics"
RELIABILITY = "reliability"
OUTPUT_SCHEMAS = {
    METRICS: METRICS_ARROW_SCHEMA,
    **{name: schema for name, (_, schema) in TABLES.items()},
}
# The tag column of the workers' union of the outputs.
OUTPUT = "_output"


def key_n_eff(table: Rows) -> float:
    """(Σw)²/Σw² over the key's top-label rows; NaN when Σw² is 0 or there are none."""
    top = is_null(table, CLASS)
    w = float(np.sum(floats(table, SUM_WEIGHT)[top]))
    w2 = float(np.sum(floats(table, SUM_WEIGHT_SQ)[top]))
    return w * w / w2 if w2 != 0.0 else float("nan")


def key_outputs(
    key: tuple[Any, ...],
    statistics: Rows,
    plan: FinishPlan,
    kernels: Sequence[str],
    outputs: Sequence[str],
) -> dict[str, list[tuple[Any, ...]]]:
    """Each requested output's rows of one slice key's statistics."""
    rows: dict[str, list[tuple[Any, ...]]] = {name: [] for name in outputs}
    if METRICS in rows:
        n_eff = key_n_eff(statistics)
        for name in kernels:
            estimates = kernel(name)(statistics, plan)
            if estimates is not None:
                rows[METRICS].extend(table_rows(key, estimates, plan, n_eff))
    for name in outputs:
        if name != METRICS:
            rows[name].extend(table_kernel(name)[0](key, statistics, plan))
    return rows


def finish_table(
    table: pa.Table,
    plan: FinishPlan,
    kernels: Sequence[str],
    outputs: Sequence[str] = (METRICS,),
    rows: np.ndarray | None = None,
) -> dict[str, pa.Table]:
    """Every requested output of every slice key of ``table``'s rows at positions ``rows``
    (None: every row; the driver path)."""
    found_rows = keys_outputs(table, plan, kernels, outputs, rows)
    return {name: to_table(found, OUTPUT_SCHEMAS[name]) for name, found in found_rows.items()}


def keys_outputs(
    table: pa.Table,
    plan: FinishPlan,
    kernels: Sequence[str],
    outputs: Sequence[str],
    rows: np.ndarray | None = None,
) -> dict[str, list[tuple[Any, ...]]]:
    """Each requested output's rows of every slice key of ``table`` (its rows at positions
    ``rows``; None: all), key after key."""
    found_rows: dict[str, list[tuple[Any, ...]]] = {name: [] for name in outputs}
    for key, part in split_keys(table, SLICE_KEY_COLUMNS, rows):
        for name, found in key_outputs(key, part, plan, kernels, outputs).items():
            found_rows[name].extend(found)
    return found_rows


def union_schema(outputs: Sequence[str]) -> pa.Schema:
    """The tag, then every column of the ``outputs`` once (the outputs share their key
    columns, n and the interval columns, each with one type in all of them)."""
    fields: dict[str, pa.Field] = {OUTPUT: pa.field(OUTPUT, pa.string())}
    for name in outputs:
        for field in OUTPUT_SCHEMAS[name]:
            fields.setdefault(field.name, field)
    return pa.schema(list(fields.values()))


def finish_group(
    plan: FinishPlan, kernels: Sequence[str], outputs: Sequence[str]
) -> Callable[[pa.Table], pa.Table]:
    """The function ``applyInArrow`` runs on each group of the grouped path: every row of one
    or more slice keys (a group is a hash bucket of keys, not one key: Spark's cost per group
    is above the kernels' per key). Each key is finished alone, as on the driver, and the
    outputs of the group travel as one tagged Arrow table of ``union_schema(outputs)``."""
    schema = union_schema(outputs)
    # The union's columns after the tag, and per output each one's position in that
    # output's schema (−1: none, all null).
    fields = [field for field in schema if field.name != OUTPUT]
    positions = {
        name: [OUTPUT_SCHEMAS[name].get_field_index(field.name) for field in fields]
        for name in outputs
    }

    def finish(table: pa.Table) -> pa.Table:
        parts = []
        for name, found in keys_outputs(table, plan, kernels, outputs).items():
            if not found:
                continue
            part = to_table(found, OUTPUT_SCHEMAS[name])
            size = part.num_rows
            columns = [pa.array([name] * size, pa.string())]
            for field, position in zip(fields, positions[name], strict=True):
                columns.append(
                    part.column(position) if position >= 0 else pa.nulls(size, field.type)
                )
            parts.append(pa.Table.from_arrays(columns, schema=schema))
        return pa.concat_tables(parts) if parts else schema.empty_table()

    return finish
