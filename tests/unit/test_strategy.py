"""The slice plan: which covering groups each strategy gives (pure Python, no Spark)."""

from __future__ import annotations

from spark_calib.config import load_config
from spark_calib.slicing.plan import choose_strategy

BASE = {"task": "binary", "columns": {"score": "s", "label": "y"}}
WIDE = [[], ["country"], ["device"], ["tier"], ["event_date"], ["country", "device"]]


def plan(slices: list[list[str]], strategy: str = "auto") -> tuple:
    chosen = choose_strategy(load_config({**BASE, "slices": slices, "slice_strategy": strategy}))
    return chosen.name, chosen.groups, chosen.set_group


def test_auto_packs_sets_into_groups_of_at_most_three_columns() -> None:
    """Largest set first: {country, device}, then tier joins it (3 columns), event_date would
    make 4, so it opens a second group; overall and the single columns ride along."""
    assert plan(WIDE) == (
        "covering_groups",
        (("country", "device", "tier"), ("event_date",)),
        (0, 0, 0, 0, 1, 0),
    )


def test_auto_with_three_columns_is_one_group() -> None:
    slices = [[], ["country"], ["device"], ["country", "device"], ["tier"]]
    assert plan(slices) == ("finest_grain", (("country", "device", "tier"),), (0, 0, 0, 0, 0))


def test_auto_gives_a_wide_cross_its_own_group() -> None:
    """A set of four columns cannot share a group of at most three: it is its own group, and the
    smaller sets still share one."""
    slices = [["a", "b", "c", "d"], ["a"], ["e"]]
    assert plan(slices) == ("covering_groups", (("a", "b", "c", "d"), ("e",)), (0, 0, 1))


def test_overall_only() -> None:
    assert plan([[]]) == ("finest_grain", ((),), (0,))


def test_explicit_strategies() -> None:
    assert plan(WIDE, "finest_grain") == (
        "finest_grain",
        (("country", "device", "tier", "event_date"),),
        (0, 0, 0, 0, 0, 0),
    )
    assert plan(WIDE, "grouping_sets") == (
        "grouping_sets",
        tuple(tuple(cols) for cols in WIDE),
        (0, 1, 2, 3, 4, 5),
    )
