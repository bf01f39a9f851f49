"""A backfill (one scan of a date range) writes what the day-by-day runs write.

Five days of the demo's binary log, with the demo's config (confusion, thresholds and ROC
tables, recalibration with a fit split, drift against a baseline inside the range, alerts),
are evaluated both ways into two path outputs: one ``run_evaluate`` per day, in date order,
and one ``run_backfill``, run twice. Every table must be equal row by row apart from
``run_id``: metrics and intervals to 1e-12, and the text, integer and date columns exactly.
"""

from __future__ import annotations

import datetime as dt
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pandas as pd
import pytest
from pyspark.sql import DataFrame, SparkSession

from spark_calib import evaluate_days
from spark_calib.config import Config, load_config
from spark_calib.config.slice_search import SliceSearchConfig
from spark_calib.errors import InvalidRowsError
from spark_calib_cli.commands import backfill as backfill_module
from spark_calib_cli.commands.backfill import BackfillOutcome, one_scan_backfill, run_backfill
from spark_calib_cli.commands.backfill_monitoring import batch_monitoring
from spark_calib_cli.commands.evaluate import EvaluateOutcome, run_evaluate
from spark_calib_cli.demo import logs as demo
from spark_calib_cli.errors import MissingInputError
from spark_calib_cli.io.tables import (
    ALERTS_TABLE,
    CONFUSION_TABLE,
    DRIFT_TABLE,
    INVALID_ROWS_TABLE,
    METRICS_TABLE,
    RECALIBRATION_TABLE,
    RELIABILITY_TABLE,
    ROC_TABLE,
    RUN_ID,
    STATS_TABLE,
    THRESHOLDS_TABLE,
    WINDOWS_TABLE,
)
from tests.support.jobs import (
    NEXT_DATE,
    RUN_DATE,
    job_config,
    log_rows,
    read_path_table,
    write_log,
)

END_DATE = dt.date(2024, 6, 30)
DAYS = [END_DATE - dt.timedelta(days=4 - index) for index in range(5)]
ROWS = 25_000
TABLES = (
    INVALID_ROWS_TABLE,
    STATS_TABLE,
    RELIABILITY_TABLE,
    CONFUSION_TABLE,
    THRESHOLDS_TABLE,
    ROC_TABLE,
    RECALIBRATION_TABLE,
    METRICS_TABLE,
    DRIFT_TABLE,
    ALERTS_TABLE,
    WINDOWS_TABLE,
)


def demo_config(log: Path, out: Path) -> Config:
    """The demo's binary config on ``log``, writing to ``out``, with the drift baseline on the
    first two days of the range (so that the first days see a partial baseline)."""
    config = load_config(Path(__file__).parents[2] / "conf" / "demo_binary.yaml")
    return config.model_copy(
        update={
            "input": config.input.model_copy(update={"path": str(log)}),  # type: ignore[union-attr]
            "output": config.output.model_copy(  # type: ignore[union-attr]
                update={"database": None, "path": str(out)}
            ),
            "max_invalid_fraction": 0.01,
            "recalibration": config.recalibration.model_copy(  # type: ignore[union-attr]
                update={"min_fit_rows": 200}
            ),
            "drift": config.drift.model_copy(
                update={
                    "baseline_dates": config.drift.baseline_dates.model_copy(  # type: ignore[union-attr]
                        update={"start": DAYS[0], "end": DAYS[1]}
                    ),
                    "min_n": 100,
                }
            ),
        }
    )


@dataclass(frozen=True)
class BothWays:
    daily_out: Path
    backfill_out: Path
    daily: list[EvaluateOutcome]
    backfill: BackfillOutcome


