"""``spark-calib``: the command line of the scheduled job, the report and the demo data.

    spark-calib evaluate --config conf/FILE.yaml [--run-date YYYY-MM-DD]
                         [--master URL | --remote sc://HOST:PORT]
                         [--set key.path=value ...] [--report DIR] [--verbose]
    spark-calib evaluate ... --from YYYY-MM-DD      (every date from --from to --run-date)
    spark-calib rollup   --config conf/FILE.yaml --run-date YYYY-MM-DD
                         --granularity week|month|rolling:N
    spark-calib report   --config conf/FILE.yaml [--run-date YYYY-MM-DD] [--out DIR] ...
    spark-calib search   --config conf/FILE.yaml [--run-date YYYY-MM-DD] [--figure DIR]
    evaluate, rollup and report take --html FILE: one self-contained HTML page of the window
    spark-calib demo-data --out DIR [--binary-rows N] [--multiclass-rows N]
                          [--regression-rows N] [--ctr-rows N] [--segments-rows N] [--seed S]
    spark-calib batch FILE      (the commands of FILE, one per line, in one process)

The config is validated before Spark starts. A failure prints one line on stderr and exits with
the code of its cause (see ``exit_codes.ExitCode`` and the README); ``--verbose`` adds the
Python and JVM stack traces. A run whose ``fail: true`` alert rule fired writes every table and
then exits with ``ExitCode.ALERT``.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Callable, Sequence

from spark_calib.windows import parse_granularity
from spark_calib_cli.commands.batch import batch_command
from spark_calib_cli.commands.cli import PROG
from spark_calib_cli.commands.demo_data import demo_data_command
from spark_calib_cli.commands.evaluate import evaluate_command
from spark_calib_cli.commands.report import DEFAULT_REPORT_SLICES, report_command
from spark_calib_cli.commands.rollup import rollup_command
from spark_calib_cli.commands.search import search_command
from spark_calib_cli.demo import logs as demo
from spark_calib_cli.exit_codes import ExitCode, exit_code_for
from spark_calib_cli.io.session import SPARK_CONNECT_SCHEME
from spark_calib_cli.report.trend_rows import DEFAULT_TREND_WINDOWS


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand and return its exit code (the console script exits with it)."""
    args = _parser().parse_args(argv)
    try:
        command: Callable[[argparse.Namespace], int] = args.command
        return command(args)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return int(ExitCode.UNEXPECTED)
    except Exception as error:
        if args.verbose:
            traceback.print_exc()
        print(f"{PROG}: error: {_one_line(error)}", file=sys.stderr)
        return int(exit_code_for(error))


def _one_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    first = text.splitlines()[0]
    # Errors from Spark itself are not ours: say which kind, so the line stays searchable.
    if type(error).__module__.startswith(("pyspark", "py4j")):
        return f"{type(error).__name__}: {first}"
    return first


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Calibration metrics for prediction logs, as one-pass Spark jobs.",
    )
    commands = parser.add_subparsers(dest="command_name", required=True, metavar="COMMAND")
    _evaluate_parser(commands)
    _rollup_parser(commands)
    _report_parser(commands)
    _search_parser(commands)
    _demo_data_parser(commands)
    _batch_parser(commands)
    return parser


def _evaluate_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    evaluate = commands.add_parser(
        "evaluate", help="evaluate one run date and write the calibration tables"
    )
    _job_arguments(evaluate)
    evaluate.add_argument(
        "--report",
        metavar="DIR",
        help="also draw the diagrams into DIR (as spark-calib report does)",
    )
    _html_argument(evaluate)
    evaluate.add_argument(
        "--from",
        dest="from_date",
        metavar="YYYY-MM-DD",
        help="evaluate every date from this one to --run-date, in order (a backfill, or a "
        "rerun after late labels)",
    )
    evaluate.set_defaults(command=evaluate_command)


def _rollup_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    rollup = commands.add_parser(
        "rollup",
        help="sum the daily statistics of a week, month or last N days into window tables",
    )
    _job_arguments(rollup)
    rollup.add_argument(
        "--granularity",
        required=True,
        type=_granularity,
        metavar="week|month|rolling:N",
        help="the ISO week or calendar month containing --run-date, or the N days ending on it",
    )
    rollup.add_argument("--report", metavar="DIR", help="also draw the window's diagrams into DIR")
    _html_argument(rollup)
    rollup.set_defaults(command=rollup_command)


