"""Rollups: windows summed from the daily statistics equal one run over the window's rows.

Seven daily runs (Monday 2024-06-24 to Sunday 2024-06-30) of a seeded log are written once per
module; each test works on that output or on a copy of it.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_calib import evaluate
from spark_calib.config import Config
from spark_calib.errors import ConfigError
from spark_calib_cli.commands.evaluate import run_evaluate
from spark_calib_cli.commands.rollup import run_rollup
from spark_calib_cli.errors import MissingInputError
from tests.support.jobs import job_config, read_path_table, write_log

WEEK = [dt.date(2024, 6, 24) + dt.timedelta(days=i) for i in range(7)]
ROWS_PER_DAY = 150
REL = 1e-12
METRICS = ["ece", "mce", "rmsce", "brier", "nll", "accuracy", "count", "roc_auc_binned"]


def week_rows(seed: int = 7) -> list[tuple[Any, ...]]:
    """Versions a/b, countries BR/US/MX, scores U(0,1), labels ~ Bernoulli(s^1.3): a log
    whose calibration differs by day, so that a wrong sum shows."""
    rng = np.random.default_rng(seed)
    rows = []
    for day_index, day in enumerate(WEEK):
        for i in range(ROWS_PER_DAY):
            score = float(rng.random())
            label = int(rng.random() < score ** (1.0 + 0.1 * day_index))
            country = ("BR", "US", "MX")[int(rng.integers(3))]
            rows.append(
                (day_index * ROWS_PER_DAY + i, day, ("a", "b")[i % 2], country, score, label)
            )
    return rows


def daily_config(log: Path, out: Path, **extra: Any) -> Config:
    window = {"column": "event_date", "lookback_days": 1}
    return job_config(
        {"path": str(log), "window": window}, {"path": str(out)}, metrics=METRICS, **extra
    )


@pytest.fixture(scope="module")
def week(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(log path, output path) after the seven daily runs."""
    root = tmp_path_factory.mktemp("rollup")
    log, out = root / "log", root / "out"
    write_log(spark, log, week_rows())
    config = daily_config(log, out)
    for day in WEEK:
        run_evaluate(spark, config, day)
    return log, out


