"""The output tables' floating-point columns are written without Parquet dictionaries, in path
and catalog mode; other columns keep them (``partitions.parquet_options``)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from spark_calib.config import OutputConfig
from spark_calib_cli.io.partitions import write_partition

RUN_DATE = dt.date(2024, 6, 30)
DICTIONARY = {"PLAIN_DICTIONARY", "RLE_DICTIONARY"}


def encodings(table_dir: Path) -> dict[str, set[str]]:
    """Column → the encodings of its chunks, over the run date's files."""
    found: dict[str, set[str]] = {}
    for path in sorted((table_dir / f"run_date={RUN_DATE}").glob("*.parquet")):
        metadata = pq.ParquetFile(path).metadata
        for group in range(metadata.num_row_groups):
            for index in range(metadata.num_columns):
                column = metadata.row_group(group).column(index)
                found.setdefault(column.path_in_schema, set()).update(column.encodings)
    return found


@pytest.mark.parametrize("mode", ["path", "catalog"])
def test_doubles_have_no_dictionary_and_strings_keep_theirs(
    spark: SparkSession, tmp_path: Path, mode: str
) -> None:
    # Two distinct values each: the writer would dictionary-encode both columns by default.
    frame = spark.createDataFrame(
        [(f"slice{i % 2}", 0.25 * (i % 2)) for i in range(200)], "slice_value string, value double"
    ).coalesce(1)
    if mode == "path":
        output = OutputConfig(path=str(tmp_path / "out"))
        location = write_partition(spark, frame, output, "calibration_x", RUN_DATE)
        table_dir = Path(location)
    else:
        database = f"parquet_options_{tmp_path.name}".replace("-", "_")
        output = OutputConfig(database=database)
        write_partition(spark, frame, output, "calibration_x", RUN_DATE)
        warehouse = str(spark.conf.get("spark.sql.warehouse.dir")).removeprefix("file:")
        table_dir = Path(warehouse) / f"{database}.db" / "calibration_x"

    found = encodings(table_dir)
    assert found["value"] and not found["value"] & DICTIONARY, found
    assert found["slice_value"] & DICTIONARY, found