def _report_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    report = commands.add_parser(
        "report", help="draw the diagrams (PNG) from the tables of one run date"
    )
    _job_arguments(report)
    report.add_argument(
        "--out", metavar="DIR", help="output directory (default: calibration_reports/run_date=…)"
    )
    report.add_argument(
        "--slices",
        type=int,
        default=DEFAULT_REPORT_SLICES,
        metavar="N",
        help=f"worst slices per model version, by ECE (regression: by miscalibration area) "
        f"(default {DEFAULT_REPORT_SLICES})",
    )
    report.add_argument(
        "--granularity",
        type=_granularity,
        metavar="day|week|month|rolling:N",
        help="the window ending on --run-date to draw (default: the daily run's)",
    )
    report.add_argument(
        "--trend",
        type=int,
        default=DEFAULT_TREND_WINDOWS,
        metavar="N",
        help=f"trend figures over the last N windows, with the alert thresholds; 0 for none "
        f"(default {DEFAULT_TREND_WINDOWS})",
    )
    _html_argument(report)
    report.set_defaults(command=report_command)


def _search_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    search = commands.add_parser(
        "search",
        help="rank the crossed segments where calibration breaks (the config's slice_search)",
    )
    _job_arguments(search)
    search.add_argument(
        "--figure",
        metavar="DIR",
        help="also draw each model version's top slices against its overall reliability",
    )
    search.set_defaults(command=search_command)


def _demo_data_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    demo_data = commands.add_parser("demo-data", help="write the seeded synthetic demo logs")
    demo_data.add_argument("--out", required=True, metavar="DIR", help="directory for the logs")
    demo_data.add_argument("--binary-rows", type=int, default=demo.DEFAULT_BINARY_ROWS)
    demo_data.add_argument("--multiclass-rows", type=int, default=demo.DEFAULT_MULTICLASS_ROWS)
    demo_data.add_argument("--regression-rows", type=int, default=demo.DEFAULT_REGRESSION_ROWS)
    demo_data.add_argument("--ctr-rows", type=int, default=demo.DEFAULT_CTR_ROWS)
    demo_data.add_argument("--segments-rows", type=int, default=demo.DEFAULT_SEGMENTS_ROWS)
    demo_data.add_argument("--seed", type=int, default=demo.DEFAULT_SEED)
    demo_data.add_argument(
        "--end-date", default=demo.DEFAULT_END_DATE.isoformat(), help="last event_date"
    )
    demo_data.add_argument(
        "--if-missing",
        action="store_true",
        help="keep each log whose local directory already has Spark's _SUCCESS marker",
    )
    _session_arguments(demo_data)
    demo_data.set_defaults(command=demo_data_command)


def _batch_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    batch = commands.add_parser(
        "batch",
        help="run the spark-calib commands of FILE in order in this process (one Spark JVM)",
    )
    batch.add_argument(
        "file", metavar="FILE", help="one command per line, without 'spark-calib'; # comments"
    )
    batch.add_argument(
        "--verbose", action="store_true", help="show stack traces of the batch's own errors"
    )
    batch.set_defaults(command=_batch)


def _batch(args: argparse.Namespace) -> int:
    return batch_command(args, parse=_parser().parse_args, run=main)


def _html_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--html",
        metavar="FILE",
        help="also write one self-contained HTML page of the run date's window (alerts, "
        "metrics, worst slices, figures, drift) to FILE",
    )


def _job_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, metavar="FILE", help="YAML job config")
    parser.add_argument(
        "--run-date",
        metavar="YYYY-MM-DD",
        help="partition to write; the input window ends on it (default: today, UTC)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY.PATH=VALUE",
        help="override a config key (value parsed as YAML); repeatable",
    )
    _session_arguments(parser)


def _session_arguments(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--master",
        metavar="URL",
        help="local[N], yarn, spark://…, k8s://… or sc://… for Spark Connect "
        "(default: spark-submit's, else an embedded local[*])",
    )
    where.add_argument(
        "--remote",
        type=_connect_url,
        metavar="sc://HOST:PORT",
        help="run through the Spark Connect server at this URL, as pyspark --remote "
        "(the same as --master sc://…); needs no local Java",
    )
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark configuration, as for spark-submit (e.g. spark.driver.memory=8g); repeatable",
    )
    parser.add_argument(
        "--verbose", action="store_true", help="show stack traces (Python and JVM) on errors"
    )


def _connect_url(text: str) -> str:
    """``--remote``'s value: a Spark Connect URL, as pyspark's ``--remote`` takes."""
    if not text.startswith(SPARK_CONNECT_SCHEME) or len(text) == len(SPARK_CONNECT_SCHEME):
        raise argparse.ArgumentTypeError(
            f"needs a Spark Connect URL {SPARK_CONNECT_SCHEME}HOST[:PORT], got {text!r}"
        )
    return text


def _granularity(text: str) -> str:
    try:
        return parse_granularity(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
