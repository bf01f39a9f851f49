"""Assign a confidence to one of M equal-width bins, as a Column or internal SQL expression.

Bin edges are the double-precision quotients e_k = k/M. With ``left_closed`` edges (the default,
as numpy.histogram and netcal), bin b holds e_b ≤ c < e_{b+1} and the last bin also holds 1.0.
With ``right_closed`` edges (scikit-learn's calibration_curve, Guo et al. 2017), bin b holds
e_b < c ≤ e_{b+1} and the first bin also holds 0.0.
"""

from __future__ import annotations

from typing import TypeVar

from pyspark.sql import Column
from pyspark.sql import functions as F

from spark_calib.rows.internal_sql import Sql, functions_for

E = TypeVar("E", Column, Sql)


def bin_index(confidence: E, n_bins: int, edges: str = "left_closed") -> E:
    """The bin (int, 0..n_bins−1) of ``confidence`` ∈ [0, 1]; null when the confidence is null.

    floor(c·M) alone can land one bin off when c·M rounds across an integer (fl(1/49)·49 < 1),
    so the first guess is corrected by comparing c with the edges themselves.
    """
    F = functions_for(confidence)
    m = float(n_bins)
    if edges == "left_closed":
        guess = F.floor(confidence * F.lit(m)).cast("int")
        above = confidence >= (guess + 1).cast("double") / F.lit(m)
        below = confidence < guess.cast("double") / F.lit(m)
    else:
        guess = (F.ceil(confidence * F.lit(m)) - 1).cast("int")
        above = confidence > (guess + 1).cast("double") / F.lit(m)
        below = confidence <= guess.cast("double") / F.lit(m)
    corrected = guess + above.cast("int") - below.cast("int")
    return F.least(F.greatest(corrected, F.lit(0)), F.lit(n_bins - 1))


def bin_lower(bin_: Column, n_bins: int) -> Column:
    """e_b = b/M as a double."""
    return bin_.cast("double") / F.lit(float(n_bins))


def bin_upper(bin_: Column, n_bins: int) -> Column:
    """e_{b+1} = (b+1)/M as a double."""
    return (bin_ + 1).cast("double") / F.lit(float(n_bins))
