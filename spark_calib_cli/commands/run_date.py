"""The run date: the partition a job writes, and the end of the input window."""

from __future__ import annotations

import datetime as dt
import re

from spark_calib.errors import ConfigError

RUN_DATE_PATTERN = re.compile(r"\d{4}-\d{2}-\d{2}")


def parse_run_date(text: str | None) -> dt.date:
    """``YYYY-MM-DD`` → date; None → today in UTC (a daily job's date must not depend on the
    scheduler host's zone). Raises ``ConfigError`` for anything else."""
    if text is None:
        return dt.datetime.now(dt.timezone.utc).date()
    try:
        if not RUN_DATE_PATTERN.fullmatch(text):
            raise ValueError(text)
        return dt.date.fromisoformat(text)
    except ValueError:
        raise ConfigError(f"--run-date {text!r} is not a date of the form YYYY-MM-DD") from None
