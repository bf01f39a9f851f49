"""Where a spark_calib run's time goes: aggregation, finishing and writing.

Each timed run records the wall time of its ``evaluate`` call and of its writes
(``bench.spark_variants.RunPhases``). ``evaluate`` aggregates the log into the statistics and
caches them; when they have at most ``DRIVER_MAX_ROWS`` rows, it brings them to the driver in
that one action and finishes every output there with the NumPy kernels, else it only plans the
grouped ``applyInArrow`` pass, which then runs inside the first writes.

The kernels are timed alone after the rounds, outside the timed runs (``time_finishing``): the
last run's written statistics table is read back and cached, and finished as ``evaluate``
finishes it (``spark_calib.evaluate._finished``, from a ``toArrow()`` of it below the driver
threshold, else the grouped pass with its outputs written to Spark's ``noop`` sink). Then
(``phases``): on the driver path, aggregation = evaluate − finishing and writing = the writes;
on the grouped path, aggregation = evaluate and writing = the writes − finishing.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import SparkSession

from bench.aggregation_floor import write_noop
from bench.configs import Config
from bench.spark_variants import RunPhases
from spark_calib.config import load_config
from spark_calib.evaluate import _finished, _outputs
from spark_calib.metrics.finish import DRIVER_MAX_ROWS, statistics_head
from spark_calib.registry import resolve_metrics

DRIVER = "driver"
GROUPED = "grouped"
DECIMALS = 4


def time_finishing(
    spark: SparkSession,
    cfg: Config,
    stats_path: Path,
    repeats: int,
    warmup: bool = True,
    clock: Callable[[], float] = time.perf_counter,
    driver_max_rows: int = DRIVER_MAX_ROWS,
) -> dict[str, Any]:
    """Seconds the kernels take to finish the statistics Parquet table at ``stats_path`` as
    ``evaluate`` finishes them for ``cfg``: one warm-up run (when ``warmup``), then ``repeats``
    runs. On the driver path a run is ``_finished`` on the Arrow table (the kernels and the
    local frames of their outputs); on the grouped path it is ``_finished`` and every output
    written to the ``noop`` sink. The ``toArrow()`` of the cached statistics is timed once,
    apart (``statistics_to_arrow_s``: in a timed run it is part of evaluate's aggregation).
    ``driver_max_rows``: evaluate's threshold (tests lower it to take the grouped path)."""
    config = load_config(cfg)
    specs = resolve_metrics(config.task, config.metrics, config.features())
    outputs = _outputs(config, specs)
    stats = spark.read.parquet(str(stats_path)).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        rows = stats.count()
        started = clock()
        head = statistics_head(stats, driver_max_rows)
        to_arrow_s = clock() - started

        def once() -> float:
            start = clock()
            finished = _finished(stats, head, config, specs, outputs)
            if head is None:
                for frame in finished.outputs.values():
                    write_noop(frame)
            elapsed = clock() - start
            for frame in finished.cached:
                frame.unpersist()
            return elapsed

        if warmup:
            once()
        runs = [once() for _ in range(repeats)]
    finally:
        stats.unpersist()
    return {
        "path": DRIVER if head is not None else GROUPED,
        "statistics_rows": rows,
        "driver_max_rows": driver_max_rows,
        "statistics_to_arrow_s": round(to_arrow_s, DECIMALS) if head is not None else None,
        "finishing_runs_s": [round(run, DECIMALS) for run in runs],
        "finishing_s": round(statistics.median(runs), DECIMALS),
    }


def timed_runs(runs: Sequence[RunPhases], warmup_ran: bool) -> list[RunPhases]:
    """The entries of the timed runs among a runner's ``phases``: without the first (the
    warm-up's) when a warm-up ran and is not itself the measurement (``warmup_ran``)."""
    return list(runs[1:] if warmup_ran else runs)


def phases(runs: Sequence[RunPhases], finishing: dict[str, Any]) -> dict[str, Any]:
    """The medians of the timed runs' evaluate and write times, and the three phases they
    split into with ``finishing`` (``time_finishing``'s result): see the module docstring."""
    evaluate_s = statistics.median(run.evaluate_s for run in runs)
    write_s = statistics.median(run.write_s for run in runs)
    finishing_s = finishing["finishing_s"]
    driver = finishing["path"] == DRIVER
    aggregation_s = evaluate_s - finishing_s if driver else evaluate_s
    writing_s = write_s if driver else write_s - finishing_s
    return {
        "aggregation_s": round(aggregation_s, DECIMALS),
        "finishing_s": round(finishing_s, DECIMALS),
        "writing_s": round(writing_s, DECIMALS),
        "evaluate_s": round(evaluate_s, DECIMALS),
        "write_s": round(write_s, DECIMALS),
        "evaluate_runs_s": [round(run.evaluate_s, DECIMALS) for run in runs],
        "write_runs_s": [round(run.write_s, DECIMALS) for run in runs],
        **{key: value for key, value in finishing.items() if key != "finishing_s"},
    }
