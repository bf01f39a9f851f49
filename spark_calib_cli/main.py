"""``spark-calib``: the command line of the scheduled job, the report and the demo data.

    spark-calib evaluate --config conf/FILE.yaml [--run-date YYYY-MM-DD]
                         [--master URL | --remote sc://HOST:PORT]
                         [--set key.path=value ...] [--report DIR] [--verbose]
    spark-calib evaluate ... --from YYYY-MM-DD      (every date from --from to --run-date)
    spark-calib rollup   --config conf/FILE.yaml --run-date YYYY-MM-DD
                         --granularity week|month|rolling:N
    spark-calib report   --config conf/FILE.yaml [--run-date YYYY-MM-DD] [--out DIR] ...
    spark-calib demo-data --out DIR [--binary-rows N] [--multiclass-rows N]
                          [--regression-rows N] [--seed S]

The config is validated before Spark starts. A failure prints one line on stderr and exits with
the code of its cause (see ``exit_codes.ExitCode`` and the README); ``--verbose`` adds the
Python and JVM stack traces. A run whose ``fail: true`` alert rule fired writes every table and
then exits with ``ExitCode.ALERT``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from pyspark.sql import SparkSession

from spark_calib.config import Config, load_config
from spark_calib.errors import ConfigError
from spark_calib.windows import parse_granularity
from spark_calib_cli.commands.evaluate import (
    REGRESSION_TASK,
    EvaluateOutcome,
    check_job_config,
    run_evaluate,
)
from spark_calib_cli.commands.report import DEFAULT_REPORT_SLICES, default_report_dir, run_report
from spark_calib_cli.commands.rollup import run_rollup
from spark_calib_cli.commands.run_date import parse_run_date
from spark_calib_cli.console.monitoring_text import alerts_text, rollup_text
from spark_calib_cli.console.regression_summary import format_regression_summary
from spark_calib_cli.console.summary import format_summary
from spark_calib_cli.demo import logs as demo
from spark_calib_cli.exit_codes import ExitCode, exit_code_for
from spark_calib_cli.io.session import SPARK_CONNECT_SCHEME, build_session
from spark_calib_cli.report.trend_rows import DEFAULT_TREND_WINDOWS

PROG = "spark-calib"


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


def evaluate_command(args: argparse.Namespace) -> int:
    """``spark-calib evaluate``: one run of the scheduled job, or one per date from
    ``--from`` to ``--run-date`` (a backfill) in one Spark session."""
    config, run_date = _validated(args)
    check_job_config(config)
    dates = _run_dates(args.from_date, run_date)
    progress = _progress_printer()
    spark = _session(args, progress)
    paths: list[Path] = []
    failed = False
    try:
        for day in dates:
            outcome = run_evaluate(spark, config, day, progress=progress)
            failed = failed or outcome.monitoring.failed
            if day != run_date:
                print(f"run_date {day}: {outcome.n_rows:,} input rows")
                print(alerts_text(outcome.monitoring, len(config.alerts)), flush=True)
        if args.report is not None:
            # Same session: the diagrams cost no second Spark start-up.
            progress(f"drawing the diagrams into {args.report}")
            paths = run_report(spark, config, run_date, Path(args.report))
    finally:
        spark.stop()
    progress("done")
    print(_outcome_text(outcome))
    print(alerts_text(outcome.monitoring, len(config.alerts)))
    if args.report is not None:
        print(_paths_text(paths, args.report))
    return int(ExitCode.ALERT if failed else ExitCode.OK)


def rollup_command(args: argparse.Namespace) -> int:
    """``spark-calib rollup``: a week, month or rolling window from the daily statistics."""
    config, run_date = _validated(args)
    check_job_config(config)
    progress = _progress_printer()
    spark = _session(args, progress)
    paths: list[Path] = []
    try:
        outcome = run_rollup(spark, config, run_date, args.granularity, progress=progress)
        if args.report is not None:
            progress(f"drawing the diagrams into {args.report}")
            paths = run_report(
                spark, config, outcome.window.end, Path(args.report), granularity=args.granularity
            )
    finally:
        spark.stop()
    progress("done")
    print(rollup_text(outcome, len(config.alerts)))
    if args.report is not None:
        print(_paths_text(paths, args.report))
    return int(ExitCode.ALERT if outcome.monitoring.failed else ExitCode.OK)


def report_command(args: argparse.Namespace) -> int:
    """``spark-calib report``: the diagrams of one run date, as PNG files."""
    config, run_date = _validated(args)
    check_job_config(config)
    out_dir = Path(args.out) if args.out else default_report_dir(run_date)
    progress = _progress_printer()
    spark = _session(args, progress)
    try:
        progress(f"reading the tables of run_date {run_date}")
        paths = run_report(
            spark,
            config,
            run_date,
            out_dir,
            top_slices=args.slices,
            granularity=args.granularity,
            trend_windows=args.trend,
        )
    finally:
        spark.stop()
    print(_paths_text(paths, out_dir))
    return int(ExitCode.OK)


def demo_data_command(args: argparse.Namespace) -> int:
    """``spark-calib demo-data``: write the seeded binary, multiclass and regression demo logs."""
    end_date = parse_run_date(args.end_date)
    progress = _progress_printer()
    spark = build_session(_master(args), verbose=args.verbose, conf=_spark_conf(args.conf))
    try:
        logs = (
            ("binary", demo.binary_log(spark, args.binary_rows, args.seed, end_date)),
            (
                "multiclass",
                demo.multiclass_log(spark, args.multiclass_rows, args.seed + 1, end_date),
            ),
            (
                "regression",
                demo.regression_log(spark, args.regression_rows, args.seed + 2, end_date),
            ),
        )
        for name, frame in logs:
            path = f"{args.out.rstrip('/')}/{name}"
            progress(f"writing the {name} demo log to {path}")
            demo.write_log(frame, path)
    finally:
        spark.stop()
    return int(ExitCode.OK)


def _session(args: argparse.Namespace, progress: Callable[[str], None]) -> SparkSession:
    master = _master(args)
    if master is not None and master.startswith(SPARK_CONNECT_SCHEME):
        progress(f"connecting to Spark Connect at {master}")
    else:
        progress(f"starting Spark ({master or 'default master'})")
    return build_session(master, verbose=args.verbose, conf=_spark_conf(args.conf))


def _master(args: argparse.Namespace) -> str | None:
    """``--remote sc://…`` or ``--master URL`` (argparse lets at most one through)."""
    remote: str | None = args.remote
    master: str | None = args.master
    return remote or master


