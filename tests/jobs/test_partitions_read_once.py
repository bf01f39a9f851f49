"""``partitions_read_once``: inside the block each partition is collected once and read back
as the same local frame, with the rows a plain read gives; a partition above the row cap
stays a lazy read; outside the block (and after it) every read goes to the table."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_calib.config import OutputConfig
from spark_calib_cli.io import partitions
from spark_calib_cli.io.partitions import partitions_read_once, read_partition, write_partition

DAY = dt.date(2024, 6, 30)
OTHER_DAY = dt.date(2024, 6, 29)
TABLE = "calibration_x"


def _write(spark: SparkSession, output: OutputConfig, day: dt.date, rows: int) -> None:
    frame = spark.createDataFrame(
        [(f"s{i}", float(i) + 0.5) for i in range(rows)], "slice_value string, value double"
    )
    write_partition(spark, frame, output, TABLE, day)


def _rows(spark: SparkSession, output: OutputConfig, day: dt.date) -> list[tuple[str, float]]:
    frame = read_partition(spark, output, TABLE, day)
    return sorted((row.slice_value, row.value) for row in frame.collect())


def test_a_partition_is_collected_once_and_reads_as_the_table(
    spark: SparkSession, tmp_path: Path
) -> None:
    output = OutputConfig(path=str(tmp_path / "out"))
    _write(spark, output, DAY, 3)
    _write(spark, output, OTHER_DAY, 2)
    plain = _rows(spark, output, DAY)
    assert plain == [("s0", 0.5), ("s1", 1.5), ("s2", 2.5)]

    with partitions_read_once():
        first = read_partition(spark, output, TABLE, DAY)
        with partitions_read_once():
            again = read_partition(spark, output, TABLE, DAY)
        other = read_partition(spark, output, TABLE, OTHER_DAY)
        assert again is first
        assert other is not first
        assert sorted((r.slice_value, r.value) for r in first.collect()) == plain
        assert first.columns == read_partition(spark, output, TABLE, DAY).columns
        assert sorted(r.value for r in other.collect()) == [0.5, 1.5]
        # A rewrite inside the block is not seen: the block is for readers.
        _write(spark, output, DAY, 1)
        assert read_partition(spark, output, TABLE, DAY) is first

    # After the block, reads go to the table again.
    assert _rows(spark, output, DAY) == [("s0", 0.5)]


def test_a_partition_above_the_cap_stays_a_lazy_read(
    spark: SparkSession,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    output = OutputConfig(path=str(tmp_path / "out"))
    _write(spark, output, DAY, 3)
    _write(spark, output, OTHER_DAY, 2)
    monkeypatch.setattr(partitions, "READ_ONCE_MAX_ROWS", 2)
    with partitions_read_once():
        large = read_partition(spark, output, TABLE, DAY)
        small = read_partition(spark, output, TABLE, OTHER_DAY)
        assert read_partition(spark, output, TABLE, DAY) is large
        assert large.count() == 3 and small.count() == 2
        capsys.readouterr()
        large.explain()
        small.explain()
        large_plan, small_plan = capsys.readouterr().out.split("== Physical Plan ==")[1:]
    assert "Parquet" in large_plan and "LocalTableScan" not in large_plan
    assert "LocalTableScan" in small_plan and "Parquet" not in small_plan
