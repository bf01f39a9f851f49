"""The benchmark's SparkSession: local[2], 4 shuffle partitions, UI off, UTC, quiet logs."""

from __future__ import annotations

import os
import sys
from importlib import resources

from pyspark.sql import SparkSession

from spark_calib_cli.io.session import DATAFRAME_DEBUGGING

MASTER = "local[2]"
SHUFFLE_PARTITIONS = 4
DEFAULT_DRIVER_MEMORY = "4g"
TIME_ZONE = "UTC"
APP_NAME = "spark_calib-bench"
# The job layer's quiet log4j2 configuration (read, not changed).
LOG_CONFIG = "log4j2.properties"


def build_session(driver_memory: str = DEFAULT_DRIVER_MEMORY) -> SparkSession:
    """A new local session; ``driver_memory`` only applies when no JVM is running yet."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    log_config = resources.files("spark_calib_cli.io").joinpath(LOG_CONFIG)
    java_options = f'-Duser.timezone={TIME_ZONE} -Dlog4j2.configurationFile="{log_config}"'
    session = (
        SparkSession.builder.master(MASTER)
        .appName(APP_NAME)
        .config("spark.driver.memory", driver_memory)
        .config("spark.sql.shuffle.partitions", str(SHUFFLE_PARTITIONS))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", TIME_ZONE)
        .config("spark.driver.extraJavaOptions", java_options)
        # As the job's session (spark_calib_cli/io/session.py): no Python call-site capture per
        # Column function, which costs seconds of py4j round trips per evaluate.
        .config(DATAFRAME_DEBUGGING, "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


SETTINGS = (
    "spark.master",
    DATAFRAME_DEBUGGING,
    "spark.driver.memory",
    "spark.sql.shuffle.partitions",
    "spark.sql.adaptive.enabled",
    "spark.sql.codegen.wholeStage",
    "spark.sql.session.timeZone",
)


def spark_settings(spark: SparkSession) -> dict[str, str | None]:
    """The session settings that matter for the timings, as the session reports them."""
    conf = spark.sparkContext.getConf()
    values: dict[str, str | None] = {}
    for key in SETTINGS:
        value = conf.get(key)
        if value is None:
            try:
                value = spark.conf.get(key)
            except Exception:  # not set and no default known to this Spark version
                value = None
        values[key] = value
    return values
