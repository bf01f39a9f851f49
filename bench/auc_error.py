"""``python -m bench.auc_error``: the binned AUCs against the exact ones on the benchmark's logs.

For each log (``binary``, ``ctr``; ``bench.generate``, cached in ``--cache``) one ``evaluate``
with ``roc_auc``, ``pr_auc`` (exact, a second pass over the rows) and their binned versions from
the fine cells, over the slice sets [], [country], [device] and [country, device]; it prints,
per binned metric, the median and largest |binned − exact| over every key, how many keys are
above ``--tolerance``, and whether every error is within its row's ``error_bound``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

import spark_calib
from bench.generate import BINARY_LOG, CTR_LOG, ensure_log
from bench.run import DEFAULT_CACHE, DEFAULT_ROWS
from bench.session import build_session

KEY = ["model_version", "slice_name", "slice_value"]
PAIRS = (("roc_auc_binned", "roc_auc"), ("pr_auc_binned", "pr_auc"))


def config() -> dict[str, object]:
    """The typical slices, the four AUCs and no intervals."""
    return {
        "task": "binary",
        "columns": {"score": "score", "label": "label", "model_version": "model_version"},
        "slices": [[], ["country"], ["device"], ["country", "device"]],
        "metrics": [name for pair in PAIRS for name in pair],
        "uncertainty": {"method": "none"},
    }


def errors_text(metrics: pd.DataFrame, task: str, rows: int, tolerance: float) -> list[str]:
    """One line per binned metric: its errors against the exact metric over the keys."""
    values = metrics.pivot_table(index=KEY, columns="metric", values="value")
    bounds = metrics.pivot_table(index=KEY, columns="metric", values="error_bound")
    lines = []
    for binned, exact in PAIRS:
        error = (values[binned] - values[exact]).abs().dropna()
        within = bool((error <= bounds[binned].reindex(error.index) + 1e-15).all())
        lines.append(
            f"{task}, {rows:,} rows: |{binned} − {exact}| over {len(error)} keys: "
            f"median {error.median():.2e}, max {error.max():.2e}, "
            f"{int((error > tolerance).sum())} keys above {tolerance:g}; "
            f"all within error_bound: {within}"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--tolerance", type=float, default=1e-4)
    args = parser.parse_args()
    spark = build_session()
    try:
        for task in (BINARY_LOG, CTR_LOG):
            log = spark.read.parquet(str(ensure_log(spark, args.cache, task, args.rows)))
            result = spark_calib.evaluate(log, config())
            metrics = result.metrics.select(*KEY, "metric", "value", "error_bound").toPandas()
            result.unpersist()
            print("\n".join(errors_text(metrics, task, args.rows, args.tolerance)), flush=True)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
