"""Canonical rows labelled with the recalibration table's keys, and a per-key table joined to
them: the scoring passes' shared steps (multiclass temperature, exact binary "after")."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_calib.config import Config
from spark_calib.rows import canonical as row
from spark_calib.stats.aggregate import copy_per_slice_set, slice_set_labels

SLICE_NAME = "_slice_name"
SLICE_VALUE = "_slice_value"
# The key columns of a table joined by ``join_key``.
TABLE_KEYS = ("_v", "_n", "_w")


def table_slice_sets(config: Config) -> list[tuple[str, ...]]:
    """The configured slice sets, plus ``[]`` (each model version's ``overall``, the fallback
    key) when it is not configured."""
    sets = [tuple(cols) for cols in config.slices]
    return sets if () in sets else [*sets, ()]


def slice_key_columns(config: Config) -> list[str]:
    """The canonical rows' slice columns."""
    return [row.slice_key(index) for index in range(len(config.slice_columns()))]


def labelled(frame: DataFrame, config: Config, sets: Sequence[Sequence[str]]) -> DataFrame:
    """One copy of each row per slice set, with its slice name and value."""
    labels = slice_set_labels(config, sets)
    copied = copy_per_slice_set(frame, config, sets)
    return copied.withColumn(SLICE_NAME, labels.name).withColumn(SLICE_VALUE, labels.value)


def join_key(labelled_rows: DataFrame, table: DataFrame) -> DataFrame:
    """``labelled_rows`` with the broadcast per-key ``table`` (keys ``TABLE_KEYS``: model
    version, slice name, slice value) left-joined; a table with several rows per key gives a
    row one copy per match."""
    version, name, value = TABLE_KEYS
    condition = (
        F.col(row.MODEL_VERSION).eqNullSafe(F.col(version))
        & (F.col(SLICE_NAME) == F.col(name))
        & (F.col(SLICE_VALUE) == F.col(value))
    )
    return labelled_rows.join(F.broadcast(table), on=condition, how="left").drop(*TABLE_KEYS)
