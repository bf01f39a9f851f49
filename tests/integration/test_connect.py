"""The library and the CLI through Spark Connect give what they give on a classic session.

One Spark Connect server (the one shipped in the pyspark package, ``local[2]``) serves the
module. A Connect client and a classic session must not share a Python process, so every
Connect client runs in a subprocess: a small script for the library, ``spark-calib`` for the
job. The classic side runs in-process on the suite's ``spark`` fixture, over the same Parquet
input, and the outputs must have the same rows with values within 1e-12.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from connect_server import ConnectServer, connect_server
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_calib import config_hash, evaluate, load_config
from spark_calib_cli.commands.evaluate import EvaluateOutcome, run_evaluate
from spark_calib_cli.console.summary import format_summary
from spark_calib_cli.demo import logs as demo
from spark_calib_cli.exit_codes import ExitCode
from spark_calib_cli.main import main
from tests.support.jobs import TABLE_SCHEMAS

REPO = Path(__file__).resolve().parents[2]
BIN_DIR = Path(sys.executable).parent
RUN_DATE = demo.DEFAULT_END_DATE
VERSIONS = sorted(demo.MODEL_VERSIONS)
PROCESS_TIMEOUT_SECONDS = 300
TOLERANCE = 1e-12
NULLABLE_INTEGERS = {
    pa.int8(): pd.Int8Dtype(),
    pa.int16(): pd.Int16Dtype(),
    pa.int32(): pd.Int32Dtype(),
    pa.int64(): pd.Int64Dtype(),
}
# Floating columns that identify a row rather than measure it (calibration_thresholds).
FLOAT_KEYS = frozenset({"threshold"})
BINARY_ROWS = 3_000
MULTICLASS_ROWS = 1_000
# Every EvaluationResult frame the client writes (None ones are skipped).
RESULT_FRAMES = (
    "metrics",
    "reliability",
    "stats",
    "invalid",
    "confusion",
    "thresholds",
    "roc",
    "regression_calibration",
)
BINARY_CONFIG: dict[str, Any] = {
    "task": "binary",
    "columns": {
        "score": "score",
        "label": "label",
        "model_version": "model_version",
        "weight": "weight",
    },
    "slices": [[], ["country", "device"]],
    "binning": {"n_bins": 15, "edges": "left_closed"},
    "metrics": [
        "ece",
        "mce",
        "rmsce",
        "brier",
        "nll",
        "accuracy",
        "count",
        "f1",
        "roc_auc_binned",
        "pr_auc_binned",
        # Exact ranking metrics: a second pass with window functions.
        "roc_auc",
        "pr_auc",
        "confusion_matrix",
        "threshold_metrics",
        "roc_curve",
    ],
    "thresholds": [0.3, 0.5, 0.7],
    "max_invalid_fraction": 0.05,
}
# The report's trend figures of the job's metrics (no alert rules: ECE and accuracy).
TREND_FIGURES = ["trend_accuracy.png", "trend_ece.png"]
# The job test: lighter (each process plans it once), with one optional table (calibration_roc).
CLI_CONFIG: dict[str, Any] = {
    **BINARY_CONFIG,
    "slices": [[], ["country"]],
    "metrics": ["ece", "mce", "brier", "nll", "accuracy", "count", "roc_auc_binned", "roc_curve"],
}
MULTICLASS_CONFIG: dict[str, Any] = {
    "task": "multiclass",
    "columns": {"probs": "probs", "label": "label", "model_version": "model_version"},
    "class_names": list(demo.CLASS_NAMES),
    "slices": [[]],
    "binning": {"n_bins": 10},
    "metrics": ["ece", "classwise_ece", "brier", "nll", "accuracy", "count", "confusion_matrix"],
    "max_invalid_fraction": 0.05,
}

# The Connect client of the library test: read each input, evaluate, write every result frame
# (the Connect server writes the files), print what the driver saw as JSON.
CLIENT_SCRIPT = """\
import json
import sys

from pyspark.sql import SparkSession

from spark_calib import evaluate

url, jobs, frames = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3].split(",")
spark = SparkSession.builder.remote(url).getOrCreate()
seen = {"session": f"{type(spark).__module__}.{type(spark).__name__}"}
for job in jobs:
    result = evaluate(spark.read.parquet(job["input"]), job["config"])
    try:
        for name in frames:
            frame = getattr(result, name)
            if frame is not None:
                frame.write.mode("overwrite").parquet(f"{job['out']}/{name}")
    finally:
        result.unpersist()
    seen[job["name"]] = {
        "n_rows": result.n_rows,
        "invalid_counts": dict(result.invalid_counts),
        "strategy": result.strategy,
        "num_classes": result.num_classes,
    }
