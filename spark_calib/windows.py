"""Time windows of run dates: a day, an ISO week, a calendar month, or the last N days.

A window is an inclusive range of dates ``[start, end]``. Windows are built from daily
statistics, so every window is a set of whole run dates:

- ``day``: the run date itself;
- ``week``: the ISO week (Monday to Sunday) containing the run date;
- ``month``: the calendar month containing the run date;
- ``rolling_Nd`` (written ``rolling:N`` on the command line): the N days ending on the run date.

A window's *previous* window is the one of the same kind just before it, with no overlap:
the day before, the week before, the month before, the N days before.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

DAY = "day"
WEEK = "week"
MONTH = "month"
ROLLING_PREFIX = "rolling_"
ROLLING_SUFFIX = "d"
_ROLLING_ARGUMENT = re.compile(r"^rolling[:_](\d+)d?$")
ONE_DAY = dt.timedelta(days=1)


@dataclass(frozen=True)
class TimeWindow:
    """The dates ``start`` to ``end`` (inclusive) of one window of ``granularity``."""

    granularity: str
    start: dt.date
    end: dt.date

    @property
    def days(self) -> list[dt.date]:
        """Every date of the window, in order."""
        return [self.start + dt.timedelta(days=i) for i in range((self.end - self.start).days + 1)]

    def label(self) -> str:
        """``2024-06-24..2024-06-30`` (or the one date of a one-day window)."""
        if self.start == self.end:
            return self.start.isoformat()
        return f"{self.start.isoformat()}..{self.end.isoformat()}"


def parse_granularity(text: str) -> str:
    """The canonical granularity name of ``day``, ``week``, ``month`` or ``rolling:N``
    (``rolling_Nd`` also accepted). Raises ``ValueError`` naming the accepted forms."""
    if text in (DAY, WEEK, MONTH):
        return text
    match = _ROLLING_ARGUMENT.match(text)
    if match and int(match.group(1)) >= 1:
        return rolling(int(match.group(1)))
    raise ValueError(
        f"granularity {text!r} is not one of day, week, month or rolling:N (N ≥ 1 days)"
    )


def rolling(days: int) -> str:
    """The granularity name of the last ``days`` days: ``rolling_7d``. One day is ``day``."""
    return DAY if days == 1 else f"{ROLLING_PREFIX}{days}{ROLLING_SUFFIX}"


def window_of(granularity: str, run_date: dt.date) -> TimeWindow:
    """The window of ``granularity`` that contains ``run_date`` (ends on it for rolling)."""
    if granularity == DAY:
        return TimeWindow(DAY, run_date, run_date)
    if granularity == WEEK:
        monday = run_date - dt.timedelta(days=run_date.weekday())
        return TimeWindow(WEEK, monday, monday + dt.timedelta(days=6))
    if granularity == MONTH:
        first = run_date.replace(day=1)
        following = (first + dt.timedelta(days=32)).replace(day=1)
        return TimeWindow(MONTH, first, following - ONE_DAY)
    days = _rolling_days(granularity)
    return TimeWindow(granularity, run_date - dt.timedelta(days=days - 1), run_date)


def previous_window(window: TimeWindow) -> TimeWindow:
    """The window of the same granularity that ends the day before ``window`` starts."""
    return window_of(window.granularity, window.start - ONE_DAY)


def _rolling_days(granularity: str) -> int:
    if not (granularity.startswith(ROLLING_PREFIX) and granularity.endswith(ROLLING_SUFFIX)):
        raise ValueError(f"unknown granularity {granularity!r}")
    return int(granularity[len(ROLLING_PREFIX) : -len(ROLLING_SUFFIX)])
