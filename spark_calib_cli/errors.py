"""Errors of the job layer, next to the library's ``SparkCalibError`` hierarchy."""

from __future__ import annotations

from spark_calib.errors import SparkCalibError


class MissingInputError(SparkCalibError):
    """The input table or path does not exist, or holds no rows for the run date."""


class OutputError(SparkCalibError):
    """The output location cannot take this run, e.g. an existing table has other columns."""


class JavaNotFoundError(SparkCalibError):
    """No Java runtime to start an embedded Spark session."""
