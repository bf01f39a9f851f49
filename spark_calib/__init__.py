"""spark_calib: calibration and evaluation metrics for prediction logs, as one-pass Spark jobs.

Public API: ``evaluate`` (DataFrame + config → EvaluationResult), ``metrics_from_stats`` and
``reliability_from_stats`` (recompute outputs from a statistics table), ``combine_stats``
(merge statistics of several runs), ``load_config`` and the error types.
"""

from spark_calib.config import Config, config_hash, load_config
from spark_calib.errors import (
    ConfigError,
    InvalidRowsError,
    SchemaError,
    SparkCalibError,
)
from spark_calib.evaluate import evaluate
from spark_calib.metrics.compute import metrics_from_stats
from spark_calib.metrics.reliability import reliability_from_stats
from spark_calib.registry import available_metrics
from spark_calib.result import EvaluationResult
from spark_calib.stats.combine import combine_stats

__all__ = [
    "Config",
    "ConfigError",
    "EvaluationResult",
    "InvalidRowsError",
    "SchemaError",
    "SparkCalibError",
    "available_metrics",
    "combine_stats",
    "config_hash",
    "evaluate",
    "load_config",
    "metrics_from_stats",
    "reliability_from_stats",
]
