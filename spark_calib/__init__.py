"""spark_calib: calibration and evaluation metrics for prediction logs, as one-pass Spark jobs.

Public API: ``evaluate`` (DataFrame + config → EvaluationResult), ``evaluate_days`` (each
day of a date range in one scan; ``fold_run_date`` and ``split_run_date`` key its frames by
day and back), ``metrics_from_stats`` and
``reliability_from_stats`` (recompute outputs from a statistics table), ``combine_stats``
(merge statistics of several runs), ``sum_to_bins`` (the same, summed to the calibration
bins), ``sum_over_cells`` and ``bin_grain`` (summed over the fine cells, as the outputs that
read none need them), ``recalibration_from_stats`` (fit the recalibration maps from a
statistics table) and ``recalibrate`` (apply them to rows),
``outputs_from_stats`` (the metrics, reliability, recalibration and row counts of a
statistics table from one read of it, as a rollup writes them),
``search_slices`` (rank the crossed segments where calibration breaks), ``row_counts`` (valid
and invalid rows of a statistics table), ``load_config``, the slice-value helpers
``slice_name`` and ``decode_slice_value``, ``input_col`` (a column of the input by its
configured, possibly dotted, name) and the error types. The public modules
``spark_calib.config``, ``spark_calib.constants``, ``spark_calib.errors``,
``spark_calib.monitoring``, ``spark_calib.stats.schema`` (the statistics table's columns) and
``spark_calib.windows`` are part of it too.
"""

from spark_calib.config import Config, config_hash, load_config
from spark_calib.days import DayEvaluation, evaluate_days, fold_run_date, split_run_date
from spark_calib.errors import (
    ConfigError,
    InvalidRowsError,
    SchemaError,
    SparkCalibError,
)
from spark_calib.evaluate import evaluate
from spark_calib.metrics.compute import metrics_from_stats
from spark_calib.metrics.reliability import RELIABILITY_COLUMNS, reliability_from_stats
from spark_calib.recalibration.apply import recalibrate
from spark_calib.recalibration.table import recalibration_from_stats
from spark_calib.registry import available_metrics
from spark_calib.result import EvaluationResult
from spark_calib.rows.columns import input_col
from spark_calib.slice_search import SliceSearchResult, search_slices
from spark_calib.slicing.values import decode_slice_value, slice_name
from spark_calib.stats.combine import bin_grain, combine_stats, sum_over_cells, sum_to_bins
from spark_calib.stats.counts import row_counts
from spark_calib.window_outputs import StatsOutputs, outputs_from_stats

__all__ = [
    "RELIABILITY_COLUMNS",
    "Config",
    "ConfigError",
    "DayEvaluation",
    "EvaluationResult",
    "InvalidRowsError",
    "SchemaError",
    "SliceSearchResult",
    "SparkCalibError",
    "StatsOutputs",
    "available_metrics",
    "bin_grain",
    "combine_stats",
    "config_hash",
    "decode_slice_value",
    "evaluate",
    "evaluate_days",
    "fold_run_date",
    "input_col",
    "load_config",
    "metrics_from_stats",
    "outputs_from_stats",
    "recalibrate",
    "recalibration_from_stats",
    "reliability_from_stats",
    "row_counts",
    "search_slices",
    "slice_name",
    "split_run_date",
    "sum_over_cells",
    "sum_to_bins",
]
