"""The kernels by name: each turns one key's statistics (an Arrow table) into ``Estimates``.

A family of the metric registry (``spark_calib.registry``) is finished by the kernel named
here; ``kernel(name)`` looks one up and names the valid ones when it is unknown.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from spark_calib.kernels.calibration import calibration_estimates
from spark_calib.kernels.estimates import Estimates
from spark_calib.kernels.plan import FinishPlan

Kernel = Callable[[pa.Table, FinishPlan], "Estimates | None"]

KERNELS: dict[str, Kernel] = {
    "calibration": calibration_estimates,
}


def kernel(name: str) -> Kernel:
    """The kernel called ``name``; ``KeyError`` naming the valid ones otherwise."""
    try:
        return KERNELS[name]
    except KeyError:
        raise KeyError(f"unknown kernel {name!r}; valid kernels: {sorted(KERNELS)}") from None
