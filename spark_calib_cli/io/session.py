"""Build the job's SparkSession: embedded local, a cluster master, Spark Connect or spark-submit's.

The embedded default is ``local[*]`` with a Hive catalog whose warehouse (``spark-warehouse/``)
and Derby metastore (``metastore_db/``) live under the working directory, so catalog tables
written by one run can be queried afterwards with ``spark-sql`` or a later ``spark-calib`` call
from the same directory.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from pyspark.sql import SparkSession

from spark_calib.constants import DRIVER_MAX_ROWS_CONF
from spark_calib_cli.errors import JavaNotFoundError

APP_NAME = "spark-calib"
EMBEDDED_MASTER = "local[*]"
SPARK_CONNECT_SCHEME = "sc://"
WAREHOUSE_DIR = "spark-warehouse"
METASTORE_DIR = "metastore_db"
LOG_CONFIG = "log4j2.properties"
SHUFFLE_PARTITIONS_PER_CORE = 2
MIN_LOCAL_SHUFFLE_PARTITIONS = 4
# Every date the job derives (the run date, the date of a timestamp in the window filter) is a
# UTC date, whatever the machine's zone.
SESSION_TIME_ZONE = "UTC"
# The embedded JVM's garbage collector (the throughput collector; see _embedded).
PARALLEL_GC = "-XX:+UseParallelGC"
DATAFRAME_DEBUGGING = "spark.python.sql.dataFrameDebugging.enabled"
# PySpark reads its workers' interpreter from this variable when the session's JVM starts in
# process (``spark.pyspark.python`` only reaches spark-submit's launcher, too late here).
WORKER_PYTHON_ENV = "PYSPARK_PYTHON"
# The embedded driver's JVM heap: a quarter of the machine's memory, within these bounds.
DRIVER_MEMORY_SHARE = 4
MIN_DRIVER_MEMORY_MIB = 1024
MAX_DRIVER_MEMORY_MIB = 8192
# Statistics rows an embedded driver finishes itself, per MiB of its heap (spark.calib.
# driverMaxRows). Its executors are threads of the driver's JVM and the grouped pass's Python
# workers run on the same cores, so that pass spreads nothing; the driver's NumPy is faster
# (the demo backfill's 1.76M statistics rows: 36 s grouped, 20 s on the driver). What bounds
# it is the heap that collects them: a 1 GiB heap failed on those 1.76M rows ("Java heap
# space"), so this keeps a margin of about 5.
LOCAL_DRIVER_ROWS_PER_MIB = 300
_MEMORY_UNITS_MIB = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024**2, "p": 1024**3}
_MEMORY = re.compile(r"(\d+)([kmgtp]?)(b?)")


def build_session(
    master: str | None = None,
    *,
    verbose: bool = False,
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """Return the session for one job run.

    ``master`` None: reuse spark-submit's session configuration when running under spark-submit,
    else start the embedded local session. ``sc://host:port`` (the CLI's ``--remote``, or
    ``--master sc://…``): connect with Spark Connect, no local JVM.
    ``local[...]``: an embedded session on that many cores. Any other URL (``yarn``,
    ``spark://…``, ``k8s://…``): that cluster, configured by its own spark-defaults.

    ``conf`` (the CLI's ``--conf KEY=VALUE``) is applied last, so it overrides the defaults here.

    Raises ``JavaNotFoundError`` before trying when a local JVM is needed and there is none.
    """
    remote = master is not None and master.startswith(SPARK_CONNECT_SCHEME)
    if remote and master is not None:
        builder = SparkSession.builder.remote(master).appName(APP_NAME)
    elif master is None and _under_spark_submit():
        builder = SparkSession.builder.appName(APP_NAME)
    else:
        require_java()
        builder = SparkSession.builder.master(master or EMBEDDED_MASTER).appName(APP_NAME)
        if (master or EMBEDDED_MASTER).startswith("local"):
            builder = _embedded(builder, Path.cwd(), verbose=verbose)
            memory = (conf or {}).get("spark.driver.memory", driver_memory())
            rows = local_driver_max_rows(memory)
            if rows is not None:
                builder = builder.config(DRIVER_MAX_ROWS_CONF, str(rows))
    if not remote:
        # Classic PySpark 4 records the Python call site of every Column function in the JVM
        # (about five extra round trips per call); evaluate builds a few thousand Column
        # expressions, so this alone costs seconds per run. Spark Connect captures it locally.
        builder = builder.config(DATAFRAME_DEBUGGING, "false")
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.conf.set("spark.sql.session.timeZone", SESSION_TIME_ZONE)
    if verbose:
        session.conf.set("spark.sql.pyspark.jvmStacktrace.enabled", "true")
    return session


def java_executable() -> str | None:
    """The java Spark's launcher runs: ``$JAVA_HOME/bin/java`` when it exists, else ``java``
    on PATH; None when neither does."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return str(Path(java_home) / "bin" / "java")
    return shutil.which("java")


def require_java() -> None:
    """Raise ``JavaNotFoundError`` unless ``$JAVA_HOME/bin/java`` or ``java`` on PATH exists."""
    if java_executable() is None:
        raise JavaNotFoundError(
            "java was not found (neither $JAVA_HOME/bin/java nor java on PATH); "
            "install a Java 17 runtime to run Spark"
        )


def _embedded(
    builder: SparkSession.Builder, workdir: Path, *, verbose: bool
) -> SparkSession.Builder:
    interactive = sys.stderr.isatty()
    # The NumPy kernels may run in Python workers (a grouped Arrow pass over large statistics,
    # a rollup of many days); without this they start with `python3` from PATH, which outside
    # the driver's venv lacks pyarrow ("No module named 'pyarrow'"). A value the user set wins.
    os.environ.setdefault(WORKER_PYTHON_ENV, sys.executable)
    java_options = " ".join(
        [
            _java_property("derby.system.home", str(workdir)),
            _java_property("log4j2.configurationFile", _log_config_path()),
            _java_property("user.timezone", SESSION_TIME_ZONE),
            # A run is a batch: throughput, not pause times. The first aggregation of a
            # backfill (1.76M statistics rows cached) took 16-20 s with the parallel collector
            # against 21-23 s with G1, Java 17's default.
            PARALLEL_GC,
        ]
    )
    metastore_url = f"jdbc:derby:;databaseName={workdir / METASTORE_DIR};create=true"
    return (
        builder.config("spark.sql.catalogImplementation", "hive")
        .config("spark.sql.warehouse.dir", str(workdir / WAREHOUSE_DIR))
        .config("spark.hadoop.javax.jdo.option.ConnectionURL", metastore_url)
        .config("spark.driver.extraJavaOptions", java_options)
        # The default of 200 shuffle partitions is sized for clusters; on a laptop most of them
        # would be empty tasks around a statistics table of a few thousand rows.
        .config("spark.sql.shuffle.partitions", str(_local_shuffle_partitions()))
        # Spark's default heap (1g) holds a demo day's cached statistics but not a backfill's:
        # 14 demo days are 1.76M statistics rows, and collecting them failed with "Java heap
        # space". A --conf spark.driver.memory=… the user gives wins.
        .config("spark.driver.memory", driver_memory())
        .config("spark.ui.showConsoleProgress", str(interactive).lower())
        # The UI is for people watching a run; a scheduled or piped run starts faster without it.
        .config("spark.ui.enabled", str(interactive or verbose).lower())
    )


def driver_memory(physical_bytes: int | None = None) -> str:
    """The embedded driver's heap, ``4096m`` on a 16 GiB machine: a quarter of the physical
    memory (``os.sysconf``), at least 1 GiB and at most 8 GiB; 1 GiB when it is unknown."""
    if physical_bytes is None:
        try:
            physical_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            physical_bytes = 0
    share = physical_bytes // DRIVER_MEMORY_SHARE // (1024 * 1024)
    return f"{min(MAX_DRIVER_MEMORY_MIB, max(MIN_DRIVER_MEMORY_MIB, share))}m"


def local_driver_max_rows(memory: str) -> int | None:
    """``spark.calib.driverMaxRows`` for an embedded driver with this ``spark.driver.memory``
    (``4g``, ``4096m``, ``4096``: MiB without a unit): ``LOCAL_DRIVER_ROWS_PER_MIB`` per MiB;
    None when the value is not one Spark would read that way."""
    found = _MEMORY.fullmatch(memory.strip().lower())
    if found is None:
        return None
    number, unit, byte = found.groups()
    mib = int(number) * (_MEMORY_UNITS_MIB[unit] if unit else (1 / 1024**2 if byte else 1))
    return int(mib * LOCAL_DRIVER_ROWS_PER_MIB)


def _local_shuffle_partitions() -> int:
    return max(MIN_LOCAL_SHUFFLE_PARTITIONS, SHUFFLE_PARTITIONS_PER_CORE * (os.cpu_count() or 1))


def _java_property(name: str, value: str) -> str:
    # Spark's launcher splits extraJavaOptions on blanks unless quoted; paths may hold blanks.
    return f'-D{name}="{value}"'


def _log_config_path() -> str:
    return str(resources.files("spark_calib_cli.io").joinpath(LOG_CONFIG))


def _under_spark_submit() -> bool:
    # spark-submit starts the JVM first and hands its gateway to the Python driver.
    return "PYSPARK_GATEWAY_PORT" in os.environ
