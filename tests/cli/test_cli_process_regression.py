"""The real command line on the regression demo: demo-data, then evaluate with --report, in
subprocesses (slow; run in the background, see tests/support/cli_process.py). Path output, so no
metastore is involved."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from spark_calib_cli.exit_codes import ExitCode
from tests.support.cli_process import REPO, cli_chain, our_lines, spark_calib

DEMO_CONFIG = REPO / "conf" / "demo_regression.yaml"

Completed = subprocess.CompletedProcess[str]


@cli_chain("test_demo_data_then_evaluate_the_regression_demo")
def demo_data_then_evaluate(workdir: Path) -> tuple[Completed, Completed]:
    generated = spark_calib(
        "demo-data",
        "--out",
        str(workdir / "logs"),
        "--binary-rows",
        "10",
        "--multiclass-rows",
        "10",
        "--regression-rows",
        "30000",
        "--segments-rows",
        "10",
        cwd=workdir,
    )
    evaluated = spark_calib(
        "evaluate",
        "--config",
        str(DEMO_CONFIG),
        "--run-date",
        "2024-06-30",
        "--set",
        f"input.path={workdir / 'logs' / 'regression'}",
        "--set",
        f"output={{path: {workdir / 'tables'}}}",
        "--report",
        str(workdir / "reports"),
        cwd=workdir,
    )
    return generated, evaluated


def test_demo_data_then_evaluate_the_regression_demo(cli_run: tuple[Path, Any]) -> None:
    workdir, (generated, evaluated) = cli_run

    assert generated.returncode == ExitCode.OK, generated.stderr
    assert (workdir / "logs" / "regression" / "_SUCCESS").is_file()

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
    assert f"  {workdir / 'tables'}/calibration_regression" in lines
    assert sorted(p.name for p in (workdir / "reports").iterdir()) == [
        "regression_calibration_v1.png",
        "regression_calibration_v2.png",
        "regression_calibration_v3.png",
        "trend_rmse.png",
    ]
