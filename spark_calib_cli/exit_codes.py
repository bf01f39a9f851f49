"""Process exit codes of ``spark-calib``: one per cause a scheduler may want to tell apart."""

from __future__ import annotations

from enum import IntEnum

from spark_calib.errors import ConfigError, InvalidRowsError, SchemaError
from spark_calib_cli.errors import JavaNotFoundError, MissingInputError, OutputError


class ExitCode(IntEnum):
    """Documented in the README's "Exit codes" section; keep the two in step."""

    OK = 0
    # Anything unexpected: a Spark job failure, a bug, an interrupted run.
    UNEXPECTED = 1
    # Also argparse's own code for bad command-line usage.
    CONFIG = 2
    # Worth a retry later: the upstream data has not landed yet.
    MISSING_INPUT = 3
    INVALID_ROWS = 4
    INPUT_SCHEMA = 5
    OUTPUT = 6
    NO_JAVA = 7
    # The run finished and wrote every table, but an alert rule with fail: true fired.
    ALERT = 8


def exit_code_for(error: BaseException) -> ExitCode:
    """The exit code for an error raised by a job; ``UNEXPECTED`` for anything not listed."""
    mapping: tuple[tuple[type[BaseException], ExitCode], ...] = (
        (ConfigError, ExitCode.CONFIG),
        (MissingInputError, ExitCode.MISSING_INPUT),
        (InvalidRowsError, ExitCode.INVALID_ROWS),
        (SchemaError, ExitCode.INPUT_SCHEMA),
        (OutputError, ExitCode.OUTPUT),
        (JavaNotFoundError, ExitCode.NO_JAVA),
    )
    for kind, code in mapping:
        if isinstance(error, kind):
            return code
    return ExitCode.UNEXPECTED
