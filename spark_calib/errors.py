"""The error hierarchy: every error spark_calib raises on purpose is a ``SparkCalibError``.

Each message is one line that names the offending item, what was expected and what was found,
so that a scheduler log shows the cause without a stack trace.
"""

from __future__ import annotations

from collections.abc import Mapping


class SparkCalibError(Exception):
    """Base class of all deliberate spark_calib errors."""


class ConfigError(SparkCalibError, ValueError):
    """The configuration is invalid (unknown key, wrong type, unknown metric, bad value)."""


class SchemaError(SparkCalibError, ValueError):
    """The input DataFrame does not have the columns or types the configuration needs."""


class InvalidRowsError(SparkCalibError):
    """The fraction of invalid input rows is above ``max_invalid_fraction``.

    ``counts`` maps each reason to its number of rows; ``total`` is the number of input rows;
    ``scope`` (a backfill's ``run_date 2024-06-30``) prefixes the message.
    """

    def __init__(
        self, counts: Mapping[str, int], total: int, max_fraction: float, scope: str = ""
    ) -> None:
        self.counts = dict(counts)
        self.total = total
        self.max_fraction = max_fraction
        invalid = sum(self.counts.values())
        detail = ", ".join(f"{reason}={n}" for reason, n in sorted(self.counts.items()))
        super().__init__(
            (f"{scope}: " if scope else "") + f"{invalid} of {total} input rows are invalid "
            f"(fraction {invalid / total:.6g} > max_invalid_fraction {max_fraction:g}): {detail}"
        )
