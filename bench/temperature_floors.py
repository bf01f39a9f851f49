"""``python -m bench.temperature_floors``: what each part of the multiclass temperature fit adds
to ``evaluate``, timed in one process, alternating, with medians.

For each log (the benchmark's ``multiclass10`` and ``multiclass100`` logs of ``bench.generate``,
cached under ``--cache``, with the benchmark's four slice sets), each round times:

- ``scan``: the log read to Spark's ``noop`` sink (every value read, nothing computed);
- ``evaluate``: the task's default metrics;
- ``sample``: ``evaluate`` with ``recalibration: {methods: [temperature], after: none}``
  whose fit stops once its sample is cached and counted (the second read of the log);
- ``sample_first``: the same fit stopped after its first pass (the nine β), each key taking
  its start β, with no Newton pass;
- ``fit_only``: the whole fit (``after: none``), as the benchmark's fit-only variant.

The two stopped fits wrap the fit's private first pass (``temperature_fit._first_pass``), so
they measure the floors of a fit that reads the log once more (``sample``) or reads it once
more and passes over the sample once (``sample_first``), which no configuration runs. The
tables' rows of those two runs are not exact and are not read.

Prints each round and the medians with their ratio to ``evaluate``, and writes them as JSON to
``--out``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame

import spark_calib.recalibration.temperature_fit as temperature_fit
from bench import configs as C
from bench.generate import ensure_log
from bench.session import build_session
from spark_calib import evaluate
from spark_calib.config import Config
from spark_calib.recalibration.points import Key
from spark_calib.recalibration.temperature_search import SearchState

DEFAULT_CACHE = Path("bench/data")
VARIANTS = ("scan", "evaluate", "sample", "sample_first", "fit_only")


@contextmanager
def _stopped_fit(stop: str) -> Iterator[None]:
    """While held, the fit stops after its sample (``sample``) or its first pass (``first``)."""
    first_pass = temperature_fit._first_pass

    def stopped(
        sample: DataFrame, config: Config, sets: Sequence[Sequence[str]], num_classes: int
    ) -> tuple[dict[Key, int], dict[Key, SearchState], temperature_fit._Groups]:
        if stop == "sample":
            sample.count()
            return {}, {}, temperature_fit._Groups()
        counts, states, groups = first_pass(sample, config, sets, num_classes)
        ended = {
            key: state
            if state.done
            else SearchState(state.low, state.high, state.beta, state.passes, 1.0 / state.beta)
            for key, state in states.items()
        }
        return counts, ended, groups

    temperature_fit._first_pass = stopped
    try:
        yield
    finally:
        temperature_fit._first_pass = first_pass


def _seconds(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def _round(frame: DataFrame, task: str) -> dict[str, float]:
    """One time of each variant, in ``VARIANTS`` order."""
    plain = C.config(task, C.TYPICAL_SLICES)
    fit = {**plain, "recalibration": {"methods": ["temperature"], "after": "none"}}

    def evaluated(config: Any, stop: str | None = None) -> Callable[[], object]:
        def run() -> object:
            if stop is None:
                return evaluate(frame, config).metrics.count()
            with _stopped_fit(stop):
                return evaluate(frame, config).metrics.count()

        return run

    return {
        "scan": _seconds(lambda: frame.write.format("noop").mode("overwrite").save()),
        "evaluate": _seconds(evaluated(plain)),
        "sample": _seconds(evaluated(fit, "sample")),
        "sample_first": _seconds(evaluated(fit, "first")),
        "fit_only": _seconds(evaluated(fit)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000_000, help="multiclass10 rows")
    parser.add_argument("--rows-100", type=int, default=2_000_000, help="0 to skip K = 100")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--out", type=Path, default=Path("bench/results/temperature-floors.json"))
    args = parser.parse_args()
    spark = build_session()
    records = []
    for task, rows in (("multiclass10", args.rows), ("multiclass100", args.rows_100)):
        if rows <= 0:
            continue
        frame = spark.read.parquet(str(ensure_log(spark, args.cache, task, rows)))
        evaluate(frame, C.config(task, C.TYPICAL_SLICES)).metrics.count()  # warm-up
        times: dict[str, list[float]] = {name: [] for name in VARIANTS}
        for _ in range(args.repeats):
            for name, seconds in _round(frame, task).items():
                times[name].append(seconds)
            print(task, rows, {name: round(t[-1], 2) for name, t in times.items()}, flush=True)
        medians = {name: statistics.median(t) for name, t in times.items()}
        ratios = {name: m / medians["evaluate"] for name, m in medians.items()}
        print(task, rows, "medians", {n: round(m, 2) for n, m in medians.items()}, flush=True)
        print(task, rows, "x evaluate", {n: round(r, 3) for n, r in ratios.items()}, flush=True)
        records.append(
            {"task": task, "rows": rows, "times": times, "medians": medians, "ratios": ratios}
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(records, indent=2) + "\n")


if __name__ == "__main__":
    main()
