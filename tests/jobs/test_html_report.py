"""The HTML report job on small path-mode tables: a daily run and a week rollup give valid
HTML5 pages whose alerts and invalid rows are the tables'; the recalibration section appears
exactly when a ``calibration_recalibration`` table exists."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import html5lib
import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from spark_calib_cli.commands.evaluate import run_evaluate
from spark_calib_cli.commands.html_report import (
    RECALIBRATION_TABLE,
    _shown_slices,
    write_html_report,
)
from spark_calib_cli.commands.rollup import run_rollup
from spark_calib_cli.console.worst_slices import RANK
from spark_calib_cli.html import Alert
from tests.support.jobs import RUN_DATE, job_config, log_rows, read_path_table, write_log

ALERT_EVERYWHERE = {"name": "any_miscalibration", "metric": "ece", "max": 0.0, "min_n": 0}


def parse(path: Path) -> None:
    html5lib.HTMLParser(strict=True).parse(path.read_text("utf-8"))


def test_daily_page_shows_the_tables_alerts_and_invalid_rows(
    spark: SparkSession, tmp_path: Path
) -> None:
    log, out, page = tmp_path / "log", tmp_path / "out", tmp_path / "page.html"
    write_log(spark, log, log_rows(40, null_scores=2))
    config = job_config(
        {"path": str(log)},
        {"path": str(out)},
        max_invalid_fraction=0.1,
        alerts=[ALERT_EVERYWHERE],
    )
    run_evaluate(spark, config, RUN_DATE)

    seconds = write_html_report(spark, config, RUN_DATE, page, min_slice_rows=1)

    parse(page)
    document = page.read_text("utf-8")
    alerts = read_path_table(spark, out, "calibration_alerts").where(
        F.col("run_date") == F.lit(RUN_DATE)
    )
    n_alerts = alerts.count()
    assert n_alerts > 0 and f"Alerts: {n_alerts:,} fired" in document
    assert document.count('class="alert warn"') == n_alerts
    (reason,) = (
        read_path_table(spark, out, "calibration_invalid_rows").groupBy("reason").count().collect()
    )
    assert f"{reason['reason']} {reason['count']}" in document
    assert "Model a" in document and "Model b" in document
    assert "Recalibration" not in document
    assert seconds > 0


def test_recalibration_section_when_its_table_exists(spark: SparkSession, tmp_path: Path) -> None:
    log, out, page = tmp_path / "log", tmp_path / "out", tmp_path / "page.html"
    write_log(spark, log, log_rows(40))
    config = job_config({"path": str(log)}, {"path": str(out)})
    run_evaluate(spark, config, RUN_DATE)
    rows = [("a", "isotonic", 0.11, 0.02, RUN_DATE), ("b", "platt", 0.07, 0.03, RUN_DATE)]
    ddl = "model_version string, method string, ece_before double, ece_after double, run_date date"
    spark.createDataFrame(rows, ddl).write.partitionBy("run_date").parquet(
        str(out / RECALIBRATION_TABLE)
    )

    write_html_report(spark, config, RUN_DATE, page, min_slice_rows=1)

    parse(page)
    document = page.read_text("utf-8")
    assert document.count("<h3>Recalibration</h3>") == 2
    assert "isotonic" in document and "platt" in document


def test_week_page_of_a_rollup(spark: SparkSession, tmp_path: Path) -> None:
    log, out, page = tmp_path / "log", tmp_path / "out", tmp_path / "week.html"
    days = (RUN_DATE - dt.timedelta(days=1), RUN_DATE)
    write_log(spark, log, [row for day in days for row in log_rows(30, day=day)])
    window = {"column": "event_date", "lookback_days": 1}
    config = job_config({"path": str(log), "window": window}, {"path": str(out)})
    for day in days:
        run_evaluate(spark, config, day)
    outcome = run_rollup(spark, config, RUN_DATE, "week")

    write_html_report(spark, config, RUN_DATE, page, granularity="week", min_slice_rows=1)

    parse(page)
    document = page.read_text("utf-8")
    assert f"Calibration report {outcome.window.end} (week)" in document
    assert f"{outcome.window.start} … {outcome.window.end}" in document
    missing = ", ".join(str(day) for day in outcome.missing)
    assert missing in document


def test_shown_slices_add_the_alerted_slices_outside_the_worst_once(spark: SparkSession) -> None:
    overview = spark.createDataFrame(
        [
            ("a", "overall", "all", 900, 0.01),
            ("a", "country", "BR", 300, 0.09),
            ("a", "country", "MX", 300, 0.05),
            ("a", "country", "US", 300, 0.02),
            (None, "overall", "all", 10, 0.30),
        ],
        "model_version string, slice_name string, slice_value string, n long, ece double",
    )

    def alert(version: str | None, name: str, value: str) -> Alert:
        return Alert("rule", False, "ece", version, name, value, None, "message")

    shown = _shown_slices(
        overview,
        # BR is the worst already; US is not among the top 1; the null version's overall is.
        [alert("a", "country", "US"), alert("a", "country", "BR"), alert(None, "overall", "all")],
        top=1,
        min_rows=1,
        ranking=["ece"],
    )

    keys = list(zip(shown["model_version"], shown["slice_value"], shown[RANK], strict=True))
    ranks = {(version, value): rank for version, value, rank in keys}
    assert len(keys) == 4
    assert ranks[("a", "all")] == 0 and ranks[(None, "all")] == 0 and ranks[("a", "BR")] == 1
    assert pd.isna(ranks[("a", "US")])
