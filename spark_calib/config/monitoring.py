"""The monitoring sections of the config: ``drift`` (baseline and significance), ``alerts``
(rules on the metrics of a window) and ``rollup`` (windows summed from daily statistics).

They read the statistics and metrics a run has already computed, so they are left out of
``config_hash``: adding an alert rule does not make yesterday's statistics incompatible.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field, StrictBool, model_validator

from spark_calib.config.base import Float, Int, StrictModel
from spark_calib.constants import DEFAULT_MIN_DELTA, DEFAULT_MIN_N, DEFAULT_Z

ABSOLUTE_CONDITIONS = ("max", "min")
CHANGE_CONDITIONS = ("max_increase", "max_decrease")
CompareTo = Literal["previous", "baseline"]


class DateRange(StrictModel):
    """The run dates ``start`` to ``end``, both included."""

    start: dt.date
    end: dt.date

    @model_validator(mode="after")
    def _ordered(self) -> DateRange:
        if self.start > self.end:
            raise ValueError(f"start {self.start} is after end {self.end}")
        return self


class DriftConfig(StrictModel):
    """What a window is compared with, and when a change counts as significant."""

    baseline_model_version: str | None = None
    baseline_dates: DateRange | None = None
    min_delta: Float = Field(default=DEFAULT_MIN_DELTA, ge=0.0)
    z: Float = Field(default=DEFAULT_Z, gt=0.0)
    min_n: Int = Field(default=DEFAULT_MIN_N, ge=0)

    @model_validator(mode="after")
    def _one_baseline(self) -> DriftConfig:
        if self.baseline_model_version is not None and self.baseline_dates is not None:
            raise ValueError("drift takes one of baseline_model_version or baseline_dates")
        return self

    @property
    def has_baseline(self) -> bool:
        """Whether a baseline (a model version or a range of run dates) is configured."""
        return self.baseline_model_version is not None or self.baseline_dates is not None

    def baseline_label(self) -> str | None:
        """``model_version=v1`` or ``2024-06-01..2024-06-07``; None without a baseline."""
        if self.baseline_model_version is not None:
            return f"model_version={self.baseline_model_version}"
        if self.baseline_dates is not None:
            return f"{self.baseline_dates.start}..{self.baseline_dates.end}"
        return None


class AlertRule(StrictModel):
    """One rule: exactly one of ``max``/``min`` (on the window's value) or
    ``max_increase``/``max_decrease`` (on its change against ``compare_to``)."""

    name: str | None = None
    metric: str
    slice: tuple[str, ...] | None = None
    model_version: str | None = None
    max: Float | None = None
    min: Float | None = None
    max_increase: Float | None = Field(default=None, ge=0.0)
    max_decrease: Float | None = Field(default=None, ge=0.0)
    compare_to: CompareTo = "previous"
    min_n: Int = Field(default=DEFAULT_MIN_N, ge=0)
    min_z: Float | None = Field(default=None, gt=0.0)
    fail: StrictBool = False

    @model_validator(mode="after")
    def _one_condition(self) -> AlertRule:
        set_conditions = [name for name in self.conditions() if getattr(self, name) is not None]
        if len(set_conditions) != 1:
            raise ValueError(
                f"alert rule on {self.metric!r} needs exactly one of max, min, max_increase, "
                f"max_decrease; it has {set_conditions or 'none'}"
            )
        return self

    @staticmethod
    def conditions() -> tuple[str, ...]:
        """The condition keys a rule may set: max, min, max_increase, max_decrease."""
        return (*ABSOLUTE_CONDITIONS, *CHANGE_CONDITIONS)

    @property
    def condition(self) -> str:
        """Which of max, min, max_increase, max_decrease this rule checks."""
        return next(name for name in self.conditions() if getattr(self, name) is not None)

    @property
    def threshold(self) -> float:
        """The number the rule's condition compares with."""
        value = getattr(self, self.condition)
        assert value is not None
        return float(value)

    @property
    def on_change(self) -> bool:
        """Whether the rule compares a change (max_increase, max_decrease) with the drift."""
        return self.condition in CHANGE_CONDITIONS

    def label(self) -> str:
        """The rule's name, or a description: ``ece max_increase 0.02 vs previous on
        [country]``."""
        if self.name:
            return self.name
        where = "" if self.slice is None else f" on [{', '.join(self.slice)}]"
        version = "" if self.model_version is None else f" for {self.model_version}"
        versus = f" vs {self.compare_to}" if self.on_change else ""
        return f"{self.metric} {self.condition} {self.threshold:g}{versus}{where}{version}"


class RollupConfig(StrictModel):
    """``require_all_days``: a window with a missing day is an error instead of a partial
    window."""

    require_all_days: StrictBool = False
