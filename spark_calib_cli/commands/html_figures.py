"""The figures of the HTML report, drawn by the PNG report's code and encoded as data URIs:
reliability diagrams, ROC and precision-recall curves, interval coverage, reliability before
and after recalibration, and trends, each with alt text that names what it shows."""

from __future__ import annotations

import datetime as dt
from typing import Any, cast

import pandas as pd
from pyspark.sql import DataFrame, SparkSession

from spark_calib.config import Config, OutputConfig
from spark_calib_cli.commands.search import SLICE_SEARCH_RELIABILITY_TABLE
from spark_calib_cli.console.worst_slices import RANK
from spark_calib_cli.html import FigureImage
from spark_calib_cli.html.figures import png_image
from spark_calib_cli.io.partitions import read_optional_partition
from spark_calib_cli.io.tables import CONFIG_HASH, RUN_DATE, RUN_ID
from spark_calib_cli.report.labels import slice_label
from spark_calib_cli.report.recalibration import (
    METHOD_ORDER,
    map_label,
    recalibration_figures,
    recalibration_panels,
)
from spark_calib_cli.report.recalibration_rows import recalibration_frame
from spark_calib_cli.report.regression import regression_calibration_figures
from spark_calib_cli.report.regression_rows import regression_frames
from spark_calib_cli.report.reliability import reliability_figures
from spark_calib_cli.report.reliability_rows import reliability_frames
from spark_calib_cli.report.rendered import rendered
from spark_calib_cli.report.roc import roc_figures
from spark_calib_cli.report.roc_rows import roc_frames
from spark_calib_cli.report.slice_search_figure import TOP_SLICES as TOP_SEARCH_SLICES
from spark_calib_cli.report.slice_search_figure import slice_search_figures
from spark_calib_cli.report.trend import trend_figures
from spark_calib_cli.report.trend_rows import trend_frames

# Panels of the reliability and coverage figures: overall and the worst slices, as --report.
FIGURE_SLICES = 5
RELIABILITY_CAPTION = "Reliability diagrams: overall and the worst slices by ECE"
RELIABILITY_ALT = (
    "reliability diagrams (observed rate against predicted probability per bin, with the "
    "histogram of the predictions) of"
)
ROC_CAPTION = "ROC and precision-recall curves of the overall slice"
COVERAGE_CAPTION = "Interval coverage: overall and the worst slices by miscalibration area"
COVERAGE_ALT = "interval coverage (observed against expected, per level) of"
SEARCH_CAPTION = "Slice search: the top segments' reliability against the version's overall one"
RECALIBRATION_CAPTION = (
    "Reliability of the evaluated rows before and after each recalibration map: overall and "
    "the worst slices by ECE before"
)


def version_figures(
    spark: SparkSession,
    output: OutputConfig,
    metrics: DataFrame,
    run_date: dt.date,
    granularity: str,
    *,
    daily: bool,
    regression: bool,
    positive_class: bool,
    min_slice_rows: int,
) -> dict[str | None, list[FigureImage]]:
    """The figures of each model version, as the PNG report draws them: reliability
    diagrams, ROC and PR curves (daily binary runs), interval coverage (daily regression)."""
    if regression:
        if not daily:
            # The interval calibration table is written by daily runs only.
            return {}
        return _regression_figures(spark, output, metrics, run_date, min_slice_rows)
    images: dict[str | None, list[FigureImage]] = {}
    bins, panels = reliability_frames(
        spark, output, metrics, run_date, FIGURE_SLICES, min_slice_rows, granularity
    )
    drawn = rendered(
        reliability_figures,
        bins,
        panels,
        run_date=run_date.isoformat(),
        positive_class=positive_class,
    )
    for version, png in drawn:
        alt = _panels_alt(panels, version, RELIABILITY_ALT, "ece")
        images.setdefault(version, []).append(_image(png, RELIABILITY_CAPTION, alt))
    curves = roc_frames(spark, output, metrics, run_date) if daily else None
    if curves is not None:
        points, summary = curves
        for version, png in rendered(roc_figures, points, summary, run_date=run_date.isoformat()):
            alt = _roc_alt(summary, version)
            images.setdefault(version, []).append(_image(png, ROC_CAPTION, alt))
    return images


