"""What the kernels compute, as plain values: the config's part that the workers need.

A ``FinishPlan`` is built on the driver from the config (``spark_calib.metrics.finish``) and
pickled to the Python workers with the kernels, so it holds no pydantic or Spark objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FinishPlan:
    """``metrics``: (registry family, the requested metric names of that family) pairs;
    ``n_bins`` M and ``equal_mass`` (calibration bins merged from the fine cells,
    ``spark_calib.kernels.calibration``); ``method`` of the uncertainty (analytic, jackknife
    or none), ``critical_value`` of its interval and ``buckets`` G; ``settings``: (name,
    plain value) pairs of the config values a family reads (``setting``)."""

    metrics: tuple[tuple[str, tuple[str, ...]], ...]
    n_bins: int
    equal_mass: bool
    method: str
    critical_value: float
    buckets: int
    settings: tuple[tuple[str, Any], ...] = ()

    def names(self, family: str) -> tuple[str, ...]:
        """The requested metrics of ``family`` (empty when none)."""
        return next((names for name, names in self.metrics if name == family), ())

    def setting(self, name: str, default: Any = None) -> Any:
        """The config value ``name`` (``default`` when the plan has none)."""
        return next((value for key, value in self.settings if key == name), default)

    @property
    def jackknife(self) -> bool:
        """Whether the standard errors are the jackknife's."""
        return self.method == "jackknife"

    @property
    def replicates(self) -> int:
        """R: the point estimate, then the G leave-one-bucket-out replicates (jackknife)."""
        return 1 + self.buckets if self.jackknife else 1
