"""The real command line on the regression demo: demo-data, then evaluate with --report, in
a subprocess (slow). Path output, so no metastore is involved."""

from __future__ import annotations

from pathlib import Path

from spark_calib_cli.exit_codes import ExitCode
from tests.support.cli_process import REPO, our_lines, spark_calib

DEMO_CONFIG = REPO / "conf" / "demo_regression.yaml"


def test_demo_data_then_evaluate_the_regression_demo(tmp_path: Path) -> None:
    generated = spark_calib(
        "demo-data",
        "--out",
        str(tmp_path / "logs"),
        "--binary-rows",
        "10",
        "--multiclass-rows",
        "10",
        "--regression-rows",
        "30000",
        cwd=tmp_path,
    )
    assert generated.returncode == ExitCode.OK, generated.stderr
    assert (tmp_path / "logs" / "regression" / "_SUCCESS").is_file()

    evaluated = spark_calib(
        "evaluate",
        "--config",
        str(DEMO_CONFIG),
        "--run-date",
        "2024-06-30",
        "--set",
        f"input.path={tmp_path / 'logs' / 'regression'}",
        "--set",
        f"output={{path: {tmp_path / 'tables'}}}",
        "--report",
        str(tmp_path / "reports"),
        cwd=tmp_path,
    )

    assert evaluated.returncode == ExitCode.OK, evaluated.stderr
    assert our_lines(evaluated.stderr) == []
    lines = evaluated.stdout.splitlines()
    header = next(line for line in lines if line.startswith("model_version"))
    assert header.split() == [
        "model_version",
        "slice",
        "n",
        "MSE",
        "RMSE",
        "MAE",
        "R2",
        "NLL",
        "cov@0.9",
        "miscal",
    ]
    overall = {line.split()[0]: line for line in lines if line.split()[1:2] == ["overall"]}
    assert overall["v2"].endswith("over-confident")
    assert overall["v3"].endswith("under-confident")
    assert f"  {tmp_path / 'tables'}/calibration_regression" in lines
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == [
        "regression_calibration_v1.png",
        "regression_calibration_v2.png",
        "regression_calibration_v3.png",
        "trend_rmse.png",
    ]