def copy_output(week: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    log, out = week
    shutil.copytree(out, tmp_path / "out")
    return log, tmp_path / "out"


def one_run_metrics(
    spark: SparkSession, log: Path, config: Config, days: list[dt.date]
) -> DataFrame:
    """The metrics of one evaluation over the rows of ``days``: the reference."""
    frame = spark.read.parquet(str(log)).where(F.col("event_date").isin(days))
    return evaluate(frame, config).metrics


def keyed(frame: DataFrame) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    return {
        (r.model_version, r.slice_name, r.slice_value, r["class"], r.metric): (
            r.value,
            r.n,
            r.weight_sum,
        )
        for r in frame.collect()
    }


def assert_same_metrics(actual: DataFrame, expected: DataFrame) -> None:
    got, want = keyed(actual), keyed(expected)
    assert set(got) == set(want)
    for key, (value, n, weight) in want.items():
        assert got[key][1] == n, key
        assert got[key][2] == pytest.approx(weight, rel=REL), key
        if value is None:
            assert got[key][0] is None, key
        else:
            assert got[key][0] == pytest.approx(value, rel=REL, abs=1e-15), key


def window_partition(
    spark: SparkSession, out: Path, table: str, end: dt.date, granularity: str
) -> DataFrame:
    return read_path_table(spark, out, table).where(
        (F.col("run_date") == F.lit(end)) & (F.col("granularity") == granularity)
    )


def test_week_from_seven_days_equals_one_run_over_the_week(
    spark: SparkSession, week: tuple[Path, Path]
) -> None:
    log, out = week
    config = daily_config(log, out)
    outcome = run_rollup(spark, config, WEEK[3], "week")

    assert (outcome.window.start, outcome.window.end) == (WEEK[0], WEEK[6])
    assert outcome.present == tuple(WEEK) and outcome.missing == ()
    assert outcome.n_rows == 7 * ROWS_PER_DAY
    rolled = window_partition(spark, out, "calibration_metrics", WEEK[6], "week")
    assert_same_metrics(rolled, one_run_metrics(spark, log, config, WEEK))
    assert {(r.window_start, r.window_end) for r in rolled.collect()} == {(WEEK[0], WEEK[6])}
    windows = window_partition(spark, out, "calibration_windows", WEEK[6], "week").collect()
    assert len(windows) == 1
    assert windows[0].days_present == WEEK and windows[0].days_missing == []
    assert windows[0].days_expected == 7 and windows[0].n_rows == 7 * ROWS_PER_DAY


def test_reliability_bins_of_the_week_are_the_sums_of_the_days(
    spark: SparkSession, week: tuple[Path, Path]
) -> None:
    log, out = week
    run_rollup(spark, daily_config(log, out), WEEK[6], "week")
    rolled = window_partition(spark, out, "calibration_reliability", WEEK[6], "week")
    daily = read_path_table(spark, out, "calibration_reliability").where(
        F.col("granularity") == "day"
    )
    key = ["model_version", "slice_name", "slice_value", "bin"]
    sums = daily.groupBy(*key).agg(F.sum("n").alias("n"), F.sum("weight_sum").alias("weight_sum"))
    want = {tuple(r[k] for k in key): (r.n, r.weight_sum) for r in sums.collect()}
    got = {tuple(r[k] for k in key): (r.n, r.weight_sum) for r in rolled.collect()}
    assert got == want


def test_rolling_window_equals_one_run_over_its_days(
    spark: SparkSession, week: tuple[Path, Path]
) -> None:
    log, out = week
    config = daily_config(log, out)
    outcome = run_rollup(spark, config, WEEK[4], "rolling:3")
    assert outcome.window.granularity == "rolling_3d"
    rolled = window_partition(spark, out, "calibration_metrics", WEEK[4], "rolling_3d")
    assert_same_metrics(rolled, one_run_metrics(spark, log, config, WEEK[2:5]))


def test_missing_day_is_reported_and_the_rest_summed(
    spark: SparkSession, week: tuple[Path, Path], tmp_path: Path
) -> None:
    log, out = copy_output(week, tmp_path)
    shutil.rmtree(out / "calibration_stats" / f"run_date={WEEK[2]}")
    config = daily_config(log, out)
    outcome = run_rollup(spark, config, WEEK[0], "week")

    present = [day for day in WEEK if day != WEEK[2]]
    assert outcome.missing == (WEEK[2],) and outcome.present == tuple(present)
    rolled = window_partition(spark, out, "calibration_metrics", WEEK[6], "week")
    assert_same_metrics(rolled, one_run_metrics(spark, log, config, present))
    row = window_partition(spark, out, "calibration_windows", WEEK[6], "week").collect()[0]
    assert row.days_missing == [WEEK[2]] and row.days_present == present


def test_required_days_make_a_missing_day_an_error(
    spark: SparkSession, week: tuple[Path, Path], tmp_path: Path
) -> None:
    log, out = copy_output(week, tmp_path)
    shutil.rmtree(out / "calibration_stats" / f"run_date={WEEK[5]}")
    config = daily_config(log, out, rollup={"require_all_days": True})
    with pytest.raises(MissingInputError, match="missing run dates 2024-06-29"):
        run_rollup(spark, config, WEEK[6], "week")


def test_window_without_any_day_is_missing_input(
    spark: SparkSession, week: tuple[Path, Path]
) -> None:
    log, out = week
    with pytest.raises(MissingInputError, match="no statistics for any day"):
        run_rollup(spark, daily_config(log, out), dt.date(2024, 5, 15), "month")


def test_rollup_rerun_replaces_its_partition_only(
    spark: SparkSession, week: tuple[Path, Path]
) -> None:
    log, out = week
    config = daily_config(log, out)
    run_rollup(spark, config, WEEK[6], "week", run_id="first")
    before = read_path_table(spark, out, "calibration_metrics")
    daily_before = before.where(F.col("granularity") == "day").count()
    first = window_partition(spark, out, "calibration_metrics", WEEK[6], "week")
    first_rows = keyed(first)

    run_rollup(spark, config, WEEK[6], "week", run_id="second")
    again = window_partition(spark, out, "calibration_metrics", WEEK[6], "week")
    assert keyed(again) == first_rows
    assert {r.run_id for r in again.collect()} == {"second"}
    after = read_path_table(spark, out, "calibration_metrics")
    assert after.where(F.col("granularity") == "day").count() == daily_before
    for table in ("calibration_windows", "calibration_drift", "calibration_alerts"):
        runs = window_partition(spark, out, table, WEEK[6], "week").select("run_id").distinct()
        assert [r.run_id for r in runs.collect()] in ([], ["second"]), table


def test_late_labels_rerun_of_a_day_fixes_the_week(
    spark: SparkSession, week: tuple[Path, Path], tmp_path: Path
) -> None:
    _, out = copy_output(week, tmp_path)
    late = [
        (rid, day, version, country, score, 1 - label if day == WEEK[1] else label)
        for rid, day, version, country, score, label in week_rows()
    ]
    log = tmp_path / "log"
    write_log(spark, log, late)
    config = daily_config(log, out)
    run_rollup(spark, config, WEEK[6], "week")
    stale = keyed(window_partition(spark, out, "calibration_metrics", WEEK[6], "week"))

    run_evaluate(spark, config, WEEK[1])
    run_rollup(spark, config, WEEK[6], "week")
    fixed = window_partition(spark, out, "calibration_metrics", WEEK[6], "week")
    assert keyed(fixed) != stale
    assert_same_metrics(fixed, one_run_metrics(spark, log, config, WEEK))


def test_days_from_another_config_are_refused(spark: SparkSession, week: tuple[Path, Path]) -> None:
    log, out = week
    other = daily_config(log, out, binning={"n_bins": 7})
    with pytest.raises(ConfigError, match="evaluated with another config"):
        run_rollup(spark, other, WEEK[6], "week")


def test_alert_rules_do_not_change_the_config_hash(
    spark: SparkSession, week: tuple[Path, Path]
) -> None:
    log, out = week
    with_rule = daily_config(log, out, alerts=[{"metric": "ece", "max": 0.9}])
    outcome = run_rollup(spark, with_rule, WEEK[6], "week")
    assert outcome.present == tuple(WEEK)


def test_rollup_needs_runs_of_one_day(spark: SparkSession, week: tuple[Path, Path]) -> None:
    log, out = week
    weekly = job_config(
        {"path": str(log), "window": {"column": "event_date", "lookback_days": 7}},
        {"path": str(out)},
    )
    with pytest.raises(ConfigError, match="lookback_days: 7"):
        run_rollup(spark, weekly, WEEK[6], "week")


def test_daily_drift_is_the_change_from_the_day_before(
    spark: SparkSession, week: tuple[Path, Path]
) -> None:
    log, out = week
    config = daily_config(log, out)
    today = keyed(one_run_metrics(spark, log, config, [WEEK[3]]))
    yesterday = keyed(one_run_metrics(spark, log, config, [WEEK[2]]))
    drift = window_partition(spark, out, "calibration_drift", WEEK[3], "day").collect()
    assert drift
    for row in drift:
        key = (row.model_version, row.slice_name, row.slice_value, row["class"], row.metric)
        assert row.value == pytest.approx(today[key][0], rel=REL)
        assert row.previous_value == pytest.approx(yesterday[key][0], rel=REL)
        assert row.previous_delta == pytest.approx(today[key][0] - yesterday[key][0], abs=1e-12)
        assert row.baseline is None and row.baseline_value is None


def test_rollup_refuses_a_day_and_an_input_without_window(
    spark: SparkSession, week: tuple[Path, Path]
) -> None:
    log, out = week
    with pytest.raises(ConfigError, match="use spark-calib evaluate"):
        run_rollup(spark, daily_config(log, out), WEEK[6], "rolling:1")
    no_window = job_config({"path": str(log)}, {"path": str(out)})
    with pytest.raises(ConfigError, match=r"without input\.window"):
        run_rollup(spark, no_window, WEEK[6], "week")
