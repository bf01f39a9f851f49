"""Reliability diagrams as PNG, drawn from small pandas frames of the output tables.

The job layer (``spark_calib_cli.report_job``) reads the tables and picks the slices; this
package only draws. See ``write_reliability_diagrams``.
"""

from spark_calib_cli.report.figures import write_reliability_diagrams

__all__ = ["write_reliability_diagrams"]
