"""The console summary of a run: per model version, the overall slice and the worst slices."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame

from spark_calib_cli.console.text_table import render_table, show_metric
from spark_calib_cli.console.worst_slices import (
    ECE_CI_LOWER,
    ECE_EXCESS,
    ECE_NULL,
    RANK,
    slice_overview,
    worst_slices,
)
from spark_calib_cli.report.labels import slice_label

# (column of the overview, header) in print order.
SUMMARY_COLUMNS = (
    ("ece", "ECE"),
    ("mce", "MCE"),
    ("brier", "Brier"),
    ("nll", "NLL"),
    ("accuracy", "accuracy"),
    ("mean_confidence", "mean conf"),
)
# Binary positive-class view: the prediction and the observed rate instead of the confidence.
POSITIVE_CLASS_COLUMNS = (
    ("ece", "ECE"),
    ("mce", "MCE"),
    ("brier", "Brier"),
    ("nll", "NLL"),
    ("accuracy", "accuracy"),
    ("mean_confidence", "mean pred"),
    ("mean_outcome", "base rate"),
)
# |mean confidence − accuracy| from which a slice is called over- or under-confident.
DIRECTION_MIN_GAP = 0.02
# Positive class: |mean prediction / base rate − 1| from which a slice over- or under-predicts,
# and the reliability slopes below / above which it is over- / under-confident.
DIRECTION_MIN_RATIO_GAP = 0.1
OVER_CONFIDENT_SLOPE = 0.8
UNDER_CONFIDENT_SLOPE = 1.25
NO_MODEL_VERSION = "(all)"
RANKED_BY_ECE = "ECE − noise"


@dataclass(frozen=True)
class SummaryRow:
    """One printed line: a model version's slice with its headline metrics."""

    model_version: str | None
    slice_name: str
    slice_value: str
    rank: int
    n: int
    values: Mapping[str, float | None]
    ranked_by: str = RANKED_BY_ECE
    positive_class: bool = False

    @property
    def slice_label(self) -> str:
        """``overall`` or ``country=BR, device=tablet``."""
        return slice_label(self.slice_name, self.slice_value)


def collect_summary(
    metrics: DataFrame,
    reliability: DataFrame,
    top: int,
    min_rows: int,
    *,
    positive_class: bool = False,
) -> list[SummaryRow]:
    """Collect the overall slice and the ``top`` worst slices (by ECE beyond its noise,
    ``ece_excess`` in ``spark_calib_cli.console.worst_slices``; ``n >= min_rows``) of each
    model version from a metrics frame: a handful of rows, whatever the number of slices.
    ``positive_class``: the run is binary with the positive-class view (``binary_view``)."""
    rows = worst_slices(slice_overview(metrics, reliability), top=top, min_rows=min_rows).collect()
    summary = [
        SummaryRow(
            model_version=row["model_version"],
            slice_name=row["slice_name"],
            slice_value=row["slice_value"],
            rank=int(row[RANK]),
            n=int(row["n"] or 0),
            values={
                column: row[column]
                for column in (
                    *dict(POSITIVE_CLASS_COLUMNS),
                    "reliability_slope",
                    ECE_NULL,
                    ECE_CI_LOWER,
                    ECE_EXCESS,
                )
            },
            positive_class=positive_class,
        )
        for row in rows
    ]
    return in_print_order(summary)


def in_print_order(rows: Sequence[SummaryRow]) -> list[SummaryRow]:
    """Rows without a model version first, then by version, each version's rows by rank."""
    return sorted(rows, key=lambda r: (r.model_version is not None, r.model_version or "", r.rank))


def format_summary(rows: Sequence[SummaryRow]) -> str:
    """A fixed-width table, one line per row, grouped by model version."""
    positive = any(row.positive_class for row in rows)
    columns = POSITIVE_CLASS_COLUMNS if positive else SUMMARY_COLUMNS
    header = ["model_version", "slice", "n", *[title for _, title in columns], ""]
    body = [
        [
            model_version_label(row),
            ranked_slice_label(row),
            f"{row.n:,}",
            *[show_metric(row.values.get(column)) for column, _ in columns],
            row_direction(row),
        ]
        for row in rows
    ]
    return render_table(header, body, numeric=range(2, len(header) - 1))


def model_version_label(row: SummaryRow) -> str:
    """The model version, or ``(all)`` when the config names no model_version column."""
    return row.model_version if row.model_version is not None else NO_MODEL_VERSION


def ranked_slice_label(row: SummaryRow) -> str:
    """``overall``, or the slice with its rank: ``country=BR  (#1 by ECE)``."""
    if row.rank == 0:
        return row.slice_label
    return f"{row.slice_label}  (#{row.rank} by {row.ranked_by})"


def row_direction(row: SummaryRow) -> str:
    """The row's direction: ``positive_class_direction`` for the binary positive-class view,
    else ``direction`` of the mean confidence against the accuracy."""
    values = row.values
    if row.positive_class:
        return positive_class_direction(
            values.get("mean_confidence"),
            values.get("mean_outcome"),
            values.get("reliability_slope"),
        )
    return direction(values.get("mean_confidence"), values.get("accuracy"))


def positive_class_direction(
    mean_prediction: float | None, base_rate: float | None, slope: float | None
) -> str:
    """``over-predicts`` / ``under-predicts`` when the mean prediction is at least
    ``DIRECTION_MIN_RATIO_GAP`` (relative) above / below the base rate; otherwise
    ``over-confident`` when the reliability slope is below ``OVER_CONFIDENT_SLOPE`` (the scores
    are too extreme), ``under-confident`` above ``UNDER_CONFIDENT_SLOPE``; else ``""``."""
    if mean_prediction is not None and base_rate:
        ratio = mean_prediction / base_rate
        if ratio >= 1.0 + DIRECTION_MIN_RATIO_GAP:
            return "over-predicts"
        if ratio <= 1.0 - DIRECTION_MIN_RATIO_GAP:
            return "under-predicts"
    if slope is None:
        return ""
    if slope < OVER_CONFIDENT_SLOPE:
        return "over-confident"
    if slope > UNDER_CONFIDENT_SLOPE:
        return "under-confident"
    return ""


def direction(mean_confidence: float | None, accuracy: float | None) -> str:
    """``over-confident`` when the mean confidence exceeds the accuracy by at least
    ``DIRECTION_MIN_GAP``, ``under-confident`` for the reverse, else ``""``."""
    if mean_confidence is None or accuracy is None:
        return ""
    if mean_confidence - accuracy >= DIRECTION_MIN_GAP:
        return "over-confident"
    if accuracy - mean_confidence >= DIRECTION_MIN_GAP:
        return "under-confident"
    return ""
