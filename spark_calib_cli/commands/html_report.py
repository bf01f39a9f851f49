"""``--html FILE``: read the small tables of one run date and granularity and write the
self-contained HTML page of ``spark_calib_cli.html``.

Only aggregates reach the driver: the windows row, the invalid-row counts by reason, the
overall metrics, the top slices and the alerted ones, the first drift rows and alerts, and the
rows of the figures (the same as the PNG report's). The page's size therefore does not grow
with the number of slices: the rest is counted and the page says how many it left out.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import reduce
from pathlib import Path
from typing import Any, cast

import pandas as pd
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from spark_calib.config import Config, OutputConfig
from spark_calib.constants import OVERALL_SLICE_NAME
from spark_calib.monitoring import FAIL
from spark_calib.windows import window_of
from spark_calib_cli.commands.common import REGRESSION_TASK, check_job_config, run_window
from spark_calib_cli.commands.html_figures import (
    recalibration_images,
    slice_search_images,
    trend_images,
    version_figures,
)
from spark_calib_cli.commands.search import SLICE_SEARCH_TABLE
from spark_calib_cli.console.worst_slices import (
    KEY_COLUMNS,
    NOISE_AWARE_RANKING,
    RANK,
    REGRESSION_RANKING,
    regression_overview,
    slice_overview,
    worst_slices,
)
from spark_calib_cli.errors import MissingInputError
from spark_calib_cli.html import (
    Alert,
    FigureImage,
    PageData,
    RunInfo,
    VersionReport,
    render_page,
)
from spark_calib_cli.io.local_frames import in_memory
from spark_calib_cli.io.partitions import (
    GRANULARITY,
    RUN_DATE,
    read_optional_partition,
    read_partition,
    read_table,
)
from spark_calib_cli.io.tables import (
    ALERTS_TABLE,
    CONFIG_HASH,
    DRIFT_TABLE,
    INVALID_ROWS_TABLE,
    METRICS_TABLE,
    REASON,
    RELIABILITY_TABLE,
    RUN_ID,
    WINDOW_END,
    WINDOW_START,
    WINDOWS_TABLE,
)
from spark_calib_cli.report.rendered import start_drawing_processes
from spark_calib_cli.report.trend_rows import DEFAULT_TREND_WINDOWS

# Written by the recalibration job when it ran; the page's section is keyed on its presence.
RECALIBRATION_TABLE = "calibration_recalibration"
DEFAULT_HTML_SLICES = 25
MAX_ALERTS = 50
MAX_DRIFT_ROWS = 25
MAX_RECALIBRATION_ROWS = 200
MAX_SEARCH_SLICES = 10
# The page's reads that run beside the metrics' (read_page).
PAGE_READ_THREADS = 6
SEARCH_SHOWN_COLUMNS = (
    "model_version",
    "rank",
    "slice_name",
    "slice_value",
    "n",
    "mean_prediction",
    "mean_label",
    "ecce_sigma",
    "p_adjusted",
    "significant",
)
# Columns of the metrics table shown next to the value when a run wrote them.
OVERALL_OPTIONAL_COLUMNS = ("error_bound", "se", "ci_lower", "ci_upper", "n_eff")
DRIFT_SHOWN_COLUMNS = (
    "class",
    "metric",
    "value",
    "n",
    "previous_value",
    "previous_delta",
    "previous_z",
    "baseline_value",
    "baseline_delta",
    "baseline_z",
)
RUN_COLUMNS = (RUN_ID, CONFIG_HASH, RUN_DATE, GRANULARITY, WINDOW_START, WINDOW_END)
# Drawn as the section's figure rather than listed in its table.
RECALIBRATION_FIGURE_COLUMNS = ("reliability_before", "reliability_after")


def write_html_report(
    spark: SparkSession,
    config: Config,
    run_date: dt.date,
    path: Path,
    *,
    granularity: str | None = None,
    top_slices: int = DEFAULT_HTML_SLICES,
    min_slice_rows: int | None = None,
    trend_windows: int = DEFAULT_TREND_WINDOWS,
    progress: Callable[[str], None] | None = None,
) -> float:
    """Write the HTML page of the window of ``granularity`` (default: the daily run's) ending
    on ``run_date`` to ``path``; return the seconds it took (reading, drawing, writing).

    Raises ``MissingInputError`` when the window has no metric rows."""
    start = time.monotonic()
    _, output = check_job_config(config)
    start_drawing_processes()
    daily_granularity = run_window(config, run_date).granularity
    if granularity is not None and granularity != daily_granularity:
        run_date = window_of(granularity, run_date).end
    granularity = granularity or daily_granularity
    if progress is not None:
        progress(f"writing the HTML report {path}")
    page = read_page(
        spark,
        config,
        output,
        run_date,
        granularity,
        daily=granularity == daily_granularity,
        top_slices=top_slices,
        min_slice_rows=config.min_slice_rows if min_slice_rows is None else min_slice_rows,
        trend_windows=trend_windows,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_page(page), encoding="utf-8")
    return time.monotonic() - start


def read_page(
    spark: SparkSession,
    config: Config,
    output: OutputConfig,
    run_date: dt.date,
    granularity: str,
    *,
    daily: bool,
    top_slices: int,
    min_slice_rows: int,
    trend_windows: int,
) -> PageData:
    """The page data of one window, read from its tables.

    The reads that do not need the window's metrics (alerts, drift, recalibration, the run,
    the trends, the slice search) run in threads while this one reads the metrics, the slice
    overview and their figures: each read is a few small Spark jobs, or a wait for drawing
    processes, so their threads mostly wait."""
    regression = config.task == REGRESSION_TASK
    positive_class = "positive_class" in config.features()
    with ThreadPoolExecutor(max_workers=PAGE_READ_THREADS) as threads:
        alerts_read = threads.submit(_alerts, spark, output, run_date, granularity)
        drift_read = threads.submit(_drift, spark, output, run_date, granularity)
        recalibration_read = threads.submit(
            _recalibration_read, spark, config, output, run_date, granularity
        )
        run_read = threads.submit(_run_info, spark, config, output, run_date, granularity)
        trends_read = threads.submit(
            trend_images, spark, config, run_date, granularity, trend_windows
        )
        search_read = threads.submit(_search_read, spark, output, run_date, daily=daily)
        # The page asks the window's metrics and slice overview a dozen questions: collected
        # once (derived rows: a few per slice key and metric), each question is a small local
        # job.
        metrics = in_memory(
            spark,
            read_partition(spark, output, METRICS_TABLE, run_date, granularity=granularity).where(
                F.col("class").isNull()
            ),
        ).frame
        overview = in_memory(
            spark, _overview(spark, output, metrics, run_date, granularity, regression)
        ).frame
        alerts, n_alerts = alerts_read.result()
        # The console's ranking: by the ECE beyond its noise (regression: miscalibration area).
        ranking = REGRESSION_RANKING if regression else NOISE_AWARE_RANKING
        shown = _with_interval(
            _shown_slices(overview, alerts, top_slices, min_slice_rows, ranking),
            metrics,
            REGRESSION_RANKING[0] if regression else "ece",
        )
        counts = _slice_counts(overview, min_slice_rows, top_slices)
        figures = version_figures(
            spark,
            output,
            metrics,
            run_date,
            granularity,
            daily=daily,
            regression=regression,
            positive_class=positive_class,
            min_slice_rows=min_slice_rows,
        )
        overall = _overall_metrics(metrics)
        drift, drift_counts = drift_read.result()
        recalibration, recalibration_figures = recalibration_read.result()
        searched, search_figures = search_read.result()
        run = run_read.result()
        trends = trends_read.result()
    versions = tuple(
        VersionReport(
            model_version=version,
            overall=_of_version(overall, version).drop(columns=["model_version"]),
            slices=_of_version(shown, version),
            slices_not_shown=counts.get(version, (0, 0))[0],
            slices_below_min_rows=counts.get(version, (0, 0))[1],
            figures=tuple(figures.get(version, [])),
            drift=_of_version(drift, version),
            drift_not_shown=max(drift_counts.get(version, 0) - MAX_DRIFT_ROWS, 0),
            recalibration=None
            if recalibration is None
            else _of_version(recalibration, version).drop(columns=["model_version"]),
            recalibration_figures=tuple(recalibration_figures.get(version, [])),
            slice_search=None
            if searched is None
            else _of_version(searched, version).drop(columns=["model_version"]),
            slice_search_figures=tuple(search_figures.get(version, [])),
        )
        for version in _versions(shown)
    )
    return PageData(
        run=run,
        alerts=alerts,
        n_alerts=n_alerts,
        versions=versions,
        trends=trends,
        min_slice_rows=min_slice_rows,
        positive_class=positive_class,
        trend_windows=trend_windows,
    )


def _recalibration_read(
    spark: SparkSession,
    config: Config,
    output: OutputConfig,
    run_date: dt.date,
    granularity: str,
) -> tuple[pd.DataFrame | None, dict[str | None, list[FigureImage]]]:
    """The window's recalibration rows (None without them) and their figures (none for
    regression)."""
    recalibration = _recalibration(spark, output, run_date, granularity)
    if recalibration is None or config.task == REGRESSION_TASK:
        return recalibration, {}
    return recalibration, recalibration_images(spark, config, output, run_date, granularity)


def _search_read(
    spark: SparkSession, output: OutputConfig, run_date: dt.date, *, daily: bool
) -> tuple[pd.DataFrame | None, dict[str | None, list[FigureImage]]]:
    """The slice search's slices of a daily run (None without them) and their figures."""
    searched = _slice_search(spark, output, run_date) if daily else None
    if searched is None:
        return None, {}
    return searched, slice_search_images(spark, output, run_date, searched)


