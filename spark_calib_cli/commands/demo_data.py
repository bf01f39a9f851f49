"""``spark-calib demo-data``: write the seeded binary, multiclass, regression, click-through
and segments demo logs."""

from __future__ import annotations

import argparse

from spark_calib_cli.commands.cli import master_url, progress_printer, spark_conf
from spark_calib_cli.commands.run_date import parse_run_date
from spark_calib_cli.demo import logs as demo
from spark_calib_cli.exit_codes import ExitCode
from spark_calib_cli.io.session import build_session


def demo_data_command(args: argparse.Namespace) -> int:
    """``spark-calib demo-data``: write the seeded binary, multiclass, regression,
    click-through (``ctr``) and segments (for the slice search) demo logs under ``--out``;
    returns ``ExitCode.OK``."""
    end_date = parse_run_date(args.end_date)
    progress = progress_printer()
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
            path = f"{args.out.rstrip('/')}/{name}"
            progress(f"writing the {name} demo log to {path}")
            demo.write_log(frame, path)
    finally:
        spark.stop()
    return int(ExitCode.OK)
