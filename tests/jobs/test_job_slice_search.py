"""``spark-calib search`` as a job: the two tables, their schemas, a rerun, the console text and
the figure; and ``evaluate`` with a ``slice_search`` section: the same tables, its metrics rows
and the HTML page's section."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import SparkSession

from spark_calib.config import Config, load_config
from spark_calib.errors import ConfigError
from spark_calib_cli.commands.evaluate import run_evaluate
from spark_calib_cli.commands.html_report import write_html_report
from spark_calib_cli.commands.search import (
    MULTICALIBRATION_TABLE,
    SLICE_SEARCH_RELIABILITY_TABLE,
    SLICE_SEARCH_TABLE,
    run_search,
    search_text,
)
from spark_calib_cli.report.slice_search_figure import draw_slice_search
from tests.support.jobs import RUN_DATE, read_path_table, schema_of

SLICE_SEARCH_SCHEMA = {
    "model_version": "string",
    "rank": "int",
    "level": "int",
    "slice_name": "string",
    "slice_value": "string",
    "n": "bigint",
    "weight_sum": "double",
    "score_name": "string",
    "score": "double",
    "se": "double",
    "z": "double",
    "ecce": "double",
    "ecce_bound": "double",
    "ecce_sigma": "double",
    "ece": "double",
    "calibration_in_the_large": "double",
    "calibration_ratio": "double",
    "mean_prediction": "double",
    "mean_label": "double",
    "p_value": "double",
    "p_adjusted": "double",
    "significant": "boolean",
    "run_id": "string",
    "config_hash": "string",
    "run_date": "date",
}


def _log(path: Path, spark: SparkSession) -> None:
    """Two versions; b over-predicts by a half on (MX, tablet), 4 % of its rows."""
    rng = np.random.default_rng(3)
    n = 40_000
    frame = pd.DataFrame(
        {
            "event_date": [RUN_DATE] * n,
            "model_version": np.where(np.arange(n) % 2 == 0, "a", "b"),
            "country": rng.choice(["US", "MX", "BR", "DE", "IN"], n),
            "device": rng.choice(["phone", "tablet", "desktop"], n),
            "score": rng.beta(2.0, 5.0, n),
        }
    )
    truth = frame.score.to_numpy().copy()
    broken = (frame.model_version == "b") & (frame.country == "MX") & (frame.device == "tablet")
    truth[broken.to_numpy()] /= 1.5
    frame["label"] = (rng.random(n) < truth).astype(int)
    spark.createDataFrame(frame).write.mode("overwrite").parquet(str(path))


def _logged_config(spark: SparkSession, tmp_path: Path, **extra: object) -> Config:
    """The log of ``_log`` under ``tmp_path/log``, and a config searching it into
    ``tmp_path/out``."""
    log = tmp_path / "log"
    _log(log, spark)
    return load_config(
        {
            "task": "binary",
            "columns": {"score": "score", "label": "label", "model_version": "model_version"},
            "input": {"path": str(log), "window": {"column": "event_date", "lookback_days": 1}},
            "output": {"path": str(tmp_path / "out")},
            "slice_search": {"columns": ["country", "device"], "max_level": 2, "top_k": 5},
            **extra,
        }
    )


def test_search_writes_both_tables_and_a_rerun_replaces_them(
    spark: SparkSession, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    config = _logged_config(spark, tmp_path)
    first = run_search(spark, config, RUN_DATE)
    second = run_search(spark, config, RUN_DATE)
    slices = read_path_table(spark, out, SLICE_SEARCH_TABLE)
    assert schema_of(slices) == SLICE_SEARCH_SCHEMA
    assert {row.run_id for row in slices.select("run_id").distinct().collect()} == {
        second.slices.first().run_id  # type: ignore[union-attr]
    }
    assert slices.count() == second.slices.count() <= 10
    top = slices.where("model_version = 'b' AND rank = 1").collect()[0]
    assert (top.slice_name, top.slice_value, top.significant) == (
        "country,device",
        "MX,tablet",
        True,
    )
    summary = read_path_table(spark, out, MULTICALIBRATION_TABLE).orderBy("model_version").collect()
    assert [row.model_version for row in summary] == ["a", "b"]
    assert summary[1].worst_slice_value == "MX,tablet"
    assert summary[1].multicalibration_error == pytest.approx(top.ecce_sigma)
    assert summary[0].significant_slices == 0
    text = search_text(first)
    assert "model_version a: multicalibration error" in text
    assert "  no significant slice" in text
    assert "country=MX, device=tablet: n " in text
    paths = draw_slice_search(first.result.slices, first.result.reliability, tmp_path / "fig")
    assert sorted(p.name for p in paths) == ["slice_search_a.png", "slice_search_b.png"]
    assert all(p.stat().st_size > 10_000 for p in paths)


def test_search_without_a_section_is_a_one_line_error(spark: SparkSession, tmp_path: Path) -> None:
    config = load_config(
        {
            "task": "binary",
            "columns": {"score": "score", "label": "label"},
            "input": {"path": str(tmp_path / "log")},
            "output": {"path": str(tmp_path / "out")},
        }
    )
    with pytest.raises(ConfigError, match="needs a slice_search section"):
        run_search(spark, config, RUN_DATE)


def test_evaluate_with_a_slice_search_writes_its_tables_metrics_and_page(
    spark: SparkSession, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    config = _logged_config(spark, tmp_path, slices=[[], ["country"]])
    outcome = run_evaluate(spark, config, RUN_DATE)
    slices = read_path_table(spark, out, SLICE_SEARCH_TABLE)
    assert schema_of(slices) == SLICE_SEARCH_SCHEMA
    assert {row.run_id for row in slices.select("run_id").distinct().collect()} == {outcome.run_id}
    top = slices.where("model_version = 'b' AND rank = 1").collect()[0]
    assert (top.slice_name, top.slice_value, top.significant) == (
        "country,device",
        "MX,tablet",
        True,
    )
    summary = read_path_table(spark, out, MULTICALIBRATION_TABLE).orderBy("model_version")
    errors = (
        read_path_table(spark, out, "calibration_metrics")
        .where("metric = 'multicalibration_error'")
        .orderBy("model_version")
        .collect()
    )
    assert [(r.model_version, r.slice_name, r.value) for r in errors] == [
        (r.model_version, "overall", r.multicalibration_error) for r in summary.collect()
    ]
    assert errors[1].value == pytest.approx(top.ecce_sigma)
    assert "country=MX, device=tablet: n " in outcome.search
    assert "model_version a: multicalibration error" in outcome.search
    assert set(outcome.tables) >= {SLICE_SEARCH_TABLE, MULTICALIBRATION_TABLE}
    page = tmp_path / "page.html"
    write_html_report(spark, config, RUN_DATE, page)
    text = page.read_text()
    assert "Slice search" in text and "country=MX, device=tablet" in text
    assert "top segments against the version overall" in text
    bins = read_path_table(spark, out, SLICE_SEARCH_RELIABILITY_TABLE)
    assert schema_of(bins) == {
        "model_version": "string",
        "rank": "int",
        "bin": "int",
        "weight": "double",
        "mean_prediction": "double",
        "mean_label": "double",
        "run_id": "string",
        "config_hash": "string",
        "run_date": "date",
    }
    # Rank 0 is the version overall: its bins' weights add up to its rows (unit weights).
    overall = bins.where("model_version = 'b' AND rank = 0").agg({"weight": "sum"}).first()[0]
    assert overall == pytest.approx(20_000)