def _partition(
    spark: SparkSession, output: OutputConfig, table: str, run_date: dt.date, granularity: str
) -> DataFrame | None:
    return read_optional_partition(spark, output, table, run_date, granularity=granularity)


def _pandas(frame: DataFrame) -> pd.DataFrame:
    return cast(pd.DataFrame, frame.toPandas())


def _run_info(
    spark: SparkSession, config: Config, output: OutputConfig, run_date: dt.date, granularity: str
) -> RunInfo:
    """The windows row of the window and the invalid rows of its run dates, by reason."""
    windows = _partition(spark, output, WINDOWS_TABLE, run_date, granularity)
    row = None if windows is None else windows.orderBy(F.col(RUN_ID)).first()
    start = row[WINDOW_START] if row is not None else run_date
    return RunInfo(
        run_date=run_date,
        granularity=granularity,
        window_start=row[WINDOW_START] if row is not None else None,
        window_end=row[WINDOW_END] if row is not None else None,
        run_id=row[RUN_ID] if row is not None else None,
        config_hash=row[CONFIG_HASH] if row is not None else None,
        input_rows=row["n_rows"] if row is not None else None,
        invalid_by_reason=_invalid_counts(spark, output, start, run_date),
        task=config.task,
        days_missing=tuple(row["days_missing"] or ()) if row is not None else (),
    )


