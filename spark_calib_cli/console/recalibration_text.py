"""The console's "what recalibration would do" block: per model version and method, the
overall map and the evaluated rows' ECE and NLL before → after."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_calib.constants import OVERALL_SLICE_NAME
from spark_calib_cli.console.summary import NO_MODEL_VERSION
from spark_calib_cli.console.text_table import render_table, show_metric

HEADER = ("model_version", "method", "map", "n_fit", "n_eval", "ECE", "NLL")


@dataclass(frozen=True)
class RecalibrationLine:
    """The overall row of one model version and method in the recalibration table."""

    model_version: str | None
    method: str
    parameters: dict[str, float] | None
    n_knots: int | None
    n_fit: int
    n_eval: int
    ece: tuple[float | None, float | None]
    nll: tuple[float | None, float | None]


def collect_recalibration_lines(table: DataFrame) -> tuple[RecalibrationLine, ...]:
    """The overall rows of a (small, local) recalibration table, by model version."""
    rows = (
        table.where(F.col("slice_name") == F.lit(OVERALL_SLICE_NAME))
        .orderBy(F.col("model_version").asc_nulls_first(), "method")
        .collect()
    )
    return tuple(
        RecalibrationLine(
            model_version=row["model_version"],
            method=row["method"],
            parameters=dict(row["parameters"]) if row["parameters"] is not None else None,
            n_knots=len(row["knots"]) if row["knots"] is not None else None,
            n_fit=int(row["n_fit"]),
            n_eval=int(row["n_eval"]),
            ece=(row["ece_before"], row["ece_after"]),
            nll=(row["nll_before"], row["nll_after"]),
        )
        for row in rows
    )


def format_recalibration(lines: Sequence[RecalibrationLine]) -> str:
    """The block's text; empty without a recalibration table."""
    if not lines:
        return ""
    body = [
        (
            line.model_version or NO_MODEL_VERSION,
            line.method,
            _describe_map(line),
            f"{line.n_fit:,}",
            f"{line.n_eval:,}",
            _before_after(line.ece),
            _before_after(line.nll),
        )
        for line in lines
    ]
    title = "what recalibration would do (overall; metrics of the evaluated rows, before → after):"
    return title + "\n" + render_table(HEADER, body, numeric={3, 4})


def _describe_map(line: RecalibrationLine) -> str:
    if line.parameters is None:
        return "no fit rows"
    if "temperature" in line.parameters:
        return f"T = {line.parameters['temperature']:.3f}"
    if "a" in line.parameters:
        return f"a = {line.parameters['a']:.3f}, b = {line.parameters['b']:.3f}"
    return f"{line.n_knots} steps"


def _before_after(values: tuple[float | None, float | None]) -> str:
    return f"{show_metric(values[0])} → {show_metric(values[1])}"
