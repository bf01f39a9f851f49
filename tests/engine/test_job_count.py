"""Small inputs: ``evaluate`` makes one action of its statistics (the aggregation and, in the
same action, the statistics to the driver), and reading its metrics, reliability and stats
starts no further job. Jobs are counted with the status tracker, by job group; the calls from
Python to the JVM (py4j commands) by wrapping py4j's connection."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from py4j import clientserver, protocol
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_calib import evaluate

CONFIG = {
    "task": "binary",
    "columns": {"score": "s", "label": "y", "model_version": "mv"},
    "slices": [[], ["g"]],
}
# The aggregation, the limit and the cache's materialisation under adaptive execution.
MAX_JOBS = 4
# Issue 30's bound. Building the row terms and the statistics as Column operations took about
# 900 (each F.* call is three or more); as two SQL statements it is about 250.
MAX_PY4J_CALLS = 400
# py4j's release of a Java object Python dropped: sent when Python's garbage collector runs,
# so their number depends on what ran before, not on this evaluate.
RELEASE = protocol.MEMORY_COMMAND_NAME + protocol.MEMORY_DEL_SUBCOMMAND_NAME


def _two_hundred_rows(spark: SparkSession) -> DataFrame:
    return spark.range(200).select(
        ((F.col("id") % 97) / 97.0).alias("s"),
        (F.col("id") % 2).cast("int").alias("y"),
        (F.col("id") % 3).cast("string").alias("g"),
        F.lit("v1").alias("mv"),
    )


def test_evaluate_of_200_rows_and_its_outputs_launch_at_most_four_jobs(
    spark: SparkSession,
) -> None:
    df = _two_hundred_rows(spark)
    context = spark.sparkContext
    group = f"job-count-{uuid.uuid4()}"
    context.setJobGroup(group, "evaluate of 200 rows")
    try:
        result = evaluate(df, CONFIG)
        metrics = result.metrics.collect()
        reliability = result.reliability.collect()
        stats = result.stats.collect()
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    jobs = context.statusTracker().getJobIdsForGroup(group)
    assert len({row.metric for row in metrics}) == 7
    assert len(reliability) == 4 * 15
    assert sum(row.n for row in stats if row.slice_name == "overall") == 200
    assert 0 < len(jobs) <= MAX_JOBS, jobs
    result.unpersist()


@pytest.fixture
def py4j_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The py4j commands sent while the test runs, releases of dropped objects excepted."""
    sent: list[str] = []
    original = clientserver.ClientServerConnection.send_command

    def counted(self: clientserver.ClientServerConnection, command: str) -> str:
        if not command.startswith(RELEASE):
            sent.append(command)
        return original(self, command)

    monkeypatch.setattr(clientserver.ClientServerConnection, "send_command", counted)
    yield sent


def test_evaluate_of_200_rows_and_its_outputs_make_at_most_400_py4j_calls(
    spark: SparkSession, py4j_calls: list[str]
) -> None:
    df = _two_hundred_rows(spark)
    warm = evaluate(df, CONFIG)  # the first call in a process also resolves py4j's classes
    warm.unpersist()
    py4j_calls.clear()
    result = evaluate(df, CONFIG)
    assert len(result.metrics.collect()) > 0
    assert len(result.reliability.collect()) == 4 * 15
    assert len(result.stats.collect()) > 0
    calls = len(py4j_calls)
    result.unpersist()
    # The wrapper sees the suite's py4j connection, so a count of 0 would mean it saw nothing.
    assert 0 < calls <= MAX_PY4J_CALLS, calls