def _invalid_counts(
    spark: SparkSession, output: OutputConfig, first: dt.date, last: dt.date
) -> dict[str, int]:
    """Invalid rows by reason over the run dates ``first``..``last`` (the table is
    partitioned by run date only, so a window sums its days)."""
    try:
        rows = read_table(spark, output, INVALID_ROWS_TABLE)
    except MissingInputError:
        return {}
    counts = (
        rows.where(F.col(RUN_DATE).between(F.lit(first), F.lit(last)))
        .groupBy(REASON)
        .count()
        .collect()
    )
    return {str(row[REASON]): int(row["count"]) for row in counts}


def _alerts(
    spark: SparkSession, output: OutputConfig, run_date: dt.date, granularity: str
) -> tuple[tuple[Alert, ...], int]:
    """The first ``MAX_ALERTS`` alerts of the window, failing first, and how many fired."""
    frame = _partition(spark, output, ALERTS_TABLE, run_date, granularity)
    if frame is None:
        return (), 0
    ordered = frame.orderBy(
        F.col(FAIL).desc(),
        F.col("rule_index"),
        F.col("model_version").asc_nulls_first(),
        F.col("slice_name"),
        F.col("slice_value"),
        F.col("class").asc_nulls_first(),
    )
    rows = ordered.limit(MAX_ALERTS).collect()
    count = frame.count() if len(rows) == MAX_ALERTS else len(rows)
    alerts = tuple(
        Alert(
            rule=row["rule"],
            fail=bool(row[FAIL]),
            metric=row["metric"],
            model_version=row["model_version"],
            slice_name=row["slice_name"],
            slice_value=row["slice_value"],
            class_name=row["class"],
            message=row["message"],
        )
        for row in rows
    )
    return alerts, count


