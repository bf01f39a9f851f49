"""Central normal prediction intervals: levels, their z values, and a row's coverage bucket.

The interval of level l is μ ± z_l σ with z_l = Φ⁻¹((1 + l) / 2); it covers y when
|y − μ| ≤ z_l σ. Intervals are nested (z grows with l), so one bucket per row, the number of
levels whose interval misses y, gives the coverage of every level by a cumulative sum:
coverage(l_j) = Σ_{rows with bucket ≤ j} w / W.
"""

from __future__ import annotations

from statistics import NormalDist
from typing import TypeVar

from pyspark.sql import Column

from spark_calib.config import Config
from spark_calib.kernels.regression import interval_levels as levels_of
from spark_calib.rows.internal_sql import Sql, functions_for

E = TypeVar("E", Column, Sql)


def interval_levels(config: Config) -> list[float]:
    """Every level any regression output reports, ascending: coverage_levels ∪ the 19 levels of
    the regression calibration table (the kernels' ``interval_levels``)."""
    return levels_of(tuple(config.coverage_levels))


def z_value(level: float) -> float:
    """z_l = Φ⁻¹((1 + l) / 2), the half-width of the central interval of level l in σ."""
    return NormalDist().inv_cdf((1.0 + level) / 2.0)


def coverage_bucket(error: E, sigma: E, levels: list[float]) -> E:
    """Σ_l [|e| > z_l σ]: 0 when even the narrowest interval covers y, len(levels) when none."""
    F = functions_for(error)
    missed = [(F.abs(error) > F.lit(z_value(level)) * sigma).cast("int") for level in levels]
    total = missed[0]
    for term in missed[1:]:
        total = total + term
    return total
