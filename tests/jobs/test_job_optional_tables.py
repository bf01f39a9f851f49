"""The job end to end with the decision, ranking and regression outputs (path output): the
optional tables calibration_confusion, calibration_thresholds, calibration_roc and
calibration_regression, the regression summary, reruns, and the report's new PNGs.

Expected values are counted from the input rows in Python, never read from the library.
"""

from __future__ import annotations

import math
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from spark_calib.config import Config
from spark_calib_cli.commands.evaluate import EvaluateOutcome, run_evaluate
from spark_calib_cli.commands.report import run_report
from spark_calib_cli.errors import MissingInputError
from tests.support.jobs import (
    NEXT_DATE,
    RUN_DATE,
    STATS_SCHEMA,
    job_config,
    log_rows,
    read_path_table,
    rows_by_date,
    schema_of,
    write_log,
)
from tests.support.jobs_optional_tables import (
    BINARY_TABLE_SCHEMAS,
    REGRESSION_DDL,
    REGRESSION_ERRORS,
    REGRESSION_LEVELS,
    REGRESSION_SCHEMA,
    THRESHOLDS,
    binary_optional_tables_config,
    regression_config,
    regression_rows,
)
from tests.support.reference_sklearn import cell_lower, cell_of

N_PER_VERSION = 20
VERSIONS = ("a", "b")
# Keys per run: each version's overall slice and its two countries.
N_KEYS = len(VERSIONS) * 3
DECISION_THRESHOLD = 0.5


@dataclass(frozen=True)
class Run:
    config: Config
    out: Path
    outcome: EvaluateOutcome


def binary_rows_of(version: str) -> list[tuple[float, int]]:
    """(score, label) of one version's rows in log_rows(N_PER_VERSION)."""
    return [(row[4], row[5]) for row in log_rows(N_PER_VERSION) if row[2] == version]


