"""Output tables written a few at a time, from driver threads, in a fixed order of groups.

A run writes eight to twelve tables, most of them a few hundred rows. Each write is mostly
waiting: planning the INSERT, the catalog's partition calls, committing and renaming files.
One after the other, a demo day spends more time in those waits than in writing rows; from a
few threads the waits overlap with each other and with the one large write (the statistics).

The order readers rely on stays (docs/tables.md, "Reruns and write order"): the writes come in
groups, a group starts when the one before has ended, and only the writes within a group run
at once. So the metrics, the group after every other evaluation table, still mean that the
run's other tables are there.

Each write stays what it is alone: its own Spark job, its own staged swap of the partitions
it replaces (``spark_calib_cli.io.partitions``), so a crash leaves each table's partition old
or new. Within a group, the writes after a failed one are no longer skipped, since they run
beside it; the first failure, in the order given, is raised once every write of the group has
ended (no write is left running behind the error), and no later group starts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["WRITE_THREADS", "Write", "write_in_groups"]

T = TypeVar("T")
# One write: what it writes (for the progress line) and the call that writes it.
Write = tuple[str, Callable[[], T]]
# Threads that write at once. The waits overlap at two or three writes already; with more,
# the writes' tasks only queue behind each other's on the local session's few cores.
WRITE_THREADS = 3


def write_in_groups(
    groups: Sequence[Sequence[Write[T]]],
    report: Callable[[str], None],
    *,
    threads: int = WRITE_THREADS,
) -> list[T]:
    """Run the groups of ``(what, write)`` pairs one after the other, the writes of a group
    from up to ``threads`` threads; return every result in the order given. ``report`` gets
    ``writing <what> (k of n)`` as each write starts. Raises the first exception of a group,
    in the order given, after all of its writes have ended."""
    count = sum(len(group) for group in groups)
    lines = threading.Lock()
    results: list[T] = []

    def run(index: int, what: str, write: Callable[[], T]) -> T:
        with lines:
            report(f"writing {what} ({index} of {count})")
        return write()

    for group in groups:
        first = len(results) + 1
        numbered = [(index, what, write) for index, (what, write) in enumerate(group, first)]
        if len(group) <= 1 or threads <= 1:
            results.extend(run(*write) for write in numbered)
            continue
        with ThreadPoolExecutor(min(threads, len(group)), thread_name_prefix="write") as pool:
            futures = [pool.submit(run, *write) for write in numbered]
        # Leaving the block waited for every write of the group; now the results, or the
        # first error.
        results.extend(future.result() for future in futures)
    return results
