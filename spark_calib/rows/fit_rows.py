"""Which rows fit the recalibration maps: a boolean Column from ``recalibration.fit``."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from spark_calib.config import Config
from spark_calib.config.recalibration import fit_column
from spark_calib.rows.columns import input_col


def fit_condition(config: Config) -> Column | None:
    """True for a fit row, false for an evaluated row (a null in the fit column included);
    None when the config fits and evaluates on the same rows (no ``recalibration.fit``).

    ``{column, value}``: column = value; ``{start, end}``: the column (``input.window.column``
    by default) cast to a date lies in [start, end]."""
    recalibration = config.recalibration
    if recalibration is None or recalibration.fit is None:
        return None
    fit = recalibration.fit
    window = config.input.window if config.input is not None else None
    name = fit_column(recalibration, window.column if window is not None else None)
    assert name is not None, "checked by the config"
    column = input_col(name)
    if fit.is_date_range:
        matched = column.cast("date").between(F.lit(fit.start), F.lit(fit.end))
    else:
        matched = column == F.lit(fit.value)
    return F.coalesce(matched, F.lit(False))
