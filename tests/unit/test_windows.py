"""Window arithmetic (spark_calib.windows), by the calendar."""

from __future__ import annotations

import datetime as dt

import pytest

from spark_calib.windows import TimeWindow, parse_granularity, previous_window, window_of

D = dt.date


@pytest.mark.parametrize(
    ("granularity", "run_date", "start", "end"),
    [
        ("day", D(2024, 6, 26), D(2024, 6, 26), D(2024, 6, 26)),
        ("week", D(2024, 6, 26), D(2024, 6, 24), D(2024, 6, 30)),  # a Wednesday
        ("week", D(2024, 6, 24), D(2024, 6, 24), D(2024, 6, 30)),  # its Monday
        ("week", D(2024, 6, 30), D(2024, 6, 24), D(2024, 6, 30)),  # its Sunday
        ("week", D(2025, 1, 1), D(2024, 12, 30), D(2025, 1, 5)),  # across a year
        ("month", D(2024, 2, 10), D(2024, 2, 1), D(2024, 2, 29)),  # leap year
        ("month", D(2023, 12, 31), D(2023, 12, 1), D(2023, 12, 31)),
        ("rolling_7d", D(2024, 3, 3), D(2024, 2, 26), D(2024, 3, 3)),
    ],
)
def test_window_of(granularity: str, run_date: dt.date, start: dt.date, end: dt.date) -> None:
    window = window_of(granularity, run_date)
    assert (window.start, window.end) == (start, end)
    assert window.days[0] == start and window.days[-1] == end
    assert len(window.days) == (end - start).days + 1


@pytest.mark.parametrize(
    ("window", "start", "end"),
    [
        (TimeWindow("day", D(2024, 3, 1), D(2024, 3, 1)), D(2024, 2, 29), D(2024, 2, 29)),
        (TimeWindow("week", D(2024, 6, 24), D(2024, 6, 30)), D(2024, 6, 17), D(2024, 6, 23)),
        (TimeWindow("month", D(2024, 3, 1), D(2024, 3, 31)), D(2024, 2, 1), D(2024, 2, 29)),
        (TimeWindow("rolling_3d", D(2024, 6, 4), D(2024, 6, 6)), D(2024, 6, 1), D(2024, 6, 3)),
    ],
)
def test_previous_window_is_the_one_just_before(
    window: TimeWindow, start: dt.date, end: dt.date
) -> None:
    previous = previous_window(window)
    assert (previous.granularity, previous.start, previous.end) == (window.granularity, start, end)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("day", "day"),
        ("week", "week"),
        ("month", "month"),
        ("rolling:7", "rolling_7d"),
        ("rolling_30d", "rolling_30d"),
        ("rolling:1", "day"),
    ],
)
def test_parse_granularity(text: str, canonical: str) -> None:
    assert parse_granularity(text) == canonical


@pytest.mark.parametrize("text", ["weekly", "rolling:0", "rolling:", "rolling:x", "Week", ""])
def test_bad_granularity_names_the_accepted_forms(text: str) -> None:
    with pytest.raises(ValueError, match="day, week, month or rolling:N"):
        parse_granularity(text)


def test_label() -> None:
    assert TimeWindow("week", D(2024, 6, 24), D(2024, 6, 30)).label() == "2024-06-24..2024-06-30"
    assert TimeWindow("day", D(2024, 6, 24), D(2024, 6, 24)).label() == "2024-06-24"
