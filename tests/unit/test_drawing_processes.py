"""Figures drawn by several processes are the one process's figures: the same parts in the
same order, byte for byte, for every figure function that shares its figures."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from matplotlib.figure import Figure

from spark_calib_cli.commands import cli
from spark_calib_cli.exit_codes import ExitCode
from spark_calib_cli.main import main
from spark_calib_cli.report.layout import WHOLE, Share
from spark_calib_cli.report.reliability import reliability_figures
from spark_calib_cli.report.rendered import (
    DRAW_PROCESSES_ENV,
    Drawn,
    draw_processes,
    forget_drawn,
    rendered,
    stop_drawing_processes,
)
from spark_calib_cli.report.roc import roc_figures
from spark_calib_cli.report.trend import trend_figures

DEMO_CONFIG = Path(__file__).resolve().parents[2] / "conf" / "demo_binary.yaml"
# Five parts: two processes draw three and two, so the turns are uneven.
VERSIONS = [None, "v1", "v2", "v3", "v4"]
BINS = 4


def slices_frame() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "model_version": version,
                "slice_name": "overall",
                "slice_value": "",
                "rank": 0,
                "n": 100 + i,
                "ece": 0.01 * (i + 1),
                "mce": 0.02 * (i + 1),
            }
            for i, version in enumerate(VERSIONS)
        ]
    )


def bins_frame() -> pd.DataFrame:
    rows = []
    for i, version in enumerate(VERSIONS):
        for b in range(BINS):
            confidence = (b + 0.5) / BINS
            rows.append(
                {
                    "model_version": version,
                    "slice_name": "overall",
                    "slice_value": "",
                    "bin": b,
                    "bin_lower": b / BINS,
                    "bin_upper": (b + 1) / BINS,
                    "n": 25,
                    "weight_sum": 25.0,
                    "mean_confidence": confidence,
                    "accuracy": min(1.0, confidence + 0.02 * i),
                    "gap": 0.02 * i,
                }
            )
    return pd.DataFrame(rows)


def roc_points() -> pd.DataFrame:
    """Points for every version but v2, which gets no figure."""
    rows = []
    for version in VERSIONS:
        if version == "v2":
            continue
        for point, (fpr, tpr) in enumerate([(0.0, 0.0), (0.3, 0.7), (1.0, 1.0)]):
            rows.append(
                {
                    "model_version": version,
                    "slice_name": "overall",
                    "slice_value": "",
                    "point": point,
                    "threshold": 1.0 - point / 2,
                    "fpr": fpr,
                    "tpr": tpr,
                    "precision": None if point == 0 else 0.6,
                }
            )
    return pd.DataFrame(rows)


def trend_points() -> pd.DataFrame:
    rows = [
        (metric, "overall", "", "v1", pd.Timestamp(2024, 6, day).date(), value, 100)
        for metric, value in [("ece", 0.02), ("accuracy", 0.9), ("brier", 0.1)]
        for day in (16, 23, 30)
    ]
    columns = ["metric", "slice_name", "slice_value", "model_version", "window_end"]
    return pd.DataFrame(rows, columns=[*columns, "value", "n"])


def no_rows(columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame(columns=columns)


def drawn_both_ways(
    monkeypatch: pytest.MonkeyPatch, draw: Callable[..., Any], *args: Any, **kwargs: Any
) -> tuple[Drawn, Drawn]:
    """(one process's drawing, two processes' drawing), each drawn afresh."""
    monkeypatch.setenv(DRAW_PROCESSES_ENV, "1")
    forget_drawn()
    alone = rendered(draw, *args, **kwargs)
    monkeypatch.setenv(DRAW_PROCESSES_ENV, "2")
    forget_drawn()
    shared = rendered(draw, *args, **kwargs)
    assert stop_drawing_processes(), "the two processes never started"
    forget_drawn()
    return alone, shared


def test_reliability_figures_of_two_processes_are_the_one_process_figures(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    alone, shared = drawn_both_ways(
        monkeypatch, reliability_figures, bins_frame(), slices_frame(), run_date="2024-06-30"
    )
    assert [part for part, _ in alone] == VERSIONS
    assert shared == alone


def test_roc_figures_skip_a_version_without_points_before_sharing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    alone, shared = drawn_both_ways(
        monkeypatch, roc_figures, roc_points(), slices_frame(), run_date="2024-06-30"
    )
    assert [part for part, _ in alone] == [None, "v1", "v3", "v4"]
    assert shared == alone


def test_trend_figures_of_two_processes_are_the_one_process_figures(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    thresholds = no_rows(["metric", "slice_name", "model_version", "kind", "threshold", "rule"])
    fired = no_rows(["metric", "slice_name", "slice_value", "model_version", "window_end", "rule"])
    alone, shared = drawn_both_ways(
        monkeypatch,
        trend_figures,
        trend_points(),
        thresholds,
        fired,
        granularity="week",
        run_date="2024-06-30",
    )
    assert [part for part, _ in alone] == ["accuracy", "brier", "ece"]
    assert shared == alone


@pytest.mark.parametrize("value", ["0", "-1", "two", ""])
def test_a_bad_number_of_drawing_processes_is_a_one_line_error(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(DRAW_PROCESSES_ENV, value)
    with pytest.raises(ValueError, match=f"^{DRAW_PROCESSES_ENV} must be a positive integer"):
        draw_processes()


def test_a_bad_number_of_drawing_processes_stops_the_cli_before_spark_starts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(DRAW_PROCESSES_ENV, "two")

    def no_session(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the session was built")

    monkeypatch.setattr(cli, "build_session", no_session)
    code = main(["report", "--config", str(DEMO_CONFIG), "--run-date", "2024-06-30"])
    assert code == ExitCode.CONFIG
    error = capsys.readouterr().err.strip()
    assert (
        error == f"spark-calib: error: {DRAW_PROCESSES_ENV} must be a positive integer, got 'two'"
    )


def dies_in_a_drawing_process(*, share: Share = WHOLE) -> list[tuple[str | None, Figure]]:
    """One figure, drawn here; a drawing process that is asked for its share exits."""
    if share != WHOLE:
        os._exit(3)
    figure = Figure(figsize=(2.0, 2.0))
    figure.add_subplot().plot([0.0, 1.0])
    return [("only", figure)]


def test_a_drawing_process_that_dies_leaves_the_figures_to_this_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(DRAW_PROCESSES_ENV, "2")
    forget_drawn()
    drawn = rendered(dies_in_a_drawing_process)
    forget_drawn()
    assert [part for part, _ in drawn] == ["only"]
    assert drawn[0][1].startswith(b"\x89PNG\r\n\x1a\n")
    # The broken pool was let go: nothing left to stop.
    assert not stop_drawing_processes()
