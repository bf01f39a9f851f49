"""Several output tables written at once, from a few driver threads.

A run writes eight to twelve tables, most of them a few hundred rows. Each write is mostly
waiting: planning the INSERT, the catalog's partition calls, committing and renaming files.
One after the other, a demo day spends more time in those waits than in writing rows; from a
few threads the waits overlap with each other and with the one large write (the statistics).

Each write stays what it is alone: its own Spark job, its own staged swap of the partitions
it replaces (``spark_calib_cli.io.partitions``), so a crash leaves each table's partition old
or new whichever threads had finished. The tables written after a failed one are no longer
skipped, since they run beside it; the first failure, in the order given, is raised once every
write has ended, so no write is left running behind the error.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["WRITE_THREADS", "write_in_parallel"]

T = TypeVar("T")
# Threads that write at once. The local session has two to eight cores: the waits overlap at
# two or three writes already, and more threads only queue their tasks behind each other's.
WRITE_THREADS = 3


def write_in_parallel(
    writes: Sequence[tuple[str, Callable[[], T]]],
    report: Callable[[str], None],
    *,
    threads: int = WRITE_THREADS,
) -> list[T]:
    """Run the ``(what, write)`` pairs from up to ``threads`` threads; return their results in
    the order given. ``report`` gets ``writing <what> (k of n)`` as each one starts. Raises the
    first exception of the writes, in the order given, after all of them have ended."""
    count = len(writes)
    lines = threading.Lock()

    def run(index: int, what: str, write: Callable[[], T]) -> T:
        with lines:
            report(f"writing {what} ({index} of {count})")
        return write()

    if count <= 1 or threads <= 1:
        return [run(index, what, write) for index, (what, write) in enumerate(writes, start=1)]
    with ThreadPoolExecutor(max_workers=min(threads, count), thread_name_prefix="write") as pool:
        futures = [
            pool.submit(run, index, what, write)
            for index, (what, write) in enumerate(writes, start=1)
        ]
    # Leaving the block waited for every write; now the results, or the first error.
    return [future.result() for future in futures]
