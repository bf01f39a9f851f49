"""Monitoring over time: the sampling noise of a window's metrics, drift against the previous
window and a baseline, and alert rules. Every function turns statistics or metric frames into
small frames; the job layer reads and writes the tables."""

from spark_calib.monitoring.alerts import FAIL, MESSAGE, RULE, fired_alerts
from spark_calib.monitoring.drift import (
    drift_table,
    metric_values,
    needs_noise_model,
    window_values,
)
from spark_calib.monitoring.noise import standard_errors

__all__ = [
    "FAIL",
    "MESSAGE",
    "RULE",
    "drift_table",
    "fired_alerts",
    "metric_values",
    "needs_noise_model",
    "standard_errors",
    "window_values",
]
