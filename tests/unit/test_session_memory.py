"""The embedded session's driver heap (a quarter of the machine's memory, within 1–8 GiB) and the
statistics rows it finishes itself."""

from __future__ import annotations

import pytest

from spark_calib_cli.io.session import driver_memory, local_driver_max_rows

GIB = 1024**3


@pytest.mark.parametrize(
    ("physical", "heap"),
    [
        (16 * GIB, "4096m"),
        (24 * GIB, "6144m"),
        (2 * GIB, "1024m"),  # a quarter is 512 MiB: the floor
        (64 * GIB, "8192m"),  # a quarter is 16 GiB: the cap
        (0, "1024m"),  # unknown
    ],
)
def test_a_quarter_of_the_memory_within_bounds(physical: int, heap: str) -> None:
    assert driver_memory(physical) == heap


def test_this_machine_gets_a_heap_within_bounds() -> None:
    mib = int(driver_memory().removesuffix("m"))
    assert 1024 <= mib <= 8192


@pytest.mark.parametrize(
    ("memory", "rows"),
    [
        ("4096m", 4096 * 300),
        ("4g", 4096 * 300),
        ("4096", 4096 * 300),  # spark.driver.memory without a unit is MiB
        ("8G", 8192 * 300),
        ("1gb", 1024 * 300),
        ("2048k", 2 * 300),
        ("1048576b", 300),  # bytes
        ("2.5g", None),  # not a value Spark reads
        ("lots", None),
        ("", None),
    ],
)
def test_an_embedded_driver_finishes_300_statistics_rows_per_mib_of_heap(
    memory: str, rows: int | None
) -> None:
    assert local_driver_max_rows(memory) == rows
