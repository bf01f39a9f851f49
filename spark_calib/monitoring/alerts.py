"""Alert rules (config ``alerts``) on a window's metrics and drift.

A rule selects rows by ``metric``, ``slice`` (a configured slice set; every set when omitted)
and ``model_version`` (every version when omitted), and ignores rows with fewer than ``min_n``
rows. Then it fires for each selected row where:

- ``max``: value > max; ``min``: value < min (on the metrics table's value);
- ``max_increase``: delta > max_increase; ``max_decrease``: −delta > max_decrease, where
  delta = value − reference value against ``compare_to`` (the previous window or the baseline,
  from the drift table), both windows have at least ``min_n`` rows, and the change is above the
  sampling noise: |z| ≥ ``drift.z`` when the metric has a noise model (see
  ``spark_calib.monitoring.drift``).

``min_z`` (optional) asks for more evidence: a value rule fires only when the value is beyond
its threshold by at least ``min_z`` standard errors (the metrics table's ``se``); a change rule
only when |z| ≥ ``min_z`` (instead of ``drift.z``), and never when z is undefined.

Comparisons are strict, so a value exactly at the threshold does not fire; a null value never
fires.

Output columns: rule_index, rule, condition, threshold, fail, metric, model_version, slice_name,
slice_value, class, value, reference_value, delta, z, n, message.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_calib.config import Config
from spark_calib.config.monitoring import AlertRule
from spark_calib.metrics.output import METRIC, SE, VALUE
from spark_calib.slicing.values import slice_name
from spark_calib.stats import schema as stats

RULE_INDEX = "rule_index"
RULE = "rule"
CONDITION = "condition"
THRESHOLD = "threshold"
FAIL = "fail"
REFERENCE_VALUE = "reference_value"
DELTA = "delta"
Z = "z"
MESSAGE = "message"
ALERT_COLUMNS = (
    RULE_INDEX,
    RULE,
    CONDITION,
    THRESHOLD,
    FAIL,
    METRIC,
    *stats.KEY_COLUMNS,
    VALUE,
    REFERENCE_VALUE,
    DELTA,
    Z,
    stats.N,
    MESSAGE,
)


def fired_alerts(
    metrics: DataFrame, drift: DataFrame, config: Config, carried: Sequence[str] = ()
) -> DataFrame:
    """The rows where a rule of ``config.alerts`` fires (``ALERT_COLUMNS``; no rows when none
    does). ``metrics`` is the window's metrics table, ``drift`` its drift table.

    ``carried``: columns of both tables that each alert row keeps, first, as a further key (a
    backfill's ``run_date``: every date's alerts in one plan). The rules do not read them."""
    frames = [
        _change_alerts(drift, rule, index, config.drift.z, carried)
        if rule.on_change
        else _value_alerts(metrics, rule, index, carried)
        for index, rule in enumerate(config.alerts)
    ]
    if not frames:
        return _no_alerts(metrics, carried)
    fired = frames[0]
    for frame in frames[1:]:
        fired = fired.unionByName(frame)
    return fired


def _value_alerts(
    metrics: DataFrame, rule: AlertRule, index: int, carried: Sequence[str]
) -> DataFrame:
    value = F.col(VALUE)
    fires = (
        value > F.lit(rule.threshold) if rule.condition == "max" else value < F.lit(rule.threshold)
    )
    if rule.min_z is not None:
        # Beyond the threshold by at least min_z standard errors of the value.
        beyond = (
            value - F.lit(rule.threshold)
            if rule.condition == "max"
            else F.lit(rule.threshold) - value
        )
        fires = fires & (F.try_divide(beyond, F.col(SE)) >= F.lit(rule.min_z))
    selected = _selected(metrics, rule).where(F.col(stats.N) >= F.lit(rule.min_n)).where(fires)
    sign = ">" if rule.condition == "max" else "<"
    message = F.format_string(
        f"%s = %.4f {sign} {rule.condition} {rule.threshold:g} (%s, n=%d)",
        F.col(METRIC),
        value,
        _where(),
        F.col(stats.N),
    )
    no_reference = F.lit(None).cast("double")
    return _alert_rows(
        selected, rule, index, value, no_reference, no_reference, no_reference, message, carried
    )


def _change_alerts(
    drift: DataFrame, rule: AlertRule, index: int, z_min: float, carried: Sequence[str]
) -> DataFrame:
    prefix = rule.compare_to
    delta, z = F.col(f"{prefix}_delta"), F.col(f"{prefix}_z")
    reference, reference_n = F.col(f"{prefix}_value"), F.col(f"{prefix}_n")
    change = delta if rule.condition == "max_increase" else -delta
    if rule.min_z is not None:
        above_noise = F.coalesce(F.abs(z) >= F.lit(rule.min_z), F.lit(False))
    else:
        above_noise = F.coalesce(F.abs(z) >= F.lit(z_min), F.lit(True))
    fires = (
        (change > F.lit(rule.threshold))
        & above_noise
        & (F.col(stats.N) >= F.lit(rule.min_n))
        & (reference_n >= F.lit(rule.min_n))
    )
    selected = _selected(drift, rule).where(fires)
    word = "increase" if rule.condition == "max_increase" else "decrease"
    message = F.format_string(
        f"%s %s from %.4f to %.4f ({word} %.4f > {rule.threshold:g}, z=%s) (%s, n=%d)",
        F.col(METRIC),
        F.lit(f"vs {prefix}"),
        reference,
        F.col(VALUE),
        F.abs(delta),
        F.coalesce(F.format_number(z, 1), F.lit("n/a")),
        _where(),
        F.col(stats.N),
    )
    return _alert_rows(selected, rule, index, F.col(VALUE), reference, delta, z, message, carried)


def _selected(frame: DataFrame, rule: AlertRule) -> DataFrame:
    condition = F.col(METRIC) == F.lit(rule.metric)
    if rule.slice is not None:
        condition = condition & (F.col(stats.SLICE_NAME) == F.lit(slice_name(rule.slice)))
    if rule.model_version is not None:
        condition = condition & (F.col(stats.MODEL_VERSION) == F.lit(rule.model_version))
    return frame.where(condition)


def _where() -> Column:
    """``v1, country=MX`` (``overall`` for the overall slice), for the message."""
    version = F.coalesce(F.col(stats.MODEL_VERSION), F.lit("all versions"))
    piece = F.when(F.col(stats.SLICE_VALUE) == F.lit(""), F.col(stats.SLICE_NAME)).otherwise(
        F.concat(F.col(stats.SLICE_NAME), F.lit("="), F.col(stats.SLICE_VALUE))
    )
    with_class = F.when(
        F.col(stats.CLASS).isNotNull(), F.concat(piece, F.lit(", class "), F.col(stats.CLASS))
    ).otherwise(piece)
    return F.concat(version, F.lit(", "), with_class)


def _alert_rows(
    selected: DataFrame,
    rule: AlertRule,
    index: int,
    value: Column,
    reference: Column,
    delta: Column,
    z: Column,
    message: Column,
    carried: Sequence[str] = (),
) -> DataFrame:
    return selected.select(
        *[F.col(name) for name in carried],
        F.lit(index).alias(RULE_INDEX),
        F.lit(rule.label()).alias(RULE),
        F.lit(rule.condition).alias(CONDITION),
        F.lit(rule.threshold).cast("double").alias(THRESHOLD),
        F.lit(rule.fail).alias(FAIL),
        F.col(METRIC),
        *[F.col(key) for key in stats.KEY_COLUMNS],
        value.cast("double").alias(VALUE),
        reference.cast("double").alias(REFERENCE_VALUE),
        delta.cast("double").alias(DELTA),
        z.cast("double").alias(Z),
        F.col(stats.N).cast("long").alias(stats.N),
        message.alias(MESSAGE),
    )


def _no_alerts(metrics: DataFrame, carried: Sequence[str]) -> DataFrame:
    """The alerts schema with no rows."""
    empty = metrics.where(F.lit(False))
    nothing = F.lit(None).cast("double")
    return _alert_rows(
        empty,
        AlertRule(metric="none", max=0.0),
        0,
        nothing,
        nothing,
        nothing,
        nothing,
        F.lit(None).cast("string"),
        carried,
    )
