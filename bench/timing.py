"""Wall-clock timing: a warm-up run of every variant, then ``repeats`` round-robin rounds.

Variants of one case alternate within each round (A B C, A B C, …) rather than running all
repeats of one variant back to back, so that a slow drift of the machine (another job, page
cache, JIT) spreads over every variant instead of biasing one. The reported number is the
median of the timed runs; the warm-up run is recorded but never enters the median.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

# A variant whose repeats would take longer than this (estimated from its warm-up) runs once.
DEFAULT_REPEAT_BUDGET_S = 180.0
DECIMALS = 4


class TimedOut(Exception):
    """A run was cancelled after ``seconds``: its time is a lower bound, not a measurement."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"cancelled after {seconds:.0f} s")
        self.seconds = seconds


class Progress:
    """Progress lines on stderr: ``[bench 12.3s] case typical: spark_calib run 2/3``."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.start = time.perf_counter()
        self.stream = stream if stream is not None else sys.stderr

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def __call__(self, message: str) -> None:
        print(f"[bench {self.elapsed():.1f}s] {message}", file=self.stream, flush=True)


@dataclass
class Variant:
    """One timed implementation of a case.

    ``run`` does the whole measured work; it returns None (the wall time is reported) or the
    number of seconds to report instead (an extrapolation from the measured run, see MLlib).
    ``prepare`` runs before every run, outside the timed region (cleanup of earlier outputs).
    ``repeat_budget_s``: when the warm-up time × repeats is above it, the variant is timed once.
    ``warmup``: a cheaper stand-in for the warm-up run; it must also return the estimated
    seconds of one full run (used for the budget), else the warm-up's wall time is used.
    ``single_run_budget_s``: when the warm-up run itself takes longer than this, it is the one
    timed run (no repeats): the warm-up effects (JIT, page cache) are a small part of a run
    that long, and repeating it would take hours.
    """

    name: str
    run: Callable[[], float | None]
    prepare: Callable[[], None] | None = None
    repeat_budget_s: float | None = None
    warmup: Callable[[], float | None] | None = None
    single_run_budget_s: float | None = None


@dataclass
class VariantTiming:
    """The timings of one variant: reported seconds per run, and the measured wall times."""

    repeats: int
    warmup_s: float = 0.0
    timings_s: list[float] = field(default_factory=list)
    wall_s: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    from_warmup: bool = False
    # True when a run was cancelled (``TimedOut``): timings_s holds the timeout, a lower bound.
    lower_bound: bool = False

    @property
    def median_s(self) -> float:
        return statistics.median(self.timings_s)

    def as_dict(self) -> dict[str, Any]:
        result: dict[str, Any] = {
            "median_s": round(self.median_s, DECIMALS),
            "timings_s": [round(t, DECIMALS) for t in self.timings_s],
            "warmup_s": round(self.warmup_s, DECIMALS),
            "repeats": self.repeats,
        }
        if self.wall_s != self.timings_s:
            result["measured_wall_s"] = [round(t, DECIMALS) for t in self.wall_s]
            result["measured_wall_median_s"] = round(statistics.median(self.wall_s), DECIMALS)
        if self.notes:
            result["notes"] = list(self.notes)
        if self.lower_bound:
            result["lower_bound"] = True
        return result


def _timed_out(timing: VariantTiming, wall: float, error: TimedOut) -> None:
    """Record a cancelled run: the timeout is the one (lower-bound) timing; no more runs."""
    timing.repeats = 1
    timing.from_warmup = True
    timing.lower_bound = True
    timing.wall_s = [wall]
    timing.timings_s = [error.seconds]
    timing.notes.append(
        f"did not finish: cancelled after {error.seconds:.0f} s, so the time is a lower bound"
    )


def _timed(variant: Variant, call: Callable[[], float | None]) -> tuple[float, float | None]:
    if variant.prepare is not None:
        variant.prepare()
    start = time.perf_counter()
    reported = call()
    return time.perf_counter() - start, reported


def time_variants(
    case: str, variants: list[Variant], repeats: int, progress: Progress, warmup: bool = True
) -> dict[str, VariantTiming]:
    """Warm up every variant once, then time ``repeats`` rounds, the variants alternating.

    ``warmup`` False (smoke tests only) skips the warm-up runs and the repeat budget."""
    timings: dict[str, VariantTiming] = {}
    for variant in variants:
        if not warmup:
            timings[variant.name] = VariantTiming(repeats=repeats, warmup_s=0.0)
            continue
        progress(f"case {case}: {variant.name} warm-up")
        started = time.perf_counter()
        try:
            wall, estimate = _timed(variant, variant.warmup or variant.run)
        except TimedOut as error:
            wall = time.perf_counter() - started
            timing = VariantTiming(repeats=1, warmup_s=wall)
            _timed_out(timing, wall, error)
            progress(f"case {case}: {variant.name} {error}")
            timings[variant.name] = timing
            continue
        full_run_s = estimate if estimate is not None else wall
        timing = VariantTiming(repeats=repeats, warmup_s=wall)
        budget = variant.repeat_budget_s
        if repeats > 1 and budget is not None and full_run_s * repeats > budget:
            timing.repeats = 1
            timing.notes.append(
                f"timed once: {repeats} runs of about {full_run_s:.0f} s each (estimated from "
                f"the warm-up) would exceed the {budget:.0f} s budget"
            )
        if variant.single_run_budget_s is not None and wall > variant.single_run_budget_s:
            timing.repeats = 1
            timing.from_warmup = True
            timing.wall_s.append(wall)
            timing.timings_s.append(estimate if estimate is not None else wall)
            timing.notes.append(
                f"timed once: the warm-up run ({wall:.0f} s) is the measurement, a run that "
                f"long is over the {variant.single_run_budget_s:.0f} s single-run budget"
            )
        timings[variant.name] = timing
    for round_index in range(repeats):
        for variant in variants:
            timing = timings[variant.name]
            if timing.from_warmup or round_index >= timing.repeats:
                continue
            progress(f"case {case}: {variant.name} run {round_index + 1}/{timing.repeats}")
            started = time.perf_counter()
            try:
                wall, reported = _timed(variant, variant.run)
            except TimedOut as error:
                _timed_out(timing, time.perf_counter() - started, error)
                progress(f"case {case}: {variant.name} {error}")
                continue
            timing.wall_s.append(wall)
            timing.timings_s.append(reported if reported is not None else wall)
    return timings
