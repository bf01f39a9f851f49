"""The machine a benchmark ran on, and the peak memory of its driver JVM and Python process.

Peak RSS is the kernel's high-water mark: ``VmHWM`` of ``/proc/<pid>/status`` for the JVM that
PySpark started as a child of this process (local mode: the driver and executors in one JVM),
``ru_maxrss`` of ``getrusage`` for Python. Both are peaks since the process started, so they
include generating logs that were not cached yet and the pandas baseline.
"""

from __future__ import annotations

import os
import platform
import resource
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

PROC = Path("/proc")
KIB = 1024
MIB = KIB * KIB
JAVA = "java"


def _meminfo_total_bytes() -> int | None:
    try:
        for line in (PROC / "meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * KIB
    except OSError:
        pass
    return None


def _cpu_model() -> str:
    try:
        for line in (PROC / "cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _java_version(spark: SparkSession) -> str:
    try:
        system = spark.sparkContext._jvm.java.lang.System  # type: ignore[union-attr]
        return f"{system.getProperty('java.vendor')} {system.getProperty('java.version')}"
    except Exception:  # Spark Connect or no py4j gateway: the version is not essential.
        return "unknown"


def describe(spark: SparkSession) -> dict[str, Any]:
    """nproc, total RAM, CPU model, OS, Python, PySpark and Java versions."""
    total = _meminfo_total_bytes()
    return {
        "nproc": os.cpu_count(),
        "total_ram_bytes": total,
        "total_ram_gib": round(total / KIB**3, 1) if total else None,
        "cpu_model": _cpu_model(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "pyspark": spark.version,
        "java": _java_version(spark),
    }


def load_average() -> str:
    """The 1, 5 and 15 minute load averages (runnable processes; nproc is the machine's
    capacity), or "unknown"."""
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "unknown"
    return f"{one:.1f}, {five:.1f}, {fifteen:.1f}"


def _children_psutil(pid: int) -> list[tuple[int, str]] | None:
    try:
        import psutil
    except ImportError:
        return None
    return [(child.pid, child.name()) for child in psutil.Process(pid).children(recursive=True)]


def _children_proc(pid: int) -> list[tuple[int, str]]:
    """Descendants of ``pid`` from /proc/<pid>/stat (pid, comm, state, ppid, …)."""
    parent_of: dict[int, tuple[int, str]] = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        parent_of[int(entry.name)] = (ppid, comm)
    found: list[tuple[int, str]] = []
    frontier = {pid}
    while frontier:
        children = [(p, comm) for p, (ppid, comm) in parent_of.items() if ppid in frontier]
        found.extend(children)
        frontier = {p for p, _ in children}
    return found


def driver_jvm_pid() -> int | None:
    """The java process started by this Python process (PySpark's local driver), if any."""
    children = _children_psutil(os.getpid())
    if children is None:
        children = _children_proc(os.getpid())
    java = [pid for pid, name in children if name == JAVA]
    return java[0] if java else None


def peak_rss_bytes(pid: int) -> int | None:
    """VmHWM of ``pid`` in bytes, None when it cannot be read."""
    try:
        for line in (PROC / str(pid) / "status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * KIB
    except OSError:
        pass
    return None


def python_peak_rss_bytes() -> int:
    """Peak RSS of this Python process (ru_maxrss is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * KIB


def jvm_max_heap_bytes(spark: SparkSession) -> int | None:
    """The driver JVM's maximum heap (what spark.driver.memory became)."""
    try:
        runtime = spark.sparkContext._jvm.java.lang.Runtime.getRuntime()  # type: ignore[union-attr]
        return int(runtime.maxMemory())
    except Exception:  # Spark Connect or no py4j gateway.
        return None


def memory(spark: SparkSession) -> dict[str, Any]:
    """Peak RSS of the driver JVM and of Python, and the JVM's max heap, in bytes and MiB."""
    pid = driver_jvm_pid()
    jvm = peak_rss_bytes(pid) if pid is not None else None
    python = python_peak_rss_bytes()
    heap = jvm_max_heap_bytes(spark)
    return {
        "driver_jvm_pid": pid,
        "driver_jvm_peak_rss_bytes": jvm,
        "driver_jvm_peak_rss_mib": round(jvm / MIB) if jvm else None,
        "driver_jvm_max_heap_mib": round(heap / MIB) if heap else None,
        "python_peak_rss_bytes": python,
        "python_peak_rss_mib": round(python / MIB),
    }