spark.stop()
print(json.dumps(seen))
"""


@dataclass(frozen=True)
class Inputs:
    binary: Path
    multiclass: Path


@pytest.fixture(scope="module")
def launched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    """The module's server, started first and not waited for (see ``server``)."""
    with connect_server(tmp_path_factory.mktemp("connect_server"), wait=False) as starting:
        yield starting


@pytest.fixture(scope="module")
def server(launched: ConnectServer, inputs: Inputs) -> ConnectServer:
    """The server once it accepts connections: its start-up overlaps writing the inputs."""
    return launched.wait_ready()


@pytest.fixture(scope="module")
def inputs(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Inputs:
    """Seeded demo logs, a few rows with a null score or probability vector, as Parquet."""
    root = tmp_path_factory.mktemp("connect_inputs")
    broken = (F.col("request_id") % 97) == 5
    binary = demo.binary_log(spark, BINARY_ROWS, seed=11).select(
        "*", ((F.col("request_id") % 3).cast("double") * 0.5 + 0.5).alias("weight")
    )
    binary = binary.withColumn("score", F.when(broken, F.lit(None)).otherwise(F.col("score")))
    multiclass = demo.multiclass_log(spark, MULTICLASS_ROWS, seed=12)
    multiclass = multiclass.withColumn(
        "probs", F.when(broken, F.lit(None)).otherwise(F.col("probs"))
    )
    paths = Inputs(binary=root / "binary", multiclass=root / "multiclass")
    # One file each: a few thousand rows need no more, and every file costs each reader.
    binary.coalesce(1).write.parquet(str(paths.binary))
    multiclass.coalesce(1).write.parquet(str(paths.multiclass))
    return paths


def test_library_gives_the_same_tables_through_connect(
    spark: SparkSession, server: ConnectServer, inputs: Inputs, tmp_path: Path
) -> None:
    jobs: list[dict[str, Any]] = [
        {"name": "binary", "input": str(inputs.binary), "config": BINARY_CONFIG},
        {"name": "multiclass", "input": str(inputs.multiclass), "config": MULTICLASS_CONFIG},
    ]
    expected_frames = {
        "binary": ["confusion", "invalid", "metrics", "reliability", "roc", "stats", "thresholds"],
        "multiclass": ["confusion", "invalid", "metrics", "reliability", "stats"],
    }
    for job in jobs:
        job["out"] = str(tmp_path / "connect" / str(job["name"]))

    # The classic side runs while the Connect client does: two JVMs, each mostly planning.
    client = spawn(
        [sys.executable, "-c", CLIENT_SCRIPT, server.url, json.dumps(jobs), ",".join(RESULT_FRAMES)]
    )
    with finished(client) as outcome:
        results = {}
        for job in jobs:
            name = str(job["name"])
            result = evaluate(spark.read.parquet(str(job["input"])), job["config"])
            try:
                for frame_name in RESULT_FRAMES:
                    frame: DataFrame | None = getattr(result, frame_name)
                    if frame is not None:
                        frame.write.mode("overwrite").parquet(
                            str(tmp_path / "classic" / name / frame_name)
                        )
            finally:
                result.unpersist()
            results[name] = result

    assert outcome.returncode == 0, failure(outcome, server)
    seen = json.loads(outcome.stdout.strip().splitlines()[-1])
    assert seen["session"] == "pyspark.sql.connect.session.SparkSession"
    for job in jobs:
        name = str(job["name"])
        local_out = tmp_path / "classic" / name
        result = results[name]
        written = sorted(p.name for p in local_out.iterdir())
        assert written == expected_frames[name]
        assert seen[name] == {
            "n_rows": result.n_rows,
            "invalid_counts": dict(result.invalid_counts),
            "strategy": result.strategy,
            "num_classes": result.num_classes,
        }
        assert result.n_invalid > 0, "the input should hold invalid rows"
        assert sorted(p.name for p in Path(str(job["out"])).iterdir()) == written
        for frame_name in written:
            assert_same_table(
                read_table(Path(str(job["out"])) / frame_name),
                read_table(local_out / frame_name),
                f"{name}.{frame_name}",
            )


@dataclass(frozen=True)
class CliRun:
    """``spark-calib evaluate --remote`` and the same job run in-process on the classic session."""

    config: Path
    remote_out: Path
    local_out: Path
    local: EvaluateOutcome
    cli: Finished


@pytest.fixture(scope="module")
def cli_run(
    spark: SparkSession,
    server: ConnectServer,
    inputs: Inputs,
    tmp_path_factory: pytest.TempPathFactory,
) -> CliRun:
    root = tmp_path_factory.mktemp("connect_cli")
    remote_out, local_out, config_path = root / "remote_out", root / "local_out", root / "job.yaml"
    job = {
        **CLI_CONFIG,
        "input": {
            "path": str(inputs.binary),
            "format": "parquet",
            "window": {"column": "event_date", "lookback_days": 7},
        },
        "output": {"path": str(remote_out)},
    }
    config_path.write_text(yaml.safe_dump(job))
    evaluating = spawn(
        spark_calib(
            "evaluate",
            "--remote",
            server.url,
            "--config",
            str(config_path),
            "--run-date",
            RUN_DATE.isoformat(),
            # Applied as session confs through Connect.
            "--conf",
            "spark.sql.shuffle.partitions=2",
        )
    )
    with finished(evaluating) as cli:
        local_config = load_config(config_path, overrides=[f"output.path={local_out}"])
        local = run_evaluate(spark, local_config, RUN_DATE)
    return CliRun(config_path, remote_out, local_out, local, cli)


def test_cli_evaluate_through_connect_writes_what_the_classic_job_writes(
    cli_run: CliRun, server: ConnectServer
) -> None:
    cli, local, remote_out = cli_run.cli, cli_run.local, cli_run.remote_out
    assert cli.returncode == ExitCode.OK, failure(cli, server)
    assert f"connecting to Spark Connect at {server.url}" in cli.stdout
    remote_hash = config_hash(load_config(cli_run.config))
    invalid = sum(local.invalid_counts.values())
    assert f"run_date {RUN_DATE}  run_id " in cli.stdout
    assert f"config_hash {remote_hash}" in cli.stdout
    assert f"{local.n_rows:,} input rows, {invalid:,} invalid (null_score={invalid:,})" in (
        cli.stdout
    )
    assert format_summary(local.summary) in cli.stdout
    tables = sorted(local.tables)
    for table in tables:
        assert f"  {remote_out}/{table}\n" in cli.stdout + "\n", table
    # The job has no alert rules: an empty alerts partition; the windows row holds arrays.
    unchecked = {"calibration_alerts", "calibration_windows"}
    monitoring = {"calibration_drift", *unchecked}
    assert set(TABLE_SCHEMAS) | {"calibration_roc"} | monitoring == set(tables)
    assert sorted(p.name for p in remote_out.iterdir()) == tables
    partition = f"run_date={RUN_DATE.isoformat()}"
    for table in sorted(set(tables) - unchecked):
        remote = read_table(remote_out / table / partition)
        here = read_table(cli_run.local_out / table / partition)
        assert remote["config_hash"].unique().tolist() == [remote_hash], table
        assert remote["run_id"].nunique() == 1, table
        assert here["config_hash"].unique().tolist() == [local.config_hash], table
        assert len(here) > 0, table
        assert_same_table(
            remote.drop(columns=["run_id", "config_hash"]),
            here.drop(columns=["run_id", "config_hash"]),
            table,
        )


def test_cli_report_through_connect_with_master_sc(
    cli_run: CliRun, server: ConnectServer, tmp_path: Path
) -> None:
    """``--master sc://…`` still means Spark Connect; the report reads what the run wrote."""
    report = finish(
        spawn(
            spark_calib(
                "report",
                "--master",
                server.url,
                "--config",
                str(cli_run.config),
                "--run-date",
                RUN_DATE.isoformat(),
                "--out",
                str(tmp_path / "pictures"),
            )
        )
    )

    assert report.returncode == ExitCode.OK, failure(report, server)
    assert sorted(p.name for p in (tmp_path / "pictures").iterdir()) == sorted(
        [f"{kind}_{version}.png" for kind in ("reliability", "roc") for version in VERSIONS]
        + TREND_FIGURES
    )


def test_cli_missing_input_through_connect_exits_with_missing_input(
    cli_run: CliRun, server: ConnectServer, tmp_path: Path
) -> None:
    """Connect resolves a path lazily; the job still says "input not there yet" (exit 3)."""
    evaluated = finish(
        spawn(
            spark_calib(
                "evaluate",
                "--remote",
                server.url,
                "--config",
                str(cli_run.config),
                "--run-date",
                RUN_DATE.isoformat(),
                "--set",
                f"input.path={tmp_path / 'not_landed_yet'}",
            )
        )
    )

    assert evaluated.returncode == ExitCode.MISSING_INPUT, failure(evaluated, server)
    assert evaluated.stderr.splitlines()[-1] == (
        f"spark-calib: error: input path '{tmp_path / 'not_landed_yet'}' does not exist "
        f"or holds no parquet files"
    )


def test_cli_report_through_connect_without_optional_or_any_tables(
    cli_run: CliRun, server: ConnectServer, tmp_path: Path
) -> None:
    """A run without roc_curve has no calibration_roc: the report draws the reliability
    diagrams only. No tables at all: exit 3, as on a classic session."""
    without_roc = tmp_path / "out"
    shutil.copytree(
        cli_run.remote_out, without_roc, ignore=shutil.ignore_patterns("calibration_roc")
    )

    def report(output: Path, pictures: Path) -> subprocess.CompletedProcess[str]:
        return finish(
            spawn(
                spark_calib(
                    "report",
                    "--remote",
                    server.url,
                    "--config",
                    str(cli_run.config),
                    "--run-date",
                    RUN_DATE.isoformat(),
                    "--set",
                    f"output.path={output}",
                    "--out",
                    str(pictures),
                )
            )
        )

    drawn = report(without_roc, tmp_path / "pictures")
    missing = report(tmp_path / "no_output", tmp_path / "none")

    assert drawn.returncode == ExitCode.OK, failure(drawn, server)
    assert sorted(p.name for p in (tmp_path / "pictures").iterdir()) == [
        *[f"reliability_{version}.png" for version in VERSIONS],
        *TREND_FIGURES,
    ]
    assert missing.returncode == ExitCode.MISSING_INPUT, failure(missing, server)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--remote", "localhost:15002"], "needs a Spark Connect URL sc://HOST[:PORT]"),
        (["--remote", "sc://h:1", "--master", "local[2]"], "not allowed with argument"),
    ],
)
def test_remote_takes_only_a_connect_url_and_not_with_master(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "job.yaml"
    config.write_text("task: binary\ncolumns: {score: s, label: l}\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["evaluate", "--config", str(config), *argv])
    assert exit_info.value.code == ExitCode.CONFIG
    assert message in capsys.readouterr().err


def spark_calib(*args: str) -> list[str]:
    return [str(BIN_DIR / "spark-calib"), *args]


def spawn(args: list[str]) -> subprocess.Popen[str]:
    """Start a Connect client process (the environment of a plain shell, not of this one's
    classic session), output captured."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYSPARK_GATEWAY", "SPARK_CONNECT_MODE", "SPARK_REMOTE"))
    }
    return subprocess.Popen(
        args,
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    """Wait for ``process`` (killed after the timeout) and return what it printed."""
    try:
        stdout, stderr = process.communicate(timeout=PROCESS_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
        stderr += f"\n(killed after {PROCESS_TIMEOUT_SECONDS} s)"
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


class Finished:
    """Filled in with the process's outcome when the ``finished`` block ends."""

    returncode: int
    stdout: str
    stderr: str


@contextlib.contextmanager
def finished(process: subprocess.Popen[str]) -> Iterator[Finished]:
    """Run the block while ``process`` runs, then wait for it; kill it if the block fails."""
    outcome = Finished()
    try:
        yield outcome
    except BaseException:
        process.kill()
        process.communicate()
        raise
    done = finish(process)
    outcome.returncode, outcome.stdout, outcome.stderr = done.returncode, done.stdout, done.stderr


def failure(process: subprocess.CompletedProcess[str] | Finished, server: ConnectServer) -> str:
    return (
        f"exit {process.returncode}\n--- stdout\n{process.stdout[-4000:]}\n"
        f"--- stderr\n{process.stderr[-4000:]}\n{server.log_tail()}"
    )


def read_table(path: Path) -> pd.DataFrame:
    """A Parquet directory written by Spark (or one partition of it), as pandas; integer
    columns stay integers (nullable), so that only floating columns are compared loosely."""
    return pq.read_table(path).to_pandas(types_mapper=NULLABLE_INTEGERS.get)


def assert_same_table(left: pd.DataFrame, right: pd.DataFrame, what: str) -> None:
    """The same columns and rows: every non-floating column equal, floating ones within
    ``TOLERANCE`` (absolute, or relative above 1), row order ignored."""
    assert list(left.columns) == list(right.columns), what
    assert len(left) == len(right), what
    values = [
        name
        for name in left.columns
        if pd.api.types.is_float_dtype(left[name].dtype) and name not in FLOAT_KEYS
    ]
    keys = [name for name in left.columns if name not in values]
    if values:
        assert not left.duplicated(subset=keys).any(), f"{what}: keys {keys} are not unique"
    left, right = (_sorted(frame, keys + values) for frame in (left, right))
    pd.testing.assert_frame_equal(left[keys], right[keys], obj=what)
    for name in values:
        np.testing.assert_allclose(
            left[name].to_numpy(dtype=float),
            right[name].to_numpy(dtype=float),
            rtol=TOLERANCE,
            atol=TOLERANCE,
            equal_nan=True,
            err_msg=f"{what}.{name}",
        )


def _sorted(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    return frame.sort_values(by, na_position="first", kind="stable").reset_index(drop=True)