@pytest.fixture(scope="module")
def both_ways(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> BothWays:
    root = tmp_path_factory.mktemp("backfill")
    log = root / "log"
    demo.write_log(demo.binary_log(spark, ROWS, demo.DEFAULT_SEED, END_DATE, days=5), str(log))
    daily_config = demo_config(log, root / "daily")
    backfill_config = demo_config(log, root / "backfill")
    daily = [run_evaluate(spark, daily_config, day) for day in DAYS]
    # Run twice: the tables compared are the rerun's, so they also show that a rerun replaces
    # the partitions it wrote (no row left twice, none lost).
    run_backfill(spark, backfill_config, DAYS)
    backfill = run_backfill(spark, backfill_config, DAYS)
    return BothWays(root / "daily", root / "backfill", daily, backfill)


def table_rows(spark: SparkSession, out: Path, table: str) -> pd.DataFrame:
    """Every row of ``table`` but its run_id, in a canonical order."""
    frame = cast(pd.DataFrame, read_path_table(spark, out, table).drop(RUN_ID).toPandas())
    frame = frame[sorted(frame.columns)]
    keys = [
        name
        for name in frame.columns
        if frame[name].dtype == object or "int" in str(frame[name].dtype)
    ]
    ordered = frame.astype({name: str for name in keys}).sort_values(
        keys + [name for name in frame.columns if name not in keys]
    )
    return frame.loc[ordered.index].reset_index(drop=True)


def test_the_backfill_takes_one_scan_for_this_config(tmp_path: Path) -> None:
    config = demo_config(tmp_path / "log", tmp_path / "out")
    assert one_scan_backfill(config)
    # A slice search is pruned per run date: the range then runs day by day.
    searching = config.model_copy(
        update={"slice_search": SliceSearchConfig(columns=("country",), max_level=1)}
    )
    assert not one_scan_backfill(searching)


@pytest.mark.parametrize("table", TABLES)
def test_every_table_equals_the_day_by_day_runs(
    spark: SparkSession, both_ways: BothWays, table: str
) -> None:
    daily = table_rows(spark, both_ways.daily_out, table)
    backfill = table_rows(spark, both_ways.backfill_out, table)
    assert len(daily) > 0 or table in (INVALID_ROWS_TABLE, ALERTS_TABLE)
    assert sorted(set(pd.to_datetime(daily["run_date"]).dt.date)) == sorted(
        set(pd.to_datetime(backfill["run_date"]).dt.date)
    )
    pd.testing.assert_frame_equal(daily, backfill, check_exact=False, rtol=1e-12, atol=1e-12)


def test_the_outcomes_match_day_by_day(both_ways: BothWays) -> None:
    assert [day.run_date for day in both_ways.backfill.days] == DAYS
    assert both_ways.backfill.missing == ()
    for daily, backfilled in zip(both_ways.daily, both_ways.backfill.days, strict=True):
        assert backfilled.n_rows == daily.n_rows
        assert backfilled.invalid_counts == daily.invalid_counts
        assert backfilled.monitoring.n_alerts == daily.monitoring.n_alerts
        assert backfilled.monitoring.failed == daily.monitoring.failed
        assert backfilled.monitoring.baseline == daily.monitoring.baseline
    assert both_ways.backfill.days[-1].summary == both_ways.daily[-1].summary
    assert both_ways.backfill.days[-1].recalibration == both_ways.daily[-1].recalibration
    # The demo's degradation is meant to fire alerts: the comparison is not of empty tables.
    assert sum(day.monitoring.n_alerts for day in both_ways.daily) > 0


def small_log(spark: SparkSession, root: Path) -> Path:
    """Two days of the small job log: NEXT_DATE's version a has 6 null scores of 20."""
    log = root / "log"
    write_log(
        spark,
        log,
        [
            *log_rows(10, day=RUN_DATE),
            *[(100 + row[0], *row[1:]) for row in log_rows(10, day=NEXT_DATE, null_scores=6)],
        ],
    )
    return log


def one_day_config(log: Path, out: Path, **options: Any) -> Config:
    """The small job's config on ``log`` with a one-day window, writing to ``out``."""
    return job_config(
        {"path": str(log), "window": {"column": "event_date", "lookback_days": 1}},
        {"path": str(out)},
        **options,
    )


def test_a_date_without_rows_is_reported_and_left_alone(
    spark: SparkSession, tmp_path: Path
) -> None:
    log, out = small_log(spark, tmp_path), tmp_path / "out"
    config = one_day_config(log, out, max_invalid_fraction=0.5)
    empty_day = RUN_DATE - dt.timedelta(days=1)
    outcome = run_backfill(spark, config, [empty_day, RUN_DATE, NEXT_DATE])

    assert outcome.missing == (empty_day,)
    assert [(day.run_date, day.n_rows) for day in outcome.days] == [
        (RUN_DATE, 20),
        (NEXT_DATE, 20),
    ]
    assert outcome.days[1].invalid_counts == {"null_score": 6}
    assert outcome.days[0].invalid_counts == {}
    for table in (METRICS_TABLE, STATS_TABLE, WINDOWS_TABLE):
        dates = {row[0] for row in read_path_table(spark, out, table).select("run_date").collect()}
        assert dates == {RUN_DATE, NEXT_DATE}, table
    invalid = read_path_table(spark, out, INVALID_ROWS_TABLE)
    assert {row[0]: row[1] for row in invalid.groupBy("run_date").count().collect()} == {
        NEXT_DATE: 6
    }
    assert not (out / METRICS_TABLE / f"run_date={empty_day}").exists()


def test_the_statistics_are_handed_over_before_the_outputs_are_finished(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The backfill writes the statistics while the driver finishes: evaluate_days must give
    # them, whole and with each day's rows, before the first output is finished.
    log = small_log(spark, tmp_path)
    config = one_day_config(log, tmp_path / "out", max_invalid_fraction=0.5)
    module = sys.modules["spark_calib.evaluate"]
    events: list[str] = []
    finished = module._finished

    def finishing(*args: Any) -> Any:
        events.append("finishing")
        return finished(*args)

    monkeypatch.setattr(module, "_finished", finishing)
    handed: dict[str, Any] = {}

    def on_statistics(stats: DataFrame, n_rows: Mapping[dt.date | None, int]) -> None:
        events.append("statistics")
        handed["rows"] = sorted(map(tuple, stats.collect()), key=repr)
        handed["n_rows"] = dict(n_rows)

    frame = spark.read.parquet(str(log))
    evaluated = evaluate_days(frame, config, "event_date", on_statistics)
    try:
        assert events == ["statistics", "finishing"]
        assert handed["n_rows"] == {RUN_DATE: 20, NEXT_DATE: 20}
        assert handed["n_rows"] == dict(evaluated.n_rows)
        rows = sorted(map(tuple, evaluated.result.stats.collect()), key=repr)
        assert handed["rows"] == rows
        assert {row[0] for row in rows} == {RUN_DATE, NEXT_DATE}
    finally:
        evaluated.unpersist()


@pytest.mark.parametrize("interrupt", [False, True], ids=["error", "interrupt"])
def test_a_failed_finishing_waits_for_the_statistics_write_unless_interrupted(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, interrupt: bool
) -> None:
    # An error in the finishing lets the statistics' write (already started) end before it
    # is raised; an interrupt is raised at once, the write still running.
    log = small_log(spark, tmp_path)
    config = one_day_config(log, tmp_path / "out", max_invalid_fraction=0.5)
    release, written = threading.Event(), threading.Event()

    def blocked_write(*args: Any, **kwargs: Any) -> str:
        release.wait(timeout=60)
        # Long enough that a run not waiting for the write would raise before it ends.
        time.sleep(0.5)
        written.set()
        return "statistics"

    def failing_finish(*args: Any) -> Any:
        if interrupt:
            raise KeyboardInterrupt
        release.set()
        raise RuntimeError("finishing failed")

    monkeypatch.setattr(backfill_module, "write_partitions", blocked_write)
    monkeypatch.setattr(sys.modules["spark_calib.evaluate"], "_finished", failing_finish)
    expected: type[BaseException] = KeyboardInterrupt if interrupt else RuntimeError
    try:
        with pytest.raises(expected):
            run_backfill(spark, config, [RUN_DATE, NEXT_DATE])
        assert written.is_set() is not interrupt
    finally:
        release.set()
        written.wait(timeout=60)


def test_a_range_without_rows_stops_with_missing_input(spark: SparkSession, tmp_path: Path) -> None:
    log = small_log(spark, tmp_path)
    config = one_day_config(log, tmp_path / "out")
    before = RUN_DATE - dt.timedelta(days=3)
    with pytest.raises(MissingInputError, match="has no rows for any run date"):
        run_backfill(spark, config, [before, before + dt.timedelta(days=1)])
    assert not (tmp_path / "out").exists()


def test_a_date_above_the_invalid_fraction_stops_before_writing(
    spark: SparkSession, tmp_path: Path
) -> None:
    log = small_log(spark, tmp_path)
    config = one_day_config(log, tmp_path / "out", max_invalid_fraction=0.25)
    # NEXT_DATE has 6 invalid rows of 20 (0.3); RUN_DATE none; the range as a whole 0.15.
    with pytest.raises(InvalidRowsError, match=f"^run_date {NEXT_DATE}: 6 of 20 input rows"):
        run_backfill(spark, config, [RUN_DATE, NEXT_DATE])
    assert not (tmp_path / "out").exists()


def test_a_baseline_version_is_monitored_date_by_date_as_the_daily_runs(
    spark: SparkSession, tmp_path: Path
) -> None:
    # drift.baseline_model_version compares a date's versions with each other, which the
    # all-dates-at-once monitoring cannot key: the backfill monitors the dates one by one.
    log = small_log(spark, tmp_path)
    outputs = {}
    for way in ("daily", "backfill"):
        outputs[way] = tmp_path / way
        config = one_day_config(
            log,
            outputs[way],
            max_invalid_fraction=0.5,
            drift={"baseline_model_version": "a", "min_n": 0, "min_delta": 0.0, "z": 1e-9},
            # Version a loses its 6 lowest scores on NEXT_DATE, so its metrics move against
            # the day before and against version b; every rule fires somewhere.
            alerts=[
                {"name": "up_vs_a", "metric": "ece", "max_increase": 0.0, "compare_to": "baseline"},
                {
                    "name": "down_vs_a",
                    "metric": "ece",
                    "max_decrease": 0.0,
                    "compare_to": "baseline",
                },
                {"name": "brier_up", "metric": "brier", "max_increase": 0.0, "min_n": 0},
                {"name": "brier_down", "metric": "brier", "max_decrease": 0.0, "min_n": 0},
            ],
        )
        assert not batch_monitoring(config)
        if way == "daily":
            for day in (RUN_DATE, NEXT_DATE):
                run_evaluate(spark, config, day)
        else:
            run_backfill(spark, config, [RUN_DATE, NEXT_DATE])
    for table in (DRIFT_TABLE, ALERTS_TABLE, METRICS_TABLE):
        daily = table_rows(spark, outputs["daily"], table)
        backfill = table_rows(spark, outputs["backfill"], table)
        assert len(daily) > 0, table
        pd.testing.assert_frame_equal(daily, backfill, check_exact=False, rtol=1e-12, atol=1e-12)
