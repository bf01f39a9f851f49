"""Every output a statistics table gives, from one read of it: what a rollup writes.

``metrics_from_stats``, ``reliability_from_stats`` and ``recalibration_from_stats`` each read
their statistics on their own (three actions, and the recalibration's cells merged in Spark).
``outputs_from_stats`` reads the table once, as ``evaluate`` does after its scan: when the
statistics are few (``statistics_head``) they come to the driver whole and every output is
finished there from that one Arrow table; else the metrics and reliability are finished in
one grouped pass and the recalibration merges its cells in Spark.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame

from spark_calib.config import ConfigSource, load_config
from spark_calib.metrics.finish import (
    METRICS,
    RELIABILITY,
    finish,
    finished_specs,
    reads_cells,
    statistics_head,
)
from spark_calib.recalibration.table import recalibration_table
from spark_calib.registry import resolve_metrics
from spark_calib.stats.counts import counts_by_reason, row_counts


@dataclass(frozen=True)
class StatsOutputs:
    """The outputs of one statistics table.

    - ``metrics``: ``metrics_from_stats``' rows;
    - ``reliability``: ``reliability_from_stats``' rows;
    - ``recalibration``: ``recalibration_from_stats``' rows, or None when the config has no
      binary or top-label ``recalibration`` section (a multiclass temperature needs rows);
    - ``row_counts``: input rows per reason (None = valid), as ``row_counts``;
    - ``cached``: frames cached for them (the grouped pass's), released by ``unpersist``.
    """

    metrics: DataFrame
    reliability: DataFrame
    recalibration: DataFrame | None
    row_counts: dict[str | None, int]
    cached: tuple[DataFrame, ...] = ()

    def unpersist(self) -> None:
        """Release the frames cached for these outputs."""
        for frame in self.cached:
            frame.unpersist()


def outputs_from_stats(
    stats_df: DataFrame, config: ConfigSource, *, bin_stats: DataFrame | None = None
) -> StatsOutputs:
    """The metrics, reliability, recalibration and row counts of ``stats_df`` (see the module
    docstring), equal to those of the three ``…_from_stats`` functions and ``row_counts`` up to
    the order of floating-point sums.

    ``bin_stats``, when given, is ``stats_df`` summed over the fine cells (``sum_over_cells``):
    read instead of ``stats_df`` when neither the metrics, the reliability nor a
    recalibration reads the cells. Runs one Spark job at once when the statistics are few.
    """
    cfg = load_config(config)
    specs = finished_specs(resolve_metrics(cfg.task, cfg.metrics, cfg.features()))
    outputs = (METRICS, RELIABILITY)
    recalibrating = cfg.recalibration is not None and cfg.task != "multiclass"
    cells = recalibrating or reads_cells(cfg, specs, outputs)
    source = stats_df if bin_stats is None or cells else bin_stats
    head = statistics_head(source)
    finished = finish(source, cfg, specs, outputs, head)
    recalibration = (
        recalibration_table(stats_df, cfg, head=head if source is stats_df else None)
        if recalibrating
        else None
    )
    counts = row_counts(source, cfg) if head is None else counts_by_reason(head, cfg)
    return StatsOutputs(
        metrics=finished.outputs[METRICS],
        reliability=finished.outputs[RELIABILITY],
        recalibration=recalibration,
        row_counts=counts,
        cached=finished.cached,
    )
