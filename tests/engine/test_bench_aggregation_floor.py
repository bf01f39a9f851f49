"""``bench.aggregation_floor``: each timed aggregation groups at the grain its name says, each
``bench.run`` case's floor at the keys and number of sums of that case's statistics, and the
report divides the medians by the scan floor's. ``bench.phases`` finishes a run's written
statistics on both of evaluate's paths."""

from __future__ import annotations

import itertools
from pathlib import Path

import pandas as pd
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bench import configs as C
from bench.aggregation_floor import GRAINS, report, time_all, variants
from bench.phases import time_finishing
from bench.run import _floors
from spark_calib import evaluate
from spark_calib.config import load_config
from spark_calib.rows import canonical as row
from spark_calib.rows.canonical import canonical_rows
from spark_calib.rows.needs import config_needs
from spark_calib.rows.schema import check_input_schema
from spark_calib.stats.aggregate import INDEX_KEYS, TERM_SUMS, _same_sums, _sums

# A floor's derived key → the canonical rows' key evaluate groups by.
FLOOR_KEYS = {
    "_bin": row.BIN,
    "_predicted": row.PREDICTED_CLASS,
    "_cell": row.CELL,
    "_bucket": row.BUCKET,
}
TYPICAL = C.config(C.BINARY, C.TYPICAL_SLICES)
METRICS_ALL = {
    "spark_calib": C.config(C.BINARY, C.TYPICAL_SLICES, C.metrics_all(C.BINARY)),
    "spark_calib_without_cox": C.config(
        C.BINARY, C.TYPICAL_SLICES, C.METRICS_ALL_BINARY_WITHOUT_COX
    ),
}
# The configs bench.run times in each case with a floor (ctr is metrics_all on another log).
CASE_CONFIGS = {
    "typical": {
        "spark_calib": TYPICAL,
        "spark_calib_jackknife": {**TYPICAL, "uncertainty": {"method": "jackknife"}},
    },
    "metrics_all": METRICS_ALL,
    "slices_1": {"spark_calib": C.config(C.BINARY, [C.OVERALL])},
    "ctr": METRICS_ALL,
}


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
        "slices_bins_12": 8,
        "slices_bins_20": 8,
        # version × {bin 0, bin 13}
        "version_bins_12": 4,
        # Each of the 16 rows is distinct, so its bucket is its own hash: at least one group
        # per (version, country, bin), at most one per row.
        "slices_bins_buckets_12": counts["slices_bins_buckets_12"],
        "slices_bins_buckets_20": counts["slices_bins_buckets_20"],
        # version × the cells of 0.01, 0.02 and 0.9
        "version_cells_3": 6,
        "slices_cells_3": 12,
        "slices_cells_16": 12,
        "slices_cells_20": 12,
        "hashed_slices_cells_20": 12,
    }
    assert 8 <= counts["slices_bins_buckets_20"] <= 16
    assert counts["slices_bins_buckets_12"] == counts["slices_bins_buckets_20"]
    assert len(queries["slices_cells_16"].columns) == len(GRAINS["slices_cells_16"][0]) + 16
    buckets = queries["slices_bins_buckets_20"].agg(F.min("_bucket"), F.max("_bucket")).first()
    assert buckets is not None and 0 <= buckets[0] <= buckets[1] < 20
    n = queries["slices_cells_20"].groupBy().sum("n").first()
    assert n is not None and n[0] == 16
    hashed = queries["hashed_slices_cells_20"].select("model_version", "country").distinct()
    assert hashed.count() == 4  # the strings come back with their groups


def grain_of_evaluate(log: DataFrame, cfg: C.Config | Path) -> tuple[set[str], int]:
    """The keys (beyond reason and class) and the number of sums of cfg's one aggregation
    over ``log`` (unit weights)."""
    config = load_config(cfg)
    rows = canonical_rows(log, config, check_input_schema(log, config), 2, config_needs(config))
    keys = {name for name in INDEX_KEYS if name in rows.columns}
    sums = _sums([name for name in TERM_SUMS if name in rows.columns], regression=False)
    copied = _same_sums(sums, unit_weight=True)
    return {"model_version", *config.slice_columns(), *keys}, len(sums) - len(copied)


@pytest.mark.parametrize("case", sorted(CASE_CONFIGS))
def test_each_case_floor_has_the_keys_and_sums_of_its_statistics(
    spark: SparkSession, case: str
) -> None:
    floors = _floors(C.BINARY, case)
    assert floors
    for floor in floors:
        keys, count = GRAINS[floor.query]
        for variant in floor.variants:
            if variant == "spark_calib_equal_mass":
                continue  # its cells make a finer grain: divided by the bins' floor on purpose
            expected = ({FLOOR_KEYS.get(key, key) for key in keys}, count)
            assert grain_of_evaluate(_log(spark), CASE_CONFIGS[case][variant]) == expected, variant


def test_no_floor_for_a_multiclass_log() -> None:
    assert _floors("multiclass10", "typical") == []


@pytest.mark.parametrize(("max_rows", "path"), [(200_000, "driver"), (0, "grouped")])
def test_time_finishing_finishes_the_written_statistics(
    spark: SparkSession, tmp_path: Path, max_rows: int, path: str
) -> None:
    result = evaluate(_log(spark), TYPICAL)
    result.stats.write.parquet(str(tmp_path / "stats"))
    n_stats = result.stats.count()
    result.unpersist()

    timing = time_finishing(
        spark, TYPICAL, tmp_path / "stats", repeats=2, warmup=False, driver_max_rows=max_rows
    )

    assert timing["path"] == path
    assert timing["statistics_rows"] == n_stats
    assert len(timing["finishing_runs_s"]) == 2 and timing["finishing_s"] > 0
    assert (timing["statistics_to_arrow_s"] is None) == (path == "grouped")


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
