"""``spark-calib batch FILE``: the spark-calib commands of a file, run in order in one process.

Each non-blank line of FILE that does not start with ``#`` is one command line without the
``spark-calib`` word (``evaluate --config conf/a.yaml --run-date 2024-06-30``), split as a
shell would (quotes, no variables). Every line is parsed, and every ``--config`` loaded, before
the first runs: a typo on the last line fails at once, naming its line.

The commands run one after another in this Python process, so those that start an embedded
Spark share one driver JVM: the JVM starts once, and the later commands run on code its JIT
has already compiled (a one-day demo evaluate took 27.5 s as the first command of a process
and 7.6–10.7 s after one like it). Each command still builds and stops its own session, with
its own ``--master``/``--conf``; settings read when the JVM starts (``spark.driver.memory``,
``spark.driver.extraJavaOptions``) come from the first command that starts it.

A command whose ``fail: true`` alert fired does not stop the batch; any other failure does,
and the batch exits with that command's code. Otherwise the exit code is ``ExitCode.ALERT`` if
an alert fired, else 0.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from spark_calib.errors import ConfigError
from spark_calib_cli.commands.cli import PROG, validated
from spark_calib_cli.exit_codes import ExitCode

BATCH_COMMAND = "batch"
COMMENT = "#"


@dataclass(frozen=True)
class BatchLine:
    """One command of the file: its line number, its text and its arguments."""

    number: int
    text: str
    argv: list[str]


def batch_command(
    args: argparse.Namespace,
    parse: Callable[[Sequence[str]], argparse.Namespace],
    run: Callable[[Sequence[str]], int],
) -> int:
    """Check every line of ``args.file`` with ``parse`` (the CLI's parser), then ``run`` each
    (the CLI's ``main``) in order; return the batch's exit code."""
    path = Path(args.file)
    lines = read_batch(path)
    for line in lines:
        _check(path, line, parse)
    alerted = False
    for line in lines:
        print(f"$ {PROG} {line.text}", flush=True)
        code = run(line.argv)
        if code == ExitCode.ALERT:
            alerted = True
        elif code != ExitCode.OK:
            print(
                f"{PROG}: batch stopped at {path} line {line.number} (exit code {code})",
                file=sys.stderr,
            )
            return code
    return int(ExitCode.ALERT if alerted else ExitCode.OK)


def read_batch(path: Path) -> list[BatchLine]:
    """The command lines of ``path``; ``ConfigError`` if it cannot be read, a line cannot be
    split or there is none."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"cannot read batch file {str(path)!r}: {error.strerror}") from None
    lines = []
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith(COMMENT):
            continue
        try:
            argv = shlex.split(stripped, comments=True)
        except ValueError as error:
            raise ConfigError(f"{path} line {number}: {error}") from None
        if argv[:1] == [PROG]:
            raise ConfigError(
                f"{path} line {number}: write the command without {PROG!r} "
                f"(e.g. {shlex.join(argv[1:])!r})"
            )
        lines.append(BatchLine(number, stripped, argv))
    if not lines:
        raise ConfigError(f"batch file {str(path)!r} holds no command")
    return lines


def _check(
    path: Path, line: BatchLine, parse: Callable[[Sequence[str]], argparse.Namespace]
) -> None:
    try:
        parsed = parse(line.argv)
    except SystemExit:
        # argparse has printed its usage and the reason; say which line it was.
        raise ConfigError(f"{path} line {line.number}: not a {PROG} command line") from None
    if parsed.command_name == BATCH_COMMAND:
        raise ConfigError(f"{path} line {line.number}: a batch cannot run another batch")
    if getattr(parsed, "config", None) is not None:
        try:
            validated(parsed)
        except ConfigError as error:
            raise ConfigError(f"{path} line {line.number}: {error}") from None
