"""The console summary of a regression run: per model version, the overall slice and the worst
slices by miscalibration area of the predictive intervals (by RMSE without a std column)."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame

from spark_calib_cli.console.summary import (
    DIRECTION_MIN_GAP,
    SummaryRow,
    in_print_order,
    model_version_label,
    ranked_slice_label,
)
from spark_calib_cli.console.text_table import render_table, show_metric
from spark_calib_cli.console.worst_slices import (
    RANK,
    REGRESSION_OVERVIEW_METRICS,
    REGRESSION_RANKING,
    regression_overview,
    worst_slices,
)

# (metric, header) in print order; a metric no printed row has (no std column) is left out.
REGRESSION_SUMMARY_COLUMNS = (
    ("mse", "MSE"),
    ("rmse", "RMSE"),
    ("mae", "MAE"),
    ("r2", "R2"),
    ("gaussian_nll", "NLL"),
    ("coverage_0.9", "cov@0.9"),
    ("miscalibration_area", "miscal"),
)
DIRECTION_LEVEL = 0.9
RANKED_BY_MISCALIBRATION = "miscal"
RANKED_BY_RMSE = "RMSE"


def collect_regression_summary(metrics: DataFrame, top: int, min_rows: int) -> list[SummaryRow]:
    """Collect the overall slice and the ``top`` worst slices (``n >= min_rows``) of each model
    version from a regression metrics frame. ``values`` is keyed by metric name (for example
    ``coverage_0.9``); ``ranked_by`` says whether the slices were ranked by miscalibration area
    or, without a std column, by RMSE."""
    overview = regression_overview(metrics)
    rows = worst_slices(overview, top=top, min_rows=min_rows, by=REGRESSION_RANKING).collect()
    has_area = any(
        row[REGRESSION_OVERVIEW_METRICS["miscalibration_area"]] is not None for row in rows
    )
    ranked_by = RANKED_BY_MISCALIBRATION if has_area else RANKED_BY_RMSE
    return in_print_order(
        [
            SummaryRow(
                model_version=row["model_version"],
                slice_name=row["slice_name"],
                slice_value=row["slice_value"],
                rank=int(row[RANK]),
                n=int(row["n"] or 0),
                values={name: row[column] for name, column in REGRESSION_OVERVIEW_METRICS.items()},
                ranked_by=ranked_by,
            )
            for row in rows
        ]
    )


def format_regression_summary(rows: Sequence[SummaryRow]) -> str:
    """A fixed-width table like the classification summary, with the regression metrics that
    at least one row has, and the direction of the 90% interval's miscalibration."""
    columns = [
        (name, title)
        for name, title in REGRESSION_SUMMARY_COLUMNS
        if any(row.values.get(name) is not None for row in rows)
    ]
    header = ["model_version", "slice", "n", *[title for _, title in columns], ""]
    body = [
        [
            model_version_label(row),
            ranked_slice_label(row),
            f"{row.n:,}",
            *[show_metric(row.values.get(name)) for name, _ in columns],
            interval_direction(row.values.get(f"coverage_{DIRECTION_LEVEL}")),
        ]
        for row in rows
    ]
    return render_table(header, body, numeric=range(2, len(header) - 1))


def interval_direction(coverage: float | None, level: float = DIRECTION_LEVEL) -> str:
    """``over-confident`` when the ``level`` interval covers the target at least
    ``DIRECTION_MIN_GAP`` less often than ``level`` (σ too small), ``under-confident`` for the
    reverse (σ too large), else ``""``."""
    if coverage is None:
        return ""
    if level - coverage >= DIRECTION_MIN_GAP:
        return "over-confident"
    if coverage - level >= DIRECTION_MIN_GAP:
        return "under-confident"
    return ""
