"""What the commands share: the job config check, a daily run's window and the task names.

The job functions (``run_evaluate``, ``run_rollup``, ``run_report``) import these from here,
so that no command module imports another for them.
"""

from __future__ import annotations

import datetime as dt

from spark_calib.config import Config, InputConfig, OutputConfig
from spark_calib.errors import ConfigError
from spark_calib.windows import TimeWindow, rolling
from spark_calib_cli.commands.window_stats import require_daily_runs, run_length_days
from spark_calib_cli.io.identifiers import checked_identifier, checked_table_name

REGRESSION_TASK = "regression"


def check_job_config(config: Config) -> tuple[InputConfig, OutputConfig]:
    """The config's ``input`` and ``output`` sections, or ``ConfigError`` when the job cannot
    run with them. Needs no Spark, so the CLI calls it before starting a session."""
    if config.input is None:
        raise ConfigError("missing required config key 'input' (the job reads a table or path)")
    if config.output is None:
        raise ConfigError("missing required config key 'output' (a database or a path)")
    if config.input.table is not None:
        checked_table_name(config.input.table, "input.table")
    if config.output.database is not None:
        checked_identifier(config.output.database, "output.database")
    if config.drift.baseline_dates is not None:
        require_daily_runs(config, "drift.baseline_dates")
    return config.input, config.output


def run_window(config: Config, run_date: dt.date) -> TimeWindow:
    """The dates a daily run covers: ``day``, or ``rolling_Nd`` with a lookback of N days."""
    days = run_length_days(config)
    return TimeWindow(rolling(days), run_date - dt.timedelta(days=days - 1), run_date)
