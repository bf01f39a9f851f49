"""Benchmark harness of spark_calib: wall-clock time against a scan floor and two baselines.

``python -m bench.run`` (or ``make bench``) generates seeded Parquet logs (``bench.generate``),
times the scan floor, the bare aggregation at each case's grain (``bench.aggregation_floor``),
spark_calib, MLlib's evaluators and a pandas/NumPy implementation in one Spark session, splits
spark_calib's time into aggregation, finishing and writing (``bench.phases``), writes
``bench/results/<date>.json`` and renders ``docs/benchmarks.md``.
"""
