"""The kernels by name, in one registry.

- ``KERNELS``: the metric kernels; each turns one key's statistics (an Arrow table) into
  ``Estimates``, and finishes the registry family (``spark_calib.registry``) that
  ``spark_calib.metrics.finish.KERNEL_FAMILIES`` maps to it.
- ``TABLES``: the output tables other than the metrics; each turns one key's statistics into
  its rows of the table, in the order of the table's Arrow schema.

``kernel(name)`` and ``table(name)`` look one up and name the valid ones when it is unknown.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

from spark_calib.kernels.arrow_batch import Rows
from spark_calib.kernels.calibration import calibration_estimates
from spark_calib.kernels.cell_calibration import cell_calibration_estimates
from spark_calib.kernels.confusion import CONFUSION_ARROW_SCHEMA, confusion_rows
from spark_calib.kernels.decision import decision_estimates
from spark_calib.kernels.estimates import Estimates
from spark_calib.kernels.output_columns import RELIABILITY_ARROW_SCHEMA
from spark_calib.kernels.plan import FinishPlan
from spark_calib.kernels.ranking import ranking_estimates
from spark_calib.kernels.regression import regression_estimates
from spark_calib.kernels.regression_calibration import (
    REGRESSION_CALIBRATION_ARROW_SCHEMA,
    regression_calibration_rows,
)
from spark_calib.kernels.reliability import reliability_rows
from spark_calib.kernels.roc import ROC_ARROW_SCHEMA, roc_rows
from spark_calib.kernels.smooth import smooth_estimates
from spark_calib.kernels.thresholds import THRESHOLD_ARROW_SCHEMA, threshold_rows

Kernel = Callable[[Rows, FinishPlan], "Estimates | None"]
TableKernel = Callable[[tuple[Any, ...], Rows, FinishPlan], list[tuple[Any, ...]]]

KERNELS: dict[str, Kernel] = {
    "calibration": calibration_estimates,
    "decision": decision_estimates,
    "ranking": ranking_estimates,
    "cell_calibration": cell_calibration_estimates,
    "smooth": smooth_estimates,
    "regression": regression_estimates,
}
# Output table (the ``EvaluationResult`` field) → its kernel and Arrow schema.
TABLES: dict[str, tuple[TableKernel, pa.Schema]] = {
    "reliability": (reliability_rows, RELIABILITY_ARROW_SCHEMA),
    "confusion": (confusion_rows, CONFUSION_ARROW_SCHEMA),
    "roc": (roc_rows, ROC_ARROW_SCHEMA),
    "thresholds": (threshold_rows, THRESHOLD_ARROW_SCHEMA),
    "regression_calibration": (regression_calibration_rows, REGRESSION_CALIBRATION_ARROW_SCHEMA),
}


def kernel(name: str) -> Kernel:
    """The metric kernel called ``name``; ``KeyError`` naming the valid ones otherwise."""
    try:
        return KERNELS[name]
    except KeyError:
        raise KeyError(f"unknown kernel {name!r}; valid kernels: {sorted(KERNELS)}") from None


def table(name: str) -> tuple[TableKernel, pa.Schema]:
    """The table kernel and schema of output ``name``; ``KeyError`` naming the valid ones."""
    try:
        return TABLES[name]
    except KeyError:
        raise KeyError(f"unknown output table {name!r}; valid tables: {sorted(TABLES)}") from None
