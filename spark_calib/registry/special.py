"""Special functions as Column expressions (Spark SQL has no erf)."""

from __future__ import annotations

import math

from pyspark.sql import Column
from pyspark.sql import functions as F

# erf(6) = 1 − 2.2e-17: 1 in double precision, so larger arguments are capped at 6.
ERF_CAP = 6.0
# Terms of the series: at x = 6 the terms peak near n = 36 and fall below 1e-17 of the sum
# well before n = 120.
ERF_TERMS = 120
# Measured against scipy.special.erf on [0, 7]: at most 5e-15 (tests/unit/test_special.py).
ERF_ABSOLUTE_ERROR = 1e-14


def erf(x: Column) -> Column:
    """erf(x) = sign(x)·2/√π·exp(−x²)·Σ_{n≥0} |x|(2x²)ⁿ/(1·3·…·(2n+1)), ``ERF_TERMS`` terms
    of a series whose terms are all positive (no cancellation), |x| capped at ``ERF_CAP``;
    absolute error below ``ERF_ABSOLUTE_ERROR``. Null stays null."""
    a = F.least(F.abs(x), F.lit(ERF_CAP))
    two_a2 = 2.0 * a * a

    def step(acc: Column, n: Column) -> Column:
        term = acc["term"] * two_a2 / (2.0 * n.cast("double") + 1.0)
        return F.struct((acc["total"] + term).alias("total"), term.alias("term"))

    start = F.struct(a.alias("total"), a.alias("term"))
    series = F.aggregate(F.sequence(F.lit(1), F.lit(ERF_TERMS)), start, step)["total"]
    value = F.lit(2.0 / math.sqrt(math.pi)) * F.exp(-a * a) * series
    return F.when(x < 0.0, -value).otherwise(value)
