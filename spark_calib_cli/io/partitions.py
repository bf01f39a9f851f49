"""Write one run_date partition of an output table, and read it back.

Each table is partitioned by ``run_date`` (a DATE), and the windowed tables (metrics,
reliability, drift, alerts, windows) by ``run_date`` and then ``granularity`` (``day``,
``week``, …). Writing replaces exactly one partition (the run date's, or the run date's and
granularity's) and nothing else, and a reader never sees a partially written partition:

- a run with rows is written by Spark's *dynamic* partition overwrite. The rows go to a hidden
  staging directory (``<table>/.spark-staging-<job id>``) and only when every task has
  committed does Spark swap the staged ``run_date=…`` directory in for the old one (a delete
  and a directory rename). Until then the old partition stays whole; a crash before the swap
  leaves it untouched, plus a hidden staging directory that readers skip;
- an empty result cannot be written that way (a dynamic overwrite only replaces the partitions
  its rows fall into, so a rerun without invalid rows would leave the first run's invalid rows
  behind). It is written by a *static* overwrite of the partition by name, which deletes the
  old rows first: a crash can then leave the date empty, which is what the run would have
  written anyway.

The two output modes:

- catalog (``output.database``): ``INSERT OVERWRITE TABLE …`` into a Parquet table partitioned by
  run_date, created with the database on the first write;
- path (``output.path``): ``<path>/<table>/run_date=…``, the Hive-style layout that Spark, Hive,
  Trino and pyarrow all read back as the ``run_date`` partition column.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, FloatType, StructType

from spark_calib import input_col
from spark_calib.config import OutputConfig
from spark_calib.local_data import local_dataframe
from spark_calib_cli.errors import MissingInputError, OutputError
from spark_calib_cli.io.identifiers import checked_identifier

RUN_DATE = "run_date"
GRANULARITY = "granularity"
OUTPUT_FORMAT = "parquet"
MISSING_PATH_CONDITIONS = frozenset({"PATH_NOT_FOUND", "UNABLE_TO_INFER_SCHEMA"})
PARTITION_OVERWRITE_MODE_CONF = "spark.sql.sources.partitionOverwriteMode"
PARTITION_OVERWRITE_MODE_OPTION = "partitionOverwriteMode"
DYNAMIC = "dynamic"
STATIC = "static"
_creating_database = threading.Lock()
# Rows up to which ``partitions_read_once`` keeps a partition on the driver: a day's metrics,
# reliability and ROC points of a few hundred slices.
READ_ONCE_MAX_ROWS = 50_000


def table_location(output: OutputConfig, table: str) -> str:
    """``database.table`` in catalog mode, ``<path>/<table>`` in path mode."""
    if output.database is not None:
        return checked_identifier(output.database, "output.database") + "." + table
    assert output.path is not None
    return output.path.rstrip("/") + "/" + table


def write_partition(
    spark: SparkSession,
    frame: DataFrame,
    output: OutputConfig,
    table: str,
    run_date: dt.date,
    *,
    empty: bool = False,
    granularity: str | None = None,
) -> str:
    """Replace the ``run_date`` partition of ``table`` with ``frame`` and return its location.

    With ``granularity``, the table is partitioned by run_date and granularity and only the
    (run_date, granularity) partition is replaced. ``frame`` holds every column but the
    partition columns. ``empty`` says that ``frame`` has no rows
    (the caller knows it from the scan's counts, so no Spark job is spent finding out); it
    selects the static overwrite, the only one that can replace old rows by none. A frame with
    rows passed with ``empty=True`` is still written correctly, only without the staged swap.

    Raises ``OutputError`` when the table exists with other columns or types, instead of
    mixing two schemas in one table.
    """
    location = table_location(output, table)
    partition = _partition(run_date, granularity)
    existing = _existing_schema(spark, output, location)
    if existing is not None:
        _check_same_columns(existing, frame.schema, location, partition)
    if output.database is not None:
        _insert_partition(
            spark, frame, output.database, location, existing, partition, dynamic=not empty
        )
    elif empty:
        frame.write.mode("overwrite").format(OUTPUT_FORMAT).options(
            **parquet_options(frame.schema)
        ).save(_partition_path(location, partition))
    else:
        (
            _with_partition_columns(frame, partition)
            .write.mode("overwrite")
            .options(**parquet_options(frame.schema))
            .option(PARTITION_OVERWRITE_MODE_OPTION, DYNAMIC)
            .partitionBy(*partition)
            .format(OUTPUT_FORMAT)
            .save(location)
        )
    return location


def write_partitions(
    spark: SparkSession,
    frame: DataFrame,
    output: OutputConfig,
    table: str,
    run_dates: Sequence[dt.date],
    with_rows: Collection[dt.date],
    *,
    granularity: str | None = None,
) -> str:
    """Replace the partitions of ``run_dates`` of ``table`` with the rows of ``frame``, whose
    ``run_date`` column says each row's date; return the table's location (a backfill's one
    write per table).

    The dates in ``with_rows`` (those ``frame`` has rows for, as the caller knows them) are
    replaced by one dynamic overwrite, with the staged swap of ``write_partition``; each other
    date of ``run_dates`` is then emptied by a static overwrite, as a daily run with no rows
    for the table would. A crash leaves each date's partition old or new, never a mix.
    """
    location = table_location(output, table)
    partition: dict[str, object] = {RUN_DATE: None}
    if granularity is not None:
        partition[GRANULARITY] = granularity
    columns = frame.select(*[input_col(name) for name in frame.columns if name != RUN_DATE])
    existing = _existing_schema(spark, output, location)
    if existing is not None:
        _check_same_columns(existing, columns.schema, location, partition)
    dated = [day for day in run_dates if day in with_rows]
    if dated:
        rows = frame.where(F.col(RUN_DATE).isin(dated))
        if output.database is not None:
            _insert_partition(
                spark, rows, output.database, location, existing, partition, dynamic=True
            )
        else:
            (
                _with_partition_columns(rows, partition)
                .write.mode("overwrite")
                .options(**parquet_options(rows.schema))
                .option(PARTITION_OVERWRITE_MODE_OPTION, DYNAMIC)
                .partitionBy(*partition)
                .format(OUTPUT_FORMAT)
                .save(location)
            )
    none = columns.where(F.lit(False))
    for day in run_dates:
        if day not in with_rows:
            write_partition(spark, none, output, table, day, empty=True, granularity=granularity)
    return location


def clear_partition(
    spark: SparkSession,
    output: OutputConfig,
    table: str,
    run_date: dt.date,
    *,
    granularity: str | None = None,
) -> str | None:
    """Empty the ``run_date`` partition of ``table`` if the table exists; return its location,
    or None when there is no such table.

    For an optional table that this run does not produce: a rerun of the date with a config
    that no longer asks for it must not leave the first run's rows behind.
    """
    location = table_location(output, table)
    partition = _partition(run_date, granularity)
    existing = _existing_schema(spark, output, location)
    if existing is None:
        return None
    columns = StructType([field for field in existing.fields if field.name not in partition])
    empty = local_dataframe(spark, [], columns)
    if output.database is not None:
        _insert_partition(
            spark, empty, output.database, location, existing, partition, dynamic=False
        )
    else:
        empty.write.mode("overwrite").format(OUTPUT_FORMAT).save(
            _partition_path(location, partition)
        )
    return location


@contextmanager
def partitions_read_once() -> Iterator[None]:
    """Within this block, ``read_partition`` collects each partition it is asked for once
    (one Spark job) and returns a local frame of those rows every time: a report reads the
    same few partitions many times, each read otherwise a few Spark jobs. A partition of more
    than ``READ_ONCE_MAX_ROWS`` rows stays a lazy read, so that a report of many slices still
    collects only the rows it draws (after one read of up to that many rows). For readers
    only: a partition written inside the block is not read again. The block holds for every
    thread of the process (the report's threads read inside it); blocks may nest."""
    global _read_once
    outer = _read_once
    if outer is None:
        _read_once = {}
    try:
        yield
    finally:
        _read_once = outer


# (table location, run date, granularity) → the partition's local frame, and a lock per key
# (the report's threads ask for the same partition at once); None outside partitions_read_once.
_read_once: dict[tuple[str, dt.date, str | None], tuple[threading.Lock, list[DataFrame]]] | None = (
    None
)
_read_once_lock = threading.Lock()


def read_partition(
    spark: SparkSession,
    output: OutputConfig,
    table: str,
    run_date: dt.date,
    *,
    granularity: str | None = None,
) -> DataFrame:
    """The rows of ``table`` for ``run_date`` (and ``granularity``, for a windowed table); a
    local frame collected once inside ``partitions_read_once``. Raises ``MissingInputError``
    if there is no such table."""
    memo = _read_once
    if memo is None:
        return _partition_rows(spark, output, table, run_date, granularity)
    key = (table_location(output, table), run_date, granularity)
    with _read_once_lock:
        lock, found = memo.setdefault(key, (threading.Lock(), []))
    with lock:
        if not found:
            rows = _partition_rows(spark, output, table, run_date, granularity)
            head = rows.limit(READ_ONCE_MAX_ROWS + 1).toArrow()
            small = head.num_rows <= READ_ONCE_MAX_ROWS
            found.append(spark.createDataFrame(head, rows.schema) if small else rows)
    return found[0]


def _partition_rows(
    spark: SparkSession,
    output: OutputConfig,
    table: str,
    run_date: dt.date,
    granularity: str | None,
) -> DataFrame:
    frame = read_table(spark, output, table)
    selected = frame.where(F.col(RUN_DATE) == F.lit(run_date))
    if granularity is not None:
        selected = selected.where(F.col(GRANULARITY) == F.lit(granularity))
    return selected


def read_table(spark: SparkSession, output: OutputConfig, table: str) -> DataFrame:
    """Every row of ``table``. Raises ``MissingInputError`` if there is no such table."""
    location = table_location(output, table)
    if output.database is not None:
        if not spark.catalog.tableExists(location):
            raise MissingInputError(f"output table {location!r} does not exist")
        frame = spark.table(location)
    else:
        try:
            frame = spark.read.format(OUTPUT_FORMAT).load(location)
            # Spark Connect resolves the path only when the schema is first asked for.
            frame.schema  # noqa: B018
        except AnalysisException as error:
            if error.getCondition() in MISSING_PATH_CONDITIONS:
                raise MissingInputError(f"output table {location!r} does not exist") from None
            raise
    return frame


def read_optional_partition(
    spark: SparkSession,
    output: OutputConfig,
    table: str,
    run_date: dt.date,
    *,
    granularity: str | None = None,
) -> DataFrame | None:
    """The rows of ``table`` for ``run_date``, or None when the table does not exist (an
    optional output that no run of this job has produced)."""
    try:
        return read_partition(spark, output, table, run_date, granularity=granularity)
    except MissingInputError:
        return None


def _insert_partition(
    spark: SparkSession,
    frame: DataFrame,
    database: str,
    location: str,
    existing: StructType | None,
    partition: dict[str, object],
    *,
    dynamic: bool,
) -> None:
    # One thread creates the database: the first tables of a run are written at once, and
    # two threads that both found no database made Spark log a "created concurrently" warning.
    with _creating_database:
        if not spark.catalog.databaseExists(database):
            spark.sql(
                "CREATE DATABASE IF NOT EXISTS IDENTIFIER(:database)", args={"database": database}
            )
    if existing is None:
        (
            _with_partition_columns(frame, partition)
            .limit(0)
            .write.format(OUTPUT_FORMAT)
            .options(**parquet_options(frame.schema))
            .partitionBy(*partition)
            .saveAsTable(location)
        )
        existing = spark.table(location).schema
    # INSERT matches columns by position, so follow the table's order; a partition column
    # without a value (None) comes from the rows, after the others.
    from_rows = [name for name, value in partition.items() if value is None]
    ordered = frame.select(
        *[name for name in existing.fieldNames() if name not in partition], *from_rows
    )
    given = {name: value for name, value in partition.items() if value is not None}
    # The partition column names are constants of this module, never user text.
    names = ", ".join(partition)
    if not dynamic:
        spec = ", ".join(f"{name} = :{name}" for name in partition)
        spark.sql(
            f"INSERT OVERWRITE TABLE IDENTIFIER(:table) PARTITION ({spec}) SELECT * FROM {{rows}}",
            args={"table": location, **partition},
            rows=ordered,
        )
        return
    # A partition spec without a value is what makes the overwrite dynamic; the mode itself is
    # a session setting for INSERT (write options do not reach it), held while it runs.
    with dynamic_overwrite(spark):
        values = "".join(f", :{name} AS {name}" for name in given)
        spark.sql(
            f"INSERT OVERWRITE TABLE IDENTIFIER(:table) PARTITION ({names}) "
            f"SELECT *{values} FROM {{rows}}",
            args={"table": location, **given},
            rows=ordered,
        )


class DynamicOverwrites:
    """The session's partition overwrite mode is dynamic while any of this process's dynamic
    INSERTs runs, and what it was before once the last one ends. Tables are written from
    several threads at once (``write_tables``): one INSERT restoring the mode while another
    still runs would turn that one into a static overwrite of the whole table. An INSERT that
    names every partition value is static whatever the mode, so it needs no hold."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders: dict[int, tuple[int, str]] = {}

    @contextmanager
    def __call__(self, spark: SparkSession) -> Iterator[None]:
        """Hold the dynamic mode of ``spark`` for the ``with`` block."""
        key = id(spark)
        with self._lock:
            count, previous = self._holders.get(key, (0, STATIC))
            if count == 0:
                previous = spark.conf.get(PARTITION_OVERWRITE_MODE_CONF) or STATIC
                spark.conf.set(PARTITION_OVERWRITE_MODE_CONF, DYNAMIC)
            self._holders[key] = (count + 1, previous)
        try:
            yield
        finally:
            with self._lock:
                count, previous = self._holders.pop(key)
                if count > 1:
                    self._holders[key] = (count - 1, previous)
                else:
                    spark.conf.set(PARTITION_OVERWRITE_MODE_CONF, previous)


dynamic_overwrite = DynamicOverwrites()


def parquet_options(schema: StructType) -> dict[str, str]:
    """Parquet writer options for a table of ``schema``: no dictionary for its floating-point
    columns. Sums and metric values rarely repeat, so the writer would build each page's
    dictionary only to drop it; without it the demo's 1.76M statistics rows were written in
    30 % less time for 4 % more bytes (docs/benchmarks.md). In catalog mode they are the
    table's options, which its INSERTs read."""
    return {
        f"parquet.enable.dictionary#{field.name}": "false"
        for field in schema.fields
        if isinstance(field.dataType, (DoubleType, FloatType))
    }


def _existing_schema(spark: SparkSession, output: OutputConfig, location: str) -> StructType | None:
    if output.database is not None:
        if not spark.catalog.tableExists(location):
            return None
        return spark.table(location).schema
    try:
        return spark.read.format(OUTPUT_FORMAT).load(location).schema
    except AnalysisException as error:
        if error.getCondition() in MISSING_PATH_CONDITIONS:
            return None
        raise


def _check_same_columns(
    existing: StructType, new: StructType, location: str, partition: dict[str, object]
) -> None:
    def columns(schema: StructType) -> dict[str, str]:
        return {
            field.name: field.dataType.simpleString()
            for field in schema.fields
            if field.name not in partition
        }

    have, want = columns(existing), columns(new)
    if have != want:
        differences = sorted(
            f"{name}: {have.get(name, 'absent')} → {want.get(name, 'absent')}"
            for name in set(have) | set(want)
            if have.get(name) != want.get(name)
        )
        raise OutputError(
            f"output table {location!r} exists with other columns ({'; '.join(differences)}); "
            f"write this config to another output database or path"
        )


def _partition(run_date: dt.date, granularity: str | None) -> dict[str, object]:
    """Partition column → value, in the table's partition order."""
    if granularity is None:
        return {RUN_DATE: run_date}
    return {RUN_DATE: run_date, GRANULARITY: granularity}


def _with_partition_columns(frame: DataFrame, partition: dict[str, object]) -> DataFrame:
    """``frame`` plus a constant column per partition value (None: ``frame`` has the column)."""
    return frame.select(
        "*",
        *[F.lit(value).alias(name) for name, value in partition.items() if value is not None],
    )


def _partition_path(location: str, partition: dict[str, object]) -> str:
    # Granularity values (day, week, month, rolling_7d) need no escaping in a path.
    parts = [
        f"{name}={value.isoformat() if isinstance(value, dt.date) else value}"
        for name, value in partition.items()
    ]
    return "/".join([location, *parts])