def _overview(
    spark: SparkSession,
    output: OutputConfig,
    metrics: DataFrame,
    run_date: dt.date,
    granularity: str,
    regression: bool,
) -> DataFrame:
    """One row per model version and slice with the headline metrics (the console's)."""
    if regression:
        return regression_overview(metrics)
    reliability = read_partition(
        spark, output, RELIABILITY_TABLE, run_date, granularity=granularity
    ).where(F.col("class").isNull())
    return slice_overview(metrics, reliability)


def _shown_slices(
    overview: DataFrame,
    alerts: Sequence[Alert],
    top: int,
    min_rows: int,
    ranking: Sequence[str],
) -> pd.DataFrame:
    """The overall slice, the ``top`` worst slices (the console's ranking) and the slices an
    alert fired on (``rank`` null when not among the worst), overall and worst first."""
    chosen = worst_slices(overview, top=top, min_rows=min_rows, by=ranking)
    alerted = [alert for alert in alerts if alert.class_name is None]
    if alerted:
        on_alerted = reduce(lambda left, right: left | right, [_is_key(alert) for alert in alerted])
        # The chosen keys are renamed: both frames come from ``overview``, and a condition
        # between a column and itself is what Spark warns about as trivially true.
        chosen_keys = chosen.select(*[F.col(key).alias(f"_chosen_{key}") for key in KEY_COLUMNS])
        extra = overview.where(on_alerted).join(
            chosen_keys,
            on=[F.col(key).eqNullSafe(F.col(f"_chosen_{key}")) for key in KEY_COLUMNS],
            how="left_anti",
        )
        chosen = chosen.unionByName(extra.withColumn(RANK, F.lit(None).cast("int")))
    frame = _pandas(chosen)
    frame["_order"] = frame[RANK].fillna(top + 1)
    return frame.sort_values(["_order", "slice_name", "slice_value"]).drop(columns=["_order"])


def _with_interval(shown: pd.DataFrame, metrics: DataFrame, metric: str) -> pd.DataFrame:
    """``shown`` plus ``<metric>_ci_lower`` and ``<metric>_ci_upper`` (those it lacks) when the
    metrics table has intervals (the uncertainty columns), so a reader sees which of the
    worst slices are worse beyond their noise."""
    if not {"ci_lower", "ci_upper"} <= set(metrics.columns):
        return shown
    bounds = _pandas(
        metrics.where(F.col("metric") == F.lit(metric)).select(
            *KEY_COLUMNS,
            F.col("ci_lower").alias(f"{metric}_ci_lower"),
            F.col("ci_upper").alias(f"{metric}_ci_upper"),
        )
    )
    # The overview may carry the lower bound already (the noise-aware ranking uses it).
    bounds = bounds.drop(
        columns=[
            name for name in bounds.columns if name in shown.columns and name not in KEY_COLUMNS
        ]
    )
    # pandas matches missing keys with each other: a null model_version joins as a key.
    return shown.merge(bounds, on=list(KEY_COLUMNS), how="left")


def _is_key(alert: Alert) -> Column:
    version = F.col("model_version").eqNullSafe(F.lit(alert.model_version))
    return (
        version
        & (F.col("slice_name") == F.lit(alert.slice_name))
        & (F.col("slice_value") == F.lit(alert.slice_value))
    )


def _slice_counts(
    overview: DataFrame, min_rows: int, top: int
) -> dict[str | None, tuple[int, int]]:
    """Per model version: the ranked slices left out of the top ``top``, and the slices
    with fewer than ``min_rows`` rows."""
    not_overall = F.col("slice_name") != F.lit(OVERALL_SLICE_NAME)
    ranked = not_overall & (F.col("n") >= F.lit(min_rows))
    rows = (
        overview.groupBy("model_version")
        .agg(
            F.sum(F.when(ranked, 1).otherwise(0)).alias("ranked"),
            F.sum(F.when(not_overall & ~ranked, 1).otherwise(0)).alias("below"),
        )
        .collect()
    )
    return {
        row["model_version"]: (max(int(row["ranked"]) - top, 0), int(row["below"])) for row in rows
    }


