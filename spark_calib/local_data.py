"""DataFrames over a few rows built on the driver (per-key results, derived tables).

``spark.createDataFrame(rows, schema)`` on a list of Python rows distributes them as a Python
RDD in a classic session: every action on the frame runs Python worker processes to unpickle
them, and the first one in a process starts PySpark's worker daemon (about 2.5 s here). An
Arrow table instead becomes a local relation in the JVM (classic) or in the plan (Spark Connect),
which no Python process reads again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType


def local_dataframe(
    spark: SparkSession, rows: Sequence[Sequence[Any]], schema: StructType | str
) -> DataFrame:
    """A DataFrame of ``rows`` (tuples or ``Row``s in ``schema``'s column order; a struct
    value is a tuple or a dict, a map value a dict) with ``schema`` (a ``StructType`` or a DDL
    string), built from an Arrow table."""
    struct = schema if isinstance(schema, StructType) else _parsed(spark, schema)
    arrow_schema = to_arrow_schema(struct, timezone="UTC")
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(struct.fields)
    arrays = [
        pa.array(list(values), type=field.type)
        for values, field in zip(columns, arrow_schema, strict=True)
    ]
    return spark.createDataFrame(pa.Table.from_arrays(arrays, schema=arrow_schema), struct)


def _parsed(spark: SparkSession, ddl: str) -> StructType:
    """The ``StructType`` of a DDL schema string, as Spark parses it (no Spark job)."""
    return spark.createDataFrame([], ddl).schema