@pytest.fixture(scope="module")
def binary_run(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Run:
    root = tmp_path_factory.mktemp("optional_tables_binary")
    log, out = root / "log", root / "out"
    write_log(spark, log, log_rows(N_PER_VERSION))
    config = binary_optional_tables_config({"path": str(log)}, {"path": str(out)})
    return Run(config, out, run_evaluate(spark, config, RUN_DATE))


@pytest.fixture(scope="module")
def regression_run(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Run:
    root = tmp_path_factory.mktemp("optional_tables_regression")
    log, out = root / "log", root / "out"
    write_log(spark, log, regression_rows(N_PER_VERSION), REGRESSION_DDL)
    config = regression_config({"path": str(log)}, {"path": str(out)})
    return Run(config, out, run_evaluate(spark, config, RUN_DATE))


@pytest.fixture(scope="module")
def regression_run_without_std(
    spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
) -> Run:
    root = tmp_path_factory.mktemp("optional_tables_regression_no_std")
    log, out = root / "log", root / "out"
    write_log(spark, log, regression_rows(N_PER_VERSION, std=None), REGRESSION_DDL)
    config = regression_config({"path": str(log)}, {"path": str(out)}, with_std=False)
    return Run(config, out, run_evaluate(spark, config, RUN_DATE))


def test_binary_run_writes_the_new_tables_before_the_metrics(
    spark: SparkSession, binary_run: Run
) -> None:
    outcome, out = binary_run.outcome, binary_run.out
    assert list(outcome.tables) == [
        "calibration_invalid_rows",
        "calibration_stats",
        "calibration_reliability",
        "calibration_confusion",
        "calibration_thresholds",
        "calibration_roc",
        "calibration_metrics",
        "calibration_windows",
        "calibration_drift",
        "calibration_alerts",
    ]
    for table, expected_schema in BINARY_TABLE_SCHEMAS.items():
        frame = read_path_table(spark, out, table)
        assert schema_of(frame) == expected_schema, table
        assert outcome.tables[table] == f"{out}/{table}"
        assert (out / table / "run_date=2024-06-30").is_dir()
        ids = frame.select("run_id", "config_hash").distinct().collect()
        assert [tuple(row) for row in ids] == [(outcome.run_id, outcome.config_hash)], table
    assert not (out / "calibration_regression").exists()


def test_confusion_cells_count_the_rows_of_each_key(spark: SparkSession, binary_run: Run) -> None:
    confusion = read_path_table(spark, binary_run.out, "calibration_confusion")
    overall = confusion.where(F.col("slice_name") == "overall")
    cells = {
        (row["model_version"], row["true_class"], row["predicted_class"]): row["n"]
        for row in overall.collect()
    }

    expected = Counter(
        (version, str(label), str(int(score >= DECISION_THRESHOLD)))
        for version in VERSIONS
        for score, label in binary_rows_of(version)
    )
    assert cells == dict(expected)
    # Every key's cells add up to its rows (only non-empty cells are written).
    per_key = confusion.groupBy("model_version", "slice_name", "slice_value").agg(F.sum("n"))
    assert sorted(row[3] for row in per_key.collect()) == sorted(
        [N_PER_VERSION] * len(VERSIONS) + [N_PER_VERSION // 2] * (N_KEYS - len(VERSIONS))
    )


def test_threshold_rows_count_each_threshold(spark: SparkSession, binary_run: Run) -> None:
    thresholds = read_path_table(spark, binary_run.out, "calibration_thresholds")
    assert thresholds.count() == N_KEYS * len(THRESHOLDS)

    rows = thresholds.where(
        (F.col("slice_name") == "overall") & (F.col("model_version") == "a")
    ).collect()
    scored = binary_rows_of("a")
    for row in rows:
        t = row["threshold"]
        tp = sum(1 for s, y in scored if s >= t and y == 1)
        fp = sum(1 for s, y in scored if s >= t and y == 0)
        assert (row["tp"], row["fp"]) == (tp, fp), t
        assert (row["tp"] + row["fn"], row["fp"] + row["tn"]) == (10, 10)
        assert row["tpr"] == pytest.approx(tp / 10)
        assert row["n"] == N_PER_VERSION
    assert sorted(row["threshold"] for row in rows) == THRESHOLDS


def test_roc_points_run_from_the_origin_to_one_one(spark: SparkSession, binary_run: Run) -> None:
    roc = read_path_table(spark, binary_run.out, "calibration_roc")
    points = (
        roc.where((F.col("slice_name") == "overall") & (F.col("model_version") == "b"))
        .orderBy("point")
        .collect()
    )

    # One point per non-empty fine cell (the NumPy grid of tests/support), at the cell's lower
    # edge max(k/1000, σ((j − 593)/16)), by descending score.
    cells = sorted({int(c) for c in cell_of(np.array([s for s, _ in binary_rows_of("b")]))})
    assert len(cells) == N_PER_VERSION  # scores k/21 are 0.048 apart: one cell each
    assert [row["point"] for row in points] == list(range(len(cells) + 1))
    assert (points[0]["threshold"], points[0]["fpr"], points[0]["tpr"]) == (None, 0.0, 0.0)
    assert [row["threshold"] for row in points[1:]] == pytest.approx(
        list(cell_lower(cells[::-1])), abs=1e-12
    )
    assert (points[-1]["fpr"], points[-1]["tpr"]) == (1.0, 1.0)


def test_new_metrics_are_rows_of_the_metrics_table(spark: SparkSession, binary_run: Run) -> None:
    metrics = read_path_table(spark, binary_run.out, "calibration_metrics").where(
        (F.col("slice_name") == "overall") & (F.col("model_version") == "a")
    )
    values = {(row["metric"], row["class"]): row["value"] for row in metrics.collect()}

    for name in ("balanced_accuracy", "roc_auc_binned", "pr_auc_binned", "f1_macro"):
        assert (name, None) in values, name
    assert {("precision", "0"), ("precision", "1"), ("recall", "1")} <= set(values)
    wrong = sum(1 for s, y in binary_rows_of("a") if int(s >= DECISION_THRESHOLD) != y)
    assert values[("error_rate", None)] == pytest.approx(wrong / N_PER_VERSION)


def test_regression_run_writes_its_tables(spark: SparkSession, regression_run: Run) -> None:
    outcome, out = regression_run.outcome, regression_run.out
    assert list(outcome.tables) == [
        "calibration_invalid_rows",
        "calibration_stats",
        "calibration_reliability",
        "calibration_regression",
        "calibration_metrics",
        "calibration_windows",
        "calibration_drift",
        "calibration_alerts",
    ]
    levels = read_path_table(spark, out, "calibration_regression")
    assert schema_of(levels) == REGRESSION_SCHEMA
    assert levels.count() == N_KEYS * len(REGRESSION_LEVELS)
    assert schema_of(read_path_table(spark, out, "calibration_stats")) == STATS_SCHEMA
    # No confidence bins in a regression run: the reliability partition is empty.
    assert read_path_table(spark, out, "calibration_reliability").count() == 0
    for table in ("calibration_confusion", "calibration_thresholds", "calibration_roc"):
        assert not (out / table).exists(), table


def test_regression_levels_hold_the_observed_coverage(
    spark: SparkSession, regression_run: Run
) -> None:
    levels = read_path_table(spark, regression_run.out, "calibration_regression")
    rows = levels.where(
        (F.col("slice_name") == "overall") & (F.col("model_version") == "a")
    ).collect()

    assert sorted(row["level"] for row in rows) == pytest.approx(REGRESSION_LEVELS)
    for row in rows:
        z = NormalDist().inv_cdf((1 + row["level"]) / 2)
        covered = sum(abs(e) <= z for e in REGRESSION_ERRORS) / len(REGRESSION_ERRORS)
        assert row["z"] == pytest.approx(z)
        assert row["observed"] == pytest.approx(covered)
        assert row["gap"] == pytest.approx(covered - row["level"])
        assert row["n"] == N_PER_VERSION


def test_regression_metrics_and_summary(spark: SparkSession, regression_run: Run) -> None:
    metrics = read_path_table(spark, regression_run.out, "calibration_metrics")
    names = {row["metric"] for row in metrics.select("metric").distinct().collect()}
    assert {"count", "mse", "rmse", "mae", "r2", "gaussian_nll", "miscalibration_area"} <= names
    assert {"coverage_0.5", "coverage_0.8", "coverage_0.9", "coverage_0.95"} <= names

    mse = sum(e * e for e in REGRESSION_ERRORS) / len(REGRESSION_ERRORS)
    overall = [row for row in regression_run.outcome.summary if row.rank == 0]
    assert [(row.model_version, row.n) for row in overall] == [
        ("a", N_PER_VERSION),
        ("b", N_PER_VERSION),
    ]
    assert overall[0].values["rmse"] == pytest.approx(math.sqrt(mse))
    assert overall[0].values["coverage_0.9"] == pytest.approx(0.75)
    assert {row.ranked_by for row in regression_run.outcome.summary} == {"miscal"}


def test_regression_without_std_has_no_interval_outputs(
    spark: SparkSession, regression_run_without_std: Run
) -> None:
    out = regression_run_without_std.outcome
    assert "calibration_regression" not in out.tables
    assert not (regression_run_without_std.out / "calibration_regression").exists()
    assert {row.ranked_by for row in out.summary} == {"RMSE"}
    assert all(row.values["gaussian_nll"] is None for row in out.summary)


def test_rerun_replaces_the_new_tables_partitions(spark: SparkSession, tmp_path: Path) -> None:
    log, out = tmp_path / "log", tmp_path / "out"
    write_log(spark, log, log_rows(N_PER_VERSION))
    config = binary_optional_tables_config({"path": str(log)}, {"path": str(out)})
    run_evaluate(spark, config, RUN_DATE)
    once = {
        table: Counter(read_path_table(spark, out, table).drop("run_id").collect())
        for table in BINARY_TABLE_SCHEMAS
    }

    rerun = run_evaluate(spark, config, RUN_DATE)

    for table in BINARY_TABLE_SCHEMAS:
        frame = read_path_table(spark, out, table)
        assert Counter(frame.drop("run_id").collect()) == once[table], table
        assert {row["run_id"] for row in frame.select("run_id").collect()} == {rerun.run_id}

    next_day = run_evaluate(spark, config, NEXT_DATE)

    roc = read_path_table(spark, out, "calibration_roc")
    per_run = sum(once["calibration_roc"].values())
    assert rows_by_date(roc) == {RUN_DATE: per_run, NEXT_DATE: per_run}
    assert {row["run_id"] for row in roc.where(F.col("run_date") == NEXT_DATE).collect()} == {
        next_day.run_id
    }


def test_rerun_without_the_new_metrics_empties_their_partitions(
    spark: SparkSession, tmp_path: Path
) -> None:
    log, out = tmp_path / "log", tmp_path / "out"
    write_log(spark, log, log_rows(N_PER_VERSION))
    run_evaluate(
        spark, binary_optional_tables_config({"path": str(log)}, {"path": str(out)}), RUN_DATE
    )
    run_evaluate(
        spark, binary_optional_tables_config({"path": str(log)}, {"path": str(out)}), NEXT_DATE
    )

    # The same date recomputed with the default metrics: no confusion, thresholds or ROC.
    plain = run_evaluate(spark, job_config({"path": str(log)}, {"path": str(out)}), RUN_DATE)

    assert set(plain.tables).isdisjoint(BINARY_TABLE_SCHEMAS)
    for table in BINARY_TABLE_SCHEMAS:
        # The rerun date is empty; the other date keeps its rows.
        assert set(rows_by_date(read_path_table(spark, out, table))) == {NEXT_DATE}, table


def test_report_draws_the_roc_curves_of_a_binary_run(
    spark: SparkSession, binary_run: Run, tmp_path: Path
) -> None:
    written = run_report(spark, binary_run.config, RUN_DATE, tmp_path, min_slice_rows=1)

    assert [path.name for path in written] == [
        "reliability_a.png",
        "reliability_b.png",
        "roc_a.png",
        "roc_b.png",
        "trend_ece.png",
    ]
    assert all(path.stat().st_size > 0 for path in written)


def test_report_draws_the_interval_calibration_of_a_regression_run(
    spark: SparkSession, regression_run: Run, tmp_path: Path
) -> None:
    written = run_report(spark, regression_run.config, RUN_DATE, tmp_path, min_slice_rows=1)

    assert [path.name for path in written] == [
        "regression_calibration_a.png",
        "regression_calibration_b.png",
        "trend_rmse.png",
    ]
    with pytest.raises(MissingInputError, match=r"has no rows for run_date 2024-07-01"):
        run_report(spark, regression_run.config, NEXT_DATE, tmp_path)


def test_report_of_a_regression_run_without_std_draws_only_the_trend(
    spark: SparkSession, regression_run_without_std: Run, tmp_path: Path
) -> None:
    config = regression_run_without_std.config
    written = run_report(spark, config, RUN_DATE, tmp_path)
    assert [path.name for path in written] == ["trend_rmse.png"]
    assert run_report(spark, config, RUN_DATE, tmp_path / "none", trend_windows=0) == []


def test_catalog_output_creates_and_empties_the_new_tables(
    spark: SparkSession, tmp_path: Path
) -> None:
    log = tmp_path / "log"
    write_log(spark, log, log_rows(N_PER_VERSION))
    database = "calib_optional_tables_" + uuid.uuid4().hex[:10]
    config = binary_optional_tables_config({"path": str(log)}, {"database": database})

    outcome = run_evaluate(spark, config, RUN_DATE)

    for table, expected_schema in BINARY_TABLE_SCHEMAS.items():
        name = f"{database}.{table}"
        assert outcome.tables[table] == name
        assert schema_of(spark.table(name)) == expected_schema, table
        assert rows_by_date(spark.table(name)).keys() == {RUN_DATE}, table

    run_evaluate(spark, job_config({"path": str(log)}, {"database": database}), RUN_DATE)

    for table in BINARY_TABLE_SCHEMAS:
        assert spark.table(f"{database}.{table}").count() == 0, table