def recalibration_images(
    spark: SparkSession, config: Config, output: OutputConfig, run_date: dt.date, granularity: str
) -> dict[str | None, list[FigureImage]]:
    """The before/after recalibration figure of each model version, as the PNG report draws
    it (none when the window has no recalibration rows)."""
    rows = recalibration_frame(spark, output, run_date, granularity)
    if rows is None:
        return {}
    drawn = rendered(
        recalibration_figures,
        rows,
        run_date=run_date.isoformat(),
        n_bins=config.binning.n_bins,
        positive_class=config.task == "binary",
    )
    return {
        version: [_image(png, RECALIBRATION_CAPTION, _recalibration_alt(rows, version))]
        for version, png in drawn
    }


def slice_search_images(
    spark: SparkSession, output: OutputConfig, run_date: dt.date, ranked: pd.DataFrame
) -> dict[str | None, list[FigureImage]]:
    """Per model version, the slice search's figure (its top slices' reliability against the
    version's overall one) from the run date's ``calibration_slice_search_reliability`` rows
    and ``ranked`` (its rows of ``calibration_slice_search``); none without that table."""
    frame = read_optional_partition(spark, output, SLICE_SEARCH_RELIABILITY_TABLE, run_date)
    if frame is None:
        return {}
    bins = cast(pd.DataFrame, frame.drop(RUN_ID, CONFIG_HASH, RUN_DATE).toPandas())
    if bins.empty:
        return {}
    return {
        version: [_image(png, SEARCH_CAPTION, _search_alt(ranked, version))]
        for version, png in rendered(slice_search_figures, ranked, bins)
    }


def _search_alt(ranked: pd.DataFrame, version: str | None) -> str:
    """``Model v1: reliability of the slice search's top segments against overall:
    country=BR, device=tablet (ECCE 41.5σ); …``."""
    top = _of_version(ranked, version).sort_values("rank").head(TOP_SEARCH_SLICES)
    described = [
        f"{slice_label(r['slice_name'], r['slice_value'])} (ECCE {float(r['ecce_sigma']):.1f}σ)"
        for r in top.to_dict("records")
    ]
    return (
        f"Model {version or 'all'}: reliability (observed rate against mean prediction per bin) "
        "of the slice search's top segments against the version overall: "
        + ("; ".join(described) or "no segment")
    )


def _recalibration_alt(rows: pd.DataFrame, version: str | None) -> str:
    """``Model v2: reliability before and after recalibration of overall (ECE before 0.1078;
    temperature T = 2.212: ECE 0.0145; …); country=BR (…)``."""
    panels = _of_version(recalibration_panels(rows), version).sort_values(RANK)
    of_version = _of_version(rows, version)
    described = []
    for panel in panels.to_dict("records"):
        same = of_version[
            (of_version["slice_name"] == panel["slice_name"])
            & (of_version["slice_value"] == panel["slice_value"])
        ]
        by_method = {str(r["method"]): r for r in same.to_dict("records")}
        after = [
            f"{method} {map_label(row)}: ECE {_number(row['ece_after'])}"
            for method, row in sorted(by_method.items(), key=lambda item: _method_index(item[0]))
        ]
        described.append(
            f"{slice_label(panel['slice_name'], panel['slice_value'])} (ECE before "
            f"{_number(panel['ece_before'])}; " + "; ".join(after) + ")"
        )
    return (
        f"Model {version or 'all'}: reliability diagrams of the evaluated rows before and after "
        "recalibration of " + "; ".join(described)
    )


