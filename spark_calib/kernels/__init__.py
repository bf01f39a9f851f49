"""Statistics → outputs: pure NumPy kernels over one key's statistics.

The second of the two layers (``docs/architecture.md``). Spark aggregates the rows into the
statistics table; everything after that is a function of one slice key's statistics rows,
given as arrays, that returns that key's rows of the outputs. These modules import NumPy (and,
at the boundary, ``arrow_batch``, pyarrow) and the names-only ``spark_calib.stats.schema``,
never pyspark: they are tested without a SparkSession and are pickled by value to the Python
workers (``spark_calib.metrics.finish``), so executors need no spark_calib installed.

- ``arrow_batch``: the boundary, one key's Arrow table → arrays, and the output rows → Arrow;
- ``registry``: the kernels by name;
- ``calibration``: the calibration and per-class metric families;
- ``intervals``: standard errors by jackknife, intervals and n_eff.
"""
