"""``bench.backfill``'s floors: Spark's bare aggregation at the keys and number of sums of the
demo config's statistics, with the day as one more key for the backfill and without it for
the one window."""

from __future__ import annotations

import pandas as pd
from pyspark.sql import DataFrame, SparkSession

from bench.backfill import DEMO_CONFIG, FLOOR_SUMS, THRESHOLDS, floor_queries
from spark_calib.config import load_config
from spark_calib.rows import canonical as row
from tests.engine.test_bench_aggregation_floor import FLOOR_KEYS, grain_of_evaluate

# A backfill floor's derived key → the canonical rows' key: bench.aggregation_floor's, and
# the three the demo's binary statistics add.
BACKFILL_FLOOR_KEYS = {
    **FLOOR_KEYS,
    "_threshold_bin": row.THRESHOLD_BIN,
    "_y": row.TRUE_CLASS,
    "_fit": row.FIT,
}
COLUMNS = ["request_id", "model_version", "country", "device", "score", "label", "split"]
# One day's rows, each in its own group but the repeated one: 0.01 and 0.02 share a
# calibration bin but not their fine cell; 0.9 twice with label 1 and fit (one group), once
# with label 0; 0.6 twice with label 1, once fit and once not.
DAY_ROWS = [
    ("v1", "BR", "phone", 0.01, 0, "val"),
    ("v1", "BR", "phone", 0.02, 1, "test"),
    ("v1", "BR", "phone", 0.9, 1, "val"),
    ("v1", "BR", "phone", 0.9, 1, "val"),
    ("v1", "BR", "phone", 0.9, 0, "val"),
    ("v2", "US", "tablet", 0.6, 1, "val"),
    ("v2", "US", "tablet", 0.6, 1, "test"),
]


def _log(spark: SparkSession) -> DataFrame:
    rows = [
        (i, *values, day)
        for i, (day, values) in enumerate(
            (day, values) for day in ("2024-06-29", "2024-06-30") for values in DAY_ROWS
        )
    ]
    return spark.createDataFrame(pd.DataFrame(rows, columns=[*COLUMNS, "event_date"]))


def test_the_floors_group_by_day_and_without_it(spark: SparkSession) -> None:
    floors = floor_queries(_log(spark))
    # Six groups a day (the two rows of 0.9 with label 1 and fit are one), the same six on
    # both days.
    assert floors["floor_backfill"].count() == 12
    assert floors["floor_window"].count() == 6
    for name in ("floor_backfill", "floor_window"):
        total = floors[name].groupBy().sum("n").first()
        assert total is not None and total[0] == 2 * len(DAY_ROWS), name


def test_the_floors_have_the_keys_and_sums_of_the_demo_statistics(spark: SparkSession) -> None:
    config = load_config(DEMO_CONFIG)
    assert tuple(sorted(config.thresholds)) == THRESHOLDS
    log = _log(spark)
    expected, n_sums = grain_of_evaluate(log, DEMO_CONFIG)

    floors = floor_queries(log)
    window = floors["floor_window"].columns
    keys = window[: len(window) - FLOOR_SUMS]
    assert {BACKFILL_FLOOR_KEYS.get(key, key) for key in keys} == expected
    assert n_sums == FLOOR_SUMS
    assert floors["floor_backfill"].columns == ["event_date", *window]