def _overall_metrics(metrics: DataFrame) -> pd.DataFrame:
    """The overall slice's metrics of every version (class null), with the optional columns
    the table has (the intervals, when the run computed them)."""
    optional = [name for name in OVERALL_OPTIONAL_COLUMNS if name in metrics.columns]
    overall = metrics.where(
        (F.col("slice_name") == F.lit(OVERALL_SLICE_NAME)) & F.col("class").isNull()
    )
    return _pandas(
        overall.select("model_version", "metric", "value", "n", *optional).orderBy(
            "model_version", "metric"
        )
    )


def _drift(
    spark: SparkSession, output: OutputConfig, run_date: dt.date, granularity: str
) -> tuple[pd.DataFrame, dict[str | None, int]]:
    """The ``MAX_DRIFT_ROWS`` largest significant changes of each version (against the
    previous window or the baseline) and how many significant changes each has."""
    frame = _partition(spark, output, DRIFT_TABLE, run_date, granularity)
    columns = ["model_version", "slice_name", "slice_value", *DRIFT_SHOWN_COLUMNS]
    if frame is None:
        return pd.DataFrame(columns=columns), {}
    significant = frame.where(
        F.coalesce(F.col("previous_significant"), F.lit(False))
        | F.coalesce(F.col("baseline_significant"), F.lit(False))
    )
    size = F.greatest(
        F.coalesce(F.abs(F.col("baseline_delta")), F.lit(0.0)),
        F.coalesce(F.abs(F.col("previous_delta")), F.lit(0.0)),
    )
    largest_first = Window.partitionBy("model_version").orderBy(
        size.desc(), *[F.col(key) for key in ("slice_name", "slice_value", "metric")]
    )
    ranked = significant.withColumn("_rank", F.row_number().over(largest_first))
    shown = _pandas(
        ranked.where(F.col("_rank") <= MAX_DRIFT_ROWS)
        .orderBy("model_version", "_rank")
        .select(*columns)
    )
    counts = {
        row["model_version"]: int(row["count"])
        for row in significant.groupBy("model_version").count().collect()
    }
    return shown, counts


def _recalibration(
    spark: SparkSession, output: OutputConfig, run_date: dt.date, granularity: str
) -> pd.DataFrame | None:
    """The window's rows of ``calibration_recalibration`` (at most
    ``MAX_RECALIBRATION_ROWS``), without the run columns; None when the table does not
    exist."""
    frame = read_optional_partition(spark, output, RECALIBRATION_TABLE, run_date)
    if frame is None:
        return None
    if GRANULARITY in frame.columns:
        frame = frame.where(F.col(GRANULARITY) == F.lit(granularity))
    if "model_version" not in frame.columns:
        frame = frame.withColumn("model_version", F.lit(None).cast("string"))
    kept = [
        name
        for name in frame.columns
        if name not in RUN_COLUMNS and name not in RECALIBRATION_FIGURE_COLUMNS
    ]
    return _pandas(frame.select(*kept).limit(MAX_RECALIBRATION_ROWS))


def _slice_search(
    spark: SparkSession, output: OutputConfig, run_date: dt.date
) -> pd.DataFrame | None:
    """The run date's top ``MAX_SEARCH_SLICES`` slices per model version of
    ``calibration_slice_search`` (``SEARCH_SHOWN_COLUMNS``); None when the table does not
    exist."""
    frame = read_optional_partition(spark, output, SLICE_SEARCH_TABLE, run_date)
    if frame is None:
        return None
    kept = frame.where(F.col("rank") <= MAX_SEARCH_SLICES).select(*SEARCH_SHOWN_COLUMNS)
    return _pandas(kept.orderBy("model_version", "rank"))


def _of_version(frame: pd.DataFrame, version: str | None) -> pd.DataFrame:
    if frame.empty:
        return frame
    same = frame["model_version"].isna() if version is None else frame["model_version"] == version
    return frame[same]


def _versions(frame: pd.DataFrame) -> list[str | None]:
    versions = {None if _missing(v) else str(v) for v in frame["model_version"]}
    return sorted(versions, key=lambda v: (v is not None, v or ""))


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def _number(value: Any) -> str:
    return "n/a" if _missing(value) else f"{float(value):.4f}"