def _method_index(method: str) -> int:
    return METHOD_ORDER.index(method) if method in METHOD_ORDER else len(METHOD_ORDER)


def _regression_figures(
    spark: SparkSession,
    output: OutputConfig,
    metrics: DataFrame,
    run_date: dt.date,
    min_slice_rows: int,
) -> dict[str | None, list[FigureImage]]:
    frames = regression_frames(
        spark, output, metrics, run_date, top_slices=FIGURE_SLICES, min_slice_rows=min_slice_rows
    )
    if frames is None:
        return {}
    levels, panels = frames
    drawn = rendered(regression_calibration_figures, levels, panels, run_date=run_date.isoformat())
    return {
        version: [
            _image(
                png,
                COVERAGE_CAPTION,
                _panels_alt(panels, version, COVERAGE_ALT, "miscalibration_area"),
            )
        ]
        for version, png in drawn
    }


def _image(png: bytes, caption: str, alt: str) -> FigureImage:
    return png_image(png, caption=caption, alt=alt)


def _panels_alt(panels: pd.DataFrame, version: str | None, what: str, metric: str) -> str:
    """``Model v1: reliability diagrams … of overall (ECE 0.0123, n=…), country=BR (…)``."""
    rows = _of_version(panels, version).sort_values(RANK)
    described = [
        f"{slice_label(row['slice_name'], row['slice_value'])} "
        f"({metric} {_number(row.get(metric))}, n={int(row['n']):,})"
        for row in rows.to_dict("records")
    ]
    return f"Model {version or 'all'}: {what} " + "; ".join(described)


def _roc_alt(summary: pd.DataFrame, version: str | None) -> str:
    rows = _of_version(summary, version).to_dict("records")
    row = rows[0] if rows else {}
    roc = row.get("roc_auc") if not _missing(row.get("roc_auc")) else row.get("roc_auc_binned")
    pr = row.get("pr_auc") if not _missing(row.get("pr_auc")) else row.get("pr_auc_binned")
    return (
        f"Model {version or 'all'}: ROC curve (AUC {_number(roc)}) and precision-recall curve "
        f"(AUC {_number(pr)}) of the overall slice"
    )


def trend_images(
    spark: SparkSession, config: Config, run_date: dt.date, granularity: str, windows: int
) -> tuple[FigureImage, ...]:
    """One trend figure per watched metric over the last ``windows`` windows."""
    if windows <= 0:
        return ()
    frames = trend_frames(spark, config, run_date, granularity, windows=windows)
    if frames is None:
        return ()
    drawn = rendered(
        trend_figures,
        frames.points,
        frames.thresholds,
        frames.fired,
        granularity=granularity,
        run_date=run_date.isoformat(),
    )
    return tuple(
        _image(
            png,
            f"{metric} by {granularity} window",
            _trend_alt(str(metric), frames.fired, granularity),
        )
        for metric, png in drawn
    )


def _trend_alt(metric: str, fired: pd.DataFrame, granularity: str) -> str:
    hits = fired[fired["metric"] == metric] if not fired.empty else fired
    marks = sorted(
        {
            f"{row['model_version'] or 'all'} {slice_label(row['slice_name'], row['slice_value'])} "
            f"on {row['window_end']}"
            for row in hits.to_dict("records")
        }
    )
    fired_text = "alerts fired: " + "; ".join(marks) if marks else "no alert fired"
    return (
        f"{metric} by {granularity} window, one line per model version, one panel for the "
        f"overall slice and one per slice where an alert fired, with the rules' thresholds "
        f"as dashed lines; {fired_text}"
    )


def _of_version(frame: pd.DataFrame, version: str | None) -> pd.DataFrame:
    if frame.empty:
        return frame
    same = frame["model_version"].isna() if version is None else frame["model_version"] == version
    return frame[same]


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def _number(value: Any) -> str:
    return "n/a" if _missing(value) else f"{float(value):.4f}"
