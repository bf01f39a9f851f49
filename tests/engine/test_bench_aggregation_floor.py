"""``bench.aggregation_floor``: each timed aggregation groups at the grain its name says, and the
report divides the medians by the scan floor's."""

from __future__ import annotations

import itertools

import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from bench.aggregation_floor import report, time_all, variants


def _log(spark: SparkSession) -> pd.DataFrame:
    # Two versions × two countries × one device; scores in two calibration bins (0.01, 0.02 share
    # bin 0 but not their fine cell; 0.9 is in bin 13) and both predicted classes.
    rows = [
        (version, country, "phone", score, label)
        for version, country, (score, label) in itertools.product(
            ("v1", "v2"), ("BR", "US"), ((0.01, 0), (0.02, 1), (0.9, 1), (0.9, 0))
        )
    ]
    columns = ["model_version", "country", "device", "score", "label"]
    return spark.createDataFrame(pd.DataFrame(rows, columns=columns))


def test_each_variant_groups_at_its_grain(spark: SparkSession) -> None:
    queries = variants(_log(spark))
    counts = {name: query.count() for name, query in queries.items()}
    assert counts == {
        "scan_floor": 1,
        # (version, country) × {bin 0 predicted 0, bin 13 predicted 1}
        "slices_bins_3": 8,
        "slices_bins_20": 8,
        # Each of the 16 rows is distinct, so its bucket is its own hash: at least one group
        # per (version, country, bin), at most one per row.
        "slices_bins_buckets_20": counts["slices_bins_buckets_20"],
        # version × the cells of 0.01, 0.02 and 0.9
        "version_cells_3": 6,
        "slices_cells_3": 12,
        "slices_cells_20": 12,
        "hashed_slices_cells_20": 12,
    }
    assert 8 <= counts["slices_bins_buckets_20"] <= 16
    buckets = queries["slices_bins_buckets_20"].agg(F.min("_bucket"), F.max("_bucket")).first()
    assert buckets is not None and 0 <= buckets[0] <= buckets[1] < 20
    n = queries["slices_cells_20"].groupBy().sum("n").first()
    assert n is not None and n[0] == 16
    hashed = queries["hashed_slices_cells_20"].select("model_version", "country").distinct()
    assert hashed.count() == 4  # the strings come back with their groups


def test_report_gives_medians_and_ratios_to_the_scan_floor() -> None:
    lines = report({"scan_floor": [2.0, 1.0, 3.0], "slices_cells_3": [9.0, 10.0, 12.0]})
    assert lines == [
        "scan_floor: median 2.00 s (2.00, 1.00, 3.00); 1.0× scan floor",
        "slices_cells_3: median 10.00 s (9.00, 10.00, 12.00); 5.0× scan floor",
    ]


def test_time_all_drops_the_warm_up_round(spark: SparkSession) -> None:
    ticks = iter(float(t) for t in range(100))
    times = time_all({"a": spark.range(3), "b": spark.range(2)}, 2, clock=lambda: next(ticks))
    # Each write reads the clock twice; round 0 (ticks 0–3) is the warm-up.
    assert times == {"a": [1.0, 1.0], "b": [1.0, 1.0]}
