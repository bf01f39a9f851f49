"""The command-line side every subcommand shares: its validated config and run date, its
Spark session, its progress lines and the list of diagrams it drew."""

from __future__ import annotations

import argparse
import datetime as dt
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pyspark.sql import SparkSession

from spark_calib.config import Config, load_config
from spark_calib.errors import ConfigError
from spark_calib_cli.commands.run_date import parse_run_date
from spark_calib_cli.io.session import SPARK_CONNECT_SCHEME, build_session
from spark_calib_cli.report.rendered import draw_processes

PROG = "spark-calib"


def validated(args: argparse.Namespace) -> tuple[Config, dt.date]:
    """The loaded ``--config`` (with its ``--set`` overrides) and the ``--run-date``, checked
    before Spark starts; raises ``ConfigError`` for either."""
    run_date = parse_run_date(args.run_date)
    return load_config(args.config, overrides=args.set), run_date


def start_session(args: argparse.Namespace, progress: Callable[[str], None]) -> SparkSession:
    """Say where Spark runs, then build the session of ``--master``/``--remote`` and
    ``--conf``. A bad ``SPARK_CALIB_DRAW_PROCESSES`` is a ``ConfigError`` before anything
    runs, not after the tables are written."""
    draw_processes()
    master = master_url(args)
    if master is not None and master.startswith(SPARK_CONNECT_SCHEME):
        progress(f"connecting to Spark Connect at {master}")
    else:
        progress(f"starting Spark ({master or 'default master'})")
    return build_session(master, verbose=args.verbose, conf=spark_conf(args.conf))


def master_url(args: argparse.Namespace) -> str | None:
    """``--remote sc://…`` or ``--master URL`` (argparse lets at most one through)."""
    remote: str | None = args.remote
    master: str | None = args.master
    return remote or master


def spark_conf(pairs: Sequence[str]) -> dict[str, str]:
    """The ``--conf KEY=VALUE`` pairs as a dict; raises ``ConfigError`` for a pair without
    ``=`` or with an empty key."""
    conf: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--conf needs KEY=VALUE, got {pair!r}")
        conf[key.strip()] = value
    return conf


def progress_printer() -> Callable[[str], None]:
    """Print ``spark-calib [  12.3s] message`` lines, timed from this call."""
    start = time.monotonic()

    def show(message: str) -> None:
        print(f"{PROG} [{time.monotonic() - start:6.1f}s] {message}", flush=True)

    return show


def paths_text(paths: Sequence[Path], out_dir: Path | str) -> str:
    """``diagrams (N) in DIR:`` and one indented line per diagram."""
    return "\n".join([f"diagrams ({len(paths)}) in {out_dir}:", *[f"  {path}" for path in paths]])


def html_text(path: Path | str, seconds: float) -> str:
    """``HTML report: FILE (written in 1.2 s)``."""
    return f"HTML report: {path} (written in {seconds:.1f} s)"
