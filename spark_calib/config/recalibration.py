"""The ``recalibration`` section: which maps to fit, on which rows, and when a slice falls back.

```yaml
recalibration:
  methods: [temperature, platt, isotonic]
  fit: {column: split, value: val}      # or {start: 2024-06-01, end: 2024-06-07[, column: day]}
  min_fit_rows: 1000
  after: cells                          # or rows: exact "after" metrics, one more pass;
                                        # or none: fit only
  max_fit_rows: 1000000                 # multiclass: a hashed sample of the fit rows (null: all)
```

Rows matching ``fit`` are the fit rows; every other valid row (a null in the fit column
included) is evaluated. Without ``fit`` every row is both, which flatters the "after" metrics
(``docs/recalibration.md``). ``after`` says how the binary and top-label temperature and Platt
maps are scored: ``cells`` (default) applies each map at a fine cell's mean logit, within a
stated bound and with no pass over the input; ``rows`` applies it row by row in one more pass,
exactly; ``none`` fits the maps and leaves the after metrics null (multiclass: no scoring
pass, so the before metrics are null too). ``max_fit_rows`` bounds the rows a multiclass
temperature is fitted on (``spark_calib.recalibration.temperature_fit``).
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field, StrictBool, StrictInt, StrictStr, model_validator

from spark_calib.config.base import Float, Int, StrictModel
from spark_calib.constants import DEFAULT_MAX_FIT_ROWS, DEFAULT_MIN_FIT_ROWS

Method = Literal["temperature", "platt", "isotonic"]
After = Literal["cells", "rows", "none"]
RECALIBRATION_METHODS: tuple[str, ...] = ("temperature", "platt", "isotonic")


class FitRows(StrictModel):
    """Which rows fit the maps: ``column`` == ``value``, or ``column`` (default: the input
    window's date column) between ``start`` and ``end``, both included."""

    column: str | None = None
    value: StrictStr | StrictInt | StrictBool | Float | None = None
    start: dt.date | None = None
    end: dt.date | None = None

    @model_validator(mode="after")
    def _one_form(self) -> FitRows:
        by_value = self.value is not None
        by_dates = self.start is not None or self.end is not None
        if by_value == by_dates:
            raise ValueError(
                "recalibration.fit takes either {column, value} or a date range {start, end}"
            )
        if by_value and self.column is None:
            raise ValueError("recalibration.fit.value needs recalibration.fit.column")
        if by_dates:
            if self.start is None or self.end is None:
                raise ValueError("recalibration.fit date range needs both start and end")
            if self.start > self.end:
                raise ValueError(f"recalibration.fit start {self.start} is after end {self.end}")
        return self

    @property
    def is_date_range(self) -> bool:
        """Whether the fit rows are a date range (else column == value)."""
        return self.start is not None


class RecalibrationConfig(StrictModel):
    """``recalibration``: the maps to fit (``methods``), the fit rows (``fit``; without it the
    maps are fitted and evaluated on the same rows) and ``min_fit_rows`` (a slice with fewer
    fit rows takes the parameters of its model version's overall fit) and ``after`` (how the
    binary and top-label logistic maps are scored: at the cells' mean logits, row by row, or not
    at all) and ``max_fit_rows`` (the multiclass fit's sample bound; None: every fit row)."""

    methods: tuple[Method, ...] = ("temperature",)
    fit: FitRows | None = None
    min_fit_rows: Int = Field(default=DEFAULT_MIN_FIT_ROWS, ge=1)
    after: After = "cells"
    max_fit_rows: Int | None = Field(default=DEFAULT_MAX_FIT_ROWS, ge=1)

    @model_validator(mode="after")
    def _methods_listed_once(self) -> RecalibrationConfig:
        if not self.methods:
            raise ValueError(
                f"recalibration.methods must list at least one of {list(RECALIBRATION_METHODS)}"
            )
        if len(set(self.methods)) != len(self.methods):
            raise ValueError(f"recalibration.methods has duplicates: {list(self.methods)}")
        return self


def check_recalibration(
    recalibration: RecalibrationConfig, task: str, positive_class: bool, window_column: str | None
) -> None:
    """The section against the rest of the config (the hook ``Config`` calls): binary maps of
    the positive-class score, top-label maps of the confidence (a binary predictor of
    ``correct``), multiclass temperature scaling of the logits (or log probabilities), and a
    date range needs a column."""
    if task == "multiclass":
        others = [method for method in recalibration.methods if method != "temperature"]
        if others:
            raise ValueError(
                f"recalibration.methods {others} are binary maps; task multiclass fits "
                "temperature only"
            )
    elif task not in ("binary", "top_label"):
        raise ValueError(f"recalibration needs task binary, top_label or multiclass, not {task}")
    elif task == "binary" and not positive_class:
        raise ValueError(
            "recalibration on task binary needs binary_view positive_class (its maps are "
            "fitted on the score's fine cells), not top_label"
        )
    fit = recalibration.fit
    if fit is not None and fit.is_date_range and fit.column is None and window_column is None:
        raise ValueError(
            "recalibration.fit date range needs recalibration.fit.column or input.window.column"
        )


def fit_column(recalibration: RecalibrationConfig, window_column: str | None) -> str | None:
    """The input column the fit condition reads (None without ``fit``)."""
    fit = recalibration.fit
    if fit is None:
        return None
    return fit.column if fit.column is not None else window_column
