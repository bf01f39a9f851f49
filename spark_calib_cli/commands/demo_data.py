"""``spark-calib demo-data``: write the seeded binary, multiclass, regression, click-through
and segments demo logs."""

from __future__ import annotations

import argparse
from pathlib import Path

from spark_calib_cli.commands.cli import master_url, progress_printer, spark_conf
from spark_calib_cli.commands.run_date import parse_run_date
from spark_calib_cli.demo import logs as demo
from spark_calib_cli.exit_codes import ExitCode
from spark_calib_cli.io.session import build_session

LOG_NAMES = ("binary", "multiclass", "regression", "ctr", "segments")
# What Spark writes into a directory once every task of the write has committed.
SUCCESS_MARKER = "_SUCCESS"


def demo_data_command(args: argparse.Namespace) -> int:
    """``spark-calib demo-data``: write the seeded binary, multiclass, regression,
    click-through (``ctr``) and segments (for the slice search) demo logs under ``--out``;
    returns ``ExitCode.OK``. With ``--if-missing``, a log whose local directory already has
    Spark's ``_SUCCESS`` marker (a complete earlier write, whatever its options) is kept, and
    no session starts when every log is there."""
    end_date = parse_run_date(args.end_date)
    progress = progress_printer()
    names = [name for name in LOG_NAMES if not (args.if_missing and _complete(args.out, name))]
    if not names:
        progress(f"the demo logs in {args.out} are complete; kept")
        return int(ExitCode.OK)
    spark = build_session(master_url(args), verbose=args.verbose, conf=spark_conf(args.conf))
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
            ("ctr", demo.ctr_log(spark, args.ctr_rows, args.seed + 3, end_date)),
            ("segments", demo.segments_log(spark, args.segments_rows, args.seed + 4, end_date)),
        )
        for name, frame in logs:
            if name not in names:
                progress(f"the {name} demo log in {_path(args.out, name)} is complete; kept")
                continue
            path = _path(args.out, name)
            progress(f"writing the {name} demo log to {path}")
            demo.write_log(frame, path)
    finally:
        spark.stop()
    return int(ExitCode.OK)


def _path(out: str, name: str) -> str:
    return f"{out.rstrip('/')}/{name}"


def _complete(out: str, name: str) -> bool:
    """Whether the log ``name`` under ``out`` has Spark's success marker (a local path; a URI
    of another file system counts as missing)."""
    return (Path(_path(out, name)) / SUCCESS_MARKER).is_file()
