"""Does the largest log evaluate with a small driver heap? One run in a separate process.

``spark.driver.memory`` is fixed when the JVM starts, so the check runs
``python -m bench.low_memory`` in a child process with its own session: one spark_calib run of
the typical config (outputs written, as in the benchmark), its wall time (no warm-up, so it
includes JIT warm-up) and the child's driver JVM peak RSS, printed as JSON on stdout.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.configs import BINARY, TYPICAL_SLICES, config

TIMEOUT_S = 3600.0


def check(log: Path, driver_memory: str, rows: int) -> dict[str, Any]:
    """Run the check in a child process; the dict says whether it succeeded and what it cost."""
    command = [sys.executable, "-m", "bench.low_memory", "--log", str(log)]
    command += ["--driver-memory", driver_memory]
    summary: dict[str, Any] = {"driver_memory": driver_memory, "rows": rows, "config": "typical"}
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        return {**summary, "ok": False, "error": f"timed out after {TIMEOUT_S:.0f} s"}
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-5:]
        return {**summary, "ok": False, "error": "\n".join(tail)}
    return {**summary, **json.loads(done.stdout.strip().splitlines()[-1])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--driver-memory", required=True)
    args = parser.parse_args(argv)

    from bench.machine import memory
    from bench.session import build_session
    from bench.spark_variants import SparkCalibRunner

    spark = build_session(args.driver_memory)
    with tempfile.TemporaryDirectory(prefix="bench-low-memory-") as work:
        runner = SparkCalibRunner(spark, args.log, config(BINARY, TYPICAL_SLICES), Path(work))
        start = time.perf_counter()
        runner.run()
        seconds = time.perf_counter() - start
        runner.cleanup()
    # Only the JVM's numbers: ru_maxrss of a child process starts at its parent's peak.
    jvm = {key: value for key, value in memory(spark).items() if not key.startswith("python")}
    result = {"ok": True, "seconds": round(seconds, 3), **jvm}
    spark.stop()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
