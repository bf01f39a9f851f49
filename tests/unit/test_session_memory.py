"""The embedded session's driver heap: a quarter of the machine's memory, within 1–8 GiB."""

from __future__ import annotations

import pytest

from spark_calib_cli.io.session import driver_memory

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
