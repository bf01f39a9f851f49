"""The ``uncertainty`` section: how every metric row gets its standard error and interval.

- ``method``: ``analytic`` (default; closed-form standard errors from the second-moment sums,
  null where a metric has none), ``jackknife`` (a grouped jackknife over ``buckets`` hash
  buckets of ``bucket_key``, one more grouping key of the statistics) or ``none``.
- ``level``: the two-sided confidence level of ``ci_lower``/``ci_upper`` (and of the per-bin
  Wilson intervals of the reliability table).
- ``buckets``: G, the number of jackknife buckets (2 ≤ G ≤ 100).
- ``bucket_key``: the input column whose value picks a row's bucket (a user or session id makes
  the intervals honest for rows that are correlated within it); default: a hash of the whole
  row.

``method`` and ``buckets``/``bucket_key`` change the statistics (the bucket is a key), so they
are part of ``config_hash``; ``level`` is too, because the reliability table carries intervals.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from spark_calib.config.base import Float, Int, StrictModel

UncertaintyMethod = Literal["analytic", "jackknife", "none"]
DEFAULT_LEVEL = 0.95
DEFAULT_BUCKETS = 20
MAX_BUCKETS = 100


class UncertaintyConfig(StrictModel):
    """See the module docstring."""

    method: UncertaintyMethod = "analytic"
    level: Float = Field(default=DEFAULT_LEVEL, gt=0.5, lt=1.0)
    buckets: Int = Field(default=DEFAULT_BUCKETS, ge=2, le=MAX_BUCKETS)
    bucket_key: str | None = None

    @property
    def jackknife(self) -> bool:
        """Whether the statistics carry the jackknife bucket."""
        return self.method == "jackknife"
