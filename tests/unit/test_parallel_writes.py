"""Tables written from several threads: groups in order, results in order, errors after every
write of the group ended, and the session's dynamic partition overwrite held while any INSERT
needs it (no Spark here: the writes and the session's settings are stand-ins)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from spark_calib_cli.io.parallel_writes import write_in_groups
from spark_calib_cli.io.partitions import PARTITION_OVERWRITE_MODE_CONF, DynamicOverwrites
from spark_calib_cli.io.tables import (
    CONFUSION_TABLE,
    INVALID_ROWS_TABLE,
    METRICS_TABLE,
    RELIABILITY_TABLE,
    STATS_TABLE,
    WINDOWS_TABLE,
    write_groups,
)


def test_the_writes_run_at_once_and_their_results_come_in_the_order_given() -> None:
    started = threading.Barrier(3, timeout=5)
    lines: list[str] = []

    def write(name: str) -> Any:
        def run() -> str:
            # Every write waits for the other two: they can only pass together.
            started.wait()
            return f"location of {name}"

        return run

    results = write_in_groups(
        [[(name, write(name)) for name in ("a", "b", "c")]], lines.append, threads=3
    )

    assert results == ["location of a", "location of b", "location of c"]
    assert sorted(lines) == ["writing a (1 of 3)", "writing b (2 of 3)", "writing c (3 of 3)"]


def test_the_first_error_in_order_is_raised_once_every_write_has_ended() -> None:
    ended: list[str] = []

    def slow() -> str:
        time.sleep(0.2)
        ended.append("slow")
        return "slow"

    def failing(message: str, delay: float) -> Any:
        def run() -> str:
            time.sleep(delay)
            ended.append(message)
            raise OSError(message)

        return run

    def never() -> str:
        ended.append("next group")
        return "next group"

    with pytest.raises(OSError, match="first in order"):
        write_in_groups(
            [
                [
                    ("slow", slow),
                    ("late failure", failing("first in order", 0.1)),
                    ("early failure", failing("second in order", 0.0)),
                ],
                [("next group", never)],
            ],
            lambda _: None,
            threads=3,
        )
    # The whole group ended, and the group after it never started.
    assert sorted(ended) == ["first in order", "second in order", "slow"]


def test_one_thread_writes_one_after_the_other() -> None:
    order: list[str] = []

    def write(name: str) -> Any:
        return lambda: order.append(name)

    write_in_groups([[(name, write(name)) for name in ("a", "b", "c")]], lambda _: None, threads=1)
    assert order == ["a", "b", "c"]


def test_a_group_starts_when_the_one_before_has_ended_and_numbers_run_on() -> None:
    events: list[str] = []
    lines: list[str] = []

    def write(name: str, delay: float) -> Any:
        def run() -> str:
            events.append(f"start {name}")
            time.sleep(delay)
            events.append(f"end {name}")
            return name

        return run

    results = write_in_groups(
        [[("a", write("a", 0.2)), ("b", write("b", 0.0))], [("c", write("c", 0.0))]],
        lines.append,
        threads=2,
    )

    assert results == ["a", "b", "c"]
    assert events.index("start c") > events.index("end a")
    assert lines[-1] == "writing c (3 of 3)"


def test_the_statistics_then_the_metrics_follow_the_other_tables() -> None:
    tables = [INVALID_ROWS_TABLE, STATS_TABLE, RELIABILITY_TABLE, CONFUSION_TABLE, METRICS_TABLE]
    assert write_groups([*tables, WINDOWS_TABLE]) == [
        [INVALID_ROWS_TABLE, RELIABILITY_TABLE, CONFUSION_TABLE],
        [STATS_TABLE],
        [METRICS_TABLE],
        [WINDOWS_TABLE],
    ]
    assert write_groups([RELIABILITY_TABLE, METRICS_TABLE]) == [
        [RELIABILITY_TABLE],
        [METRICS_TABLE],
    ]


class _Conf:
    def __init__(self, mode: str | None) -> None:
        self.values = {} if mode is None else {PARTITION_OVERWRITE_MODE_CONF: mode}
        self.history: list[str] = []

    def get(self, key: str) -> str | None:
        return self.values.get(key)

    def set(self, key: str, value: str) -> None:
        self.values[key] = value
        self.history.append(value)


class _Session:
    def __init__(self, mode: str | None) -> None:
        self.conf = _Conf(mode)


def test_the_mode_stays_dynamic_until_the_last_of_two_overlapping_inserts_ends() -> None:
    spark = _Session("static")
    hold = DynamicOverwrites()
    first = hold(spark)  # type: ignore[arg-type]
    second = hold(spark)  # type: ignore[arg-type]
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    # The first INSERT ended while the second runs: restoring "static" now would turn the
    # second into a static overwrite of its whole table.
    assert spark.conf.values[PARTITION_OVERWRITE_MODE_CONF] == "dynamic"
    second.__exit__(None, None, None)
    assert spark.conf.values[PARTITION_OVERWRITE_MODE_CONF] == "static"
    assert spark.conf.history == ["dynamic", "static"]


def test_an_unset_mode_is_restored_as_static_and_a_failing_insert_restores_it_too() -> None:
    spark = _Session(None)
    hold = DynamicOverwrites()
    with pytest.raises(RuntimeError), hold(spark):  # type: ignore[arg-type]
        assert spark.conf.values[PARTITION_OVERWRITE_MODE_CONF] == "dynamic"
        raise RuntimeError("the INSERT failed")
    assert spark.conf.values[PARTITION_OVERWRITE_MODE_CONF] == "static"
