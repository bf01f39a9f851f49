"""Statistics → the long ``metrics`` table.

Every metric family is finished by a NumPy kernel of one key's statistics
(``spark_calib.kernels``; ``spark_calib.metrics.finish`` runs them, on the driver or in one
grouped Arrow pass), with its standard errors and intervals.

Output columns: the metrics table's (``TABLE_COLUMNS``).
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from spark_calib.config import ConfigSource, load_config
from spark_calib.metrics.finish import finished_metrics, finished_specs, reads_cells
from spark_calib.registry import resolve_metrics


def metrics_from_stats(
    stats_df: DataFrame, config: ConfigSource, *, bin_stats: DataFrame | None = None
) -> DataFrame:
    """The metrics table of ``config.metrics`` computed from a statistics table alone, with the
    standard errors and intervals of ``config.uncertainty`` (``spark_calib.metrics.uncertainty``).

    Exact ranking metrics (``roc_auc``, ``pr_auc``) need the input and are left out here;
    ``evaluate`` adds them. Tables (``confusion_matrix``, …) are separate outputs. A value is
    null when its denominator is 0 or a sum overflowed.

    ``bin_stats``, when given, is ``stats_df`` summed over the fine cells (``sum_over_cells``):
    read instead of ``stats_df`` when no requested metric needs the cells. Runs one Spark job
    at once (the statistics to the driver, or the grouped pass when they are many).
    """
    cfg = load_config(config)
    specs = finished_specs(resolve_metrics(cfg.task, cfg.metrics, cfg.features()))
    source = stats_df if bin_stats is None or reads_cells(cfg, specs) else bin_stats
    return finished_metrics(source, cfg, specs)
