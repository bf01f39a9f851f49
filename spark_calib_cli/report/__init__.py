"""The report's PNG figures, drawn from small pandas frames of the output tables.

The job layer (``spark_calib_cli.commands.report``) reads the tables and picks the slices; this
package only draws: reliability diagrams (``write_reliability_diagrams``), ROC and
precision-recall curves (``write_roc_curves``), reliability before and after recalibration
(``write_recalibration_diagrams``) and the interval calibration of regression runs
(``write_regression_calibration_diagrams``).
"""

from spark_calib_cli.report.recalibration import write_recalibration_diagrams
from spark_calib_cli.report.regression import write_regression_calibration_diagrams
from spark_calib_cli.report.reliability import write_reliability_diagrams
from spark_calib_cli.report.roc import write_roc_curves

__all__ = [
    "write_recalibration_diagrams",
    "write_regression_calibration_diagrams",
    "write_reliability_diagrams",
    "write_roc_curves",
]