def _connect_url(text: str) -> str:
    """``--remote``'s value: a Spark Connect URL, as pyspark's ``--remote`` takes."""
    if not text.startswith(SPARK_CONNECT_SCHEME) or len(text) == len(SPARK_CONNECT_SCHEME):
        raise argparse.ArgumentTypeError(
            f"needs a Spark Connect URL {SPARK_CONNECT_SCHEME}HOST[:PORT], got {text!r}"
        )
    return text


def _spark_conf(pairs: Sequence[str]) -> dict[str, str]:
    conf: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--conf needs KEY=VALUE, got {pair!r}")
        conf[key.strip()] = value
    return conf


def _run_dates(first_text: str | None, last: dt.date) -> list[dt.date]:
    """The dates from ``--from`` to ``--run-date``, or the run date alone."""
    first = last if first_text is None else parse_run_date(first_text)
    if first > last:
        raise ConfigError(f"--from {first} is after --run-date {last}")
    return [first + dt.timedelta(days=i) for i in range((last - first).days + 1)]


def _granularity(text: str) -> str:
    try:
        return parse_granularity(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _validated(args: argparse.Namespace) -> tuple[Config, dt.date]:
    run_date = parse_run_date(args.run_date)
    return load_config(args.config, overrides=args.set), run_date


def _outcome_text(outcome: EvaluateOutcome) -> str:
    invalid = sum(outcome.invalid_counts.values())
    reasons = ", ".join(f"{reason}={n:,}" for reason, n in sorted(outcome.invalid_counts.items()))
    lines = [
        "",
        f"run_date {outcome.run_date}  run_id {outcome.run_id}  config_hash {outcome.config_hash}",
        f"{outcome.n_rows:,} input rows, {invalid:,} invalid"
        + (f" ({reasons})" if reasons else ""),
        "",
        (
            format_regression_summary(outcome.summary)
            if outcome.task == REGRESSION_TASK
            else format_summary(outcome.summary)
        ),
        "",
        f"tables (partition run_date={outcome.run_date}):",
        *[f"  {location}" for location in outcome.tables.values()],
    ]
    return "\n".join(lines)


def _paths_text(paths: Sequence[Path], out_dir: Path | str) -> str:
    return "\n".join([f"diagrams ({len(paths)}) in {out_dir}:", *[f"  {path}" for path in paths]])


def _progress_printer() -> Callable[[str], None]:
    """Print ``spark-calib [  12.3s] message`` lines, timed from this call."""
    start = time.monotonic()

    def show(message: str) -> None:
        print(f"{PROG} [{time.monotonic() - start:6.1f}s] {message}", flush=True)

    return show


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

    evaluate = commands.add_parser(
        "evaluate", help="evaluate one run date and write the calibration tables"
    )
    _job_arguments(evaluate)
    evaluate.add_argument(
        "--report",
        metavar="DIR",
        help="also draw the diagrams into DIR (as spark-calib report does)",
    )
    evaluate.add_argument(
        "--from",
        dest="from_date",
        metavar="YYYY-MM-DD",
        help="evaluate every date from this one to --run-date, in order (a backfill, or a "
        "rerun after late labels)",
    )
    evaluate.set_defaults(command=evaluate_command)

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
    rollup.set_defaults(command=rollup_command)

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
    report.set_defaults(command=report_command)

    demo_data = commands.add_parser("demo-data", help="write the seeded synthetic demo logs")
    demo_data.add_argument("--out", required=True, metavar="DIR", help="directory for the logs")
    demo_data.add_argument("--binary-rows", type=int, default=demo.DEFAULT_BINARY_ROWS)
    demo_data.add_argument("--multiclass-rows", type=int, default=demo.DEFAULT_MULTICLASS_ROWS)
    demo_data.add_argument("--regression-rows", type=int, default=demo.DEFAULT_REGRESSION_ROWS)
    demo_data.add_argument("--seed", type=int, default=demo.DEFAULT_SEED)
    demo_data.add_argument(
        "--end-date", default=demo.DEFAULT_END_DATE.isoformat(), help="last event_date"
    )
    _session_arguments(demo_data)
    demo_data.set_defaults(command=demo_data_command)
    return parser


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
