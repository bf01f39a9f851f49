"""What the kernels compute, as plain values: the config's part that the workers need.

A ``FinishPlan`` is built on the driver from the config (``spark_calib.metrics.finish``) and
pickled to the Python workers with the kernels, so it holds no pydantic or Spark objects.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FinishPlan:
    """``calibration``: the top-label calibration metrics (class null rows), ``per_class``: the
    one-vs-rest ones (a row per class and a macro row); ``n_bins`` M and ``equal_mass`` (bins
    merged from the fine cells, ``spark_calib.metrics.bins``); ``method`` of the uncertainty
    (analytic, jackknife or none), ``critical_value`` of its interval and ``buckets`` G."""

    calibration: tuple[str, ...]
    per_class: tuple[str, ...]
    n_bins: int
    equal_mass: bool
    method: str
    critical_value: float
    buckets: int

    @property
    def jackknife(self) -> bool:
        """Whether the standard errors are the jackknife's."""
        return self.method == "jackknife"

    @property
    def replicates(self) -> int:
        """R: the point estimate, then the G leave-one-bucket-out replicates (jackknife)."""
        return 1 + self.buckets if self.jackknife else 1
