"""Statistics → the ``reliability`` table (reliability diagrams), every bin of every key.

The rows are the NumPy kernel's (``spark_calib.kernels.reliability``, where the definitions
are: edges, means, gap, n_eff and the Wilson interval), run by ``spark_calib.metrics.finish``.

Output columns: model_version, slice_name, slice_value, class, bin, bin_lower, bin_upper, n,
weight_sum, mean_confidence, accuracy, gap, n_eff, ci_lower, ci_upper.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from spark_calib.config import ConfigSource, load_config
from spark_calib.kernels.output_columns import RELIABILITY_COLUMNS
from spark_calib.metrics.finish import RELIABILITY, finish, statistics_head

__all__ = ["RELIABILITY_COLUMNS", "reliability_from_stats"]


def reliability_from_stats(stats_df: DataFrame, config: ConfigSource) -> DataFrame:
    """All ``binning.n_bins`` bins per key, filled from the valid statistics (equal-mass bins
    need the fine cells: pass statistics that hold them). Runs one Spark job at once."""
    cfg = load_config(config)
    head = statistics_head(stats_df)
    return finish(stats_df, cfg, [], (RELIABILITY,), head).outputs[RELIABILITY]
