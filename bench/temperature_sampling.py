"""``python -m bench.temperature_sampling``: what fitting the multiclass temperature on a sample
does to T, against the fit on every row, per model version and slice.

For each log, ``evaluate`` runs twice with ``recalibration: {methods: [temperature], after:
none}``: with ``max_fit_rows`` (the sample) and with ``max_fit_rows: null`` (every fit row).
The logs:

- the benchmark's ``multiclass10`` and ``multiclass100`` logs (``bench.generate``, cached
  under ``--cache``) with the benchmark's four slice sets, at ``--rows`` and ``--rows-100``;
- the CIFAR-10-LT ResNet-110 logits of ``tests/data`` (10,216 fit rows, fitted on the
  validation split), with ``--cifar-max-fit-rows`` (their 20,216 valid rows exceed it, so the
  fit reads about half of the validation split).

Prints, per key, n_fit, the sampling rate and both T with their relative difference, and writes
them as JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark.sql import SparkSession

from bench import configs as C
from bench.generate import ensure_log
from bench.session import build_session
from spark_calib import evaluate

CIFAR = Path("tests/data/cifar10_lt_resnet110.parquet")
DEFAULT_CACHE = Path("bench/data")


def _fits(spark: SparkSession, path: str, config: dict[str, Any]) -> dict[str, Any]:
    """(slice name=value) → n_fit, fit_sample_rate, temperature; and the run's seconds."""
    frame = spark.read.parquet(path)
    started = time.perf_counter()
    result = evaluate(frame, config)
    assert result.recalibration is not None
    table: pd.DataFrame = result.recalibration.toPandas()
    seconds = time.perf_counter() - started
    result.unpersist()
    found = {}
    for r in table.itertuples():
        key = f"{r.model_version}/{r.slice_name}={r.slice_value}"
        parameters = dict(r.parameters or {})
        found[key] = {
            "n_fit": int(r.n_fit),
            "fallback": bool(r.fallback),
            "rate": parameters.get("fit_sample_rate"),
            "temperature": parameters.get("temperature"),
        }
    return {"keys": found, "seconds": seconds}


def _compare(
    spark: SparkSession, name: str, path: str, config: dict[str, Any], max_fit_rows: int
) -> dict[str, Any]:
    recalibration = {
        **config.get("recalibration", {}),
        "methods": ["temperature"],
        "after": "none",
    }
    sampled = _fits(
        spark, path, {**config, "recalibration": {**recalibration, "max_fit_rows": max_fit_rows}}
    )
    every = _fits(spark, path, {**config, "recalibration": {**recalibration, "max_fit_rows": None}})
    rows = []
    for key, fit in sampled["keys"].items():
        full = every["keys"][key]
        if fit["temperature"] is None or full["temperature"] is None or fit["fallback"]:
            continue
        difference = fit["temperature"] / full["temperature"] - 1.0
        rows.append(
            {
                "key": key,
                **fit,
                "temperature_all": full["temperature"],
                "n_fit_all": full["n_fit"],
                "relative_difference": difference,
            }
        )
        print(
            f"{name:14s} {key:32s} n_fit {fit['n_fit']:>9,} of {full['n_fit']:>10,} "
            f"T {fit['temperature']:.6f} vs {full['temperature']:.6f} ({difference:+.2e})"
        )
    worst = max(abs(r["relative_difference"]) for r in rows)
    print(
        f"{name}: worst |ΔT/T| {worst:.2e}; sampled {sampled['seconds']:.1f} s, "
        f"all rows {every['seconds']:.1f} s"
    )
    return {
        "log": name,
        "max_fit_rows": max_fit_rows,
        "keys": rows,
        "worst": worst,
        "seconds_sampled": sampled["seconds"],
        "seconds_all": every["seconds"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--rows-100", type=int, default=2_000_000, help="0 to skip K = 100")
    parser.add_argument("--max-fit-rows", type=int, default=1_000_000)
    parser.add_argument("--cifar-max-fit-rows", type=int, default=10_000)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--out", type=Path, default=Path("bench/results/temperature-sampling.json"))
    args = parser.parse_args()
    spark = build_session()
    records = []
    for task, rows in (("multiclass10", args.rows), ("multiclass100", args.rows_100)):
        if rows <= 0:
            continue
        path = str(ensure_log(spark, args.cache, task, rows))
        config = C.config(task, C.TYPICAL_SLICES, ["ece"])
        records.append(_compare(spark, f"{task} {rows:,}", path, config, args.max_fit_rows))
    cifar = {
        "task": "multiclass",
        "columns": {"logits": "logits", "label": "label"},
        "binning": {"n_bins": 15, "edges": "right_closed"},
        "metrics": ["ece"],
    }
    cifar_fit = {"fit": {"column": "split", "value": "val"}}
    records.append(
        _compare(
            spark,
            "cifar10-lt",
            str(CIFAR),
            {**cifar, "recalibration": cifar_fit},  # the fit split; _compare adds the rest
            args.cifar_max_fit_rows,
        )
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(records, indent=2) + "\n")
    spark.stop()


if __name__ == "__main__":
    main()
