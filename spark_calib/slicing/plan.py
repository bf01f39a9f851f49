"""Choose how the one aggregation produces every slice set: a plan of covering groups.

A covering group is a set of slice columns. The one aggregation copies each input row once per
group (the slice columns outside the group set to null) and groups by model version × the
group's columns × class × bin; each slice set is then re-aggregated from the small table of the
group that covers it (sums are additive). The number of groups G is the number of copies of the
input, and the cross of a group's columns bounds the size of its table:

- ``finest_grain``: one group of every slice column (G = 1). Cheap while that cross is small.
- ``grouping_sets``: one group per slice set (G = number of sets), as Spark's GROUPING SETS
  Expand; no cross of columns from different sets, so no table larger than the largest set.
- ``auto``: slice sets packed greedily, largest first, into groups of at most
  ``FINEST_GRAIN_MAX_COLUMNS`` columns: G = 1 whenever the config has that few distinct slice
  columns, and few copies otherwise (overall, country, device, tier, date, country×device
  → {country, device, tier} and {date}: 2 copies instead of 6).
"""

from __future__ import annotations

from dataclasses import dataclass

from spark_calib.config import Config
from spark_calib.constants import FINEST_GRAIN_MAX_COLUMNS

FINEST_GRAIN = "finest_grain"
GROUPING_SETS = "grouping_sets"
COVERING_GROUPS = "covering_groups"


@dataclass(frozen=True)
class SlicePlan:
    """``groups``: the slice columns of each covering group (config order); ``set_group``: the
    index of the group that covers each slice set of ``config.slices``; ``sets_are_groups``:
    set i is group i with the same columns, so the groups' table needs no re-aggregation;
    ``name``: the strategy it amounts to (``finest_grain`` for one group, ``grouping_sets``
    when every set is its own group, else ``covering_groups``)."""

    groups: tuple[tuple[str, ...], ...]
    set_group: tuple[int, ...]
    sets_are_groups: bool
    name: str


def choose_strategy(config: Config) -> SlicePlan:
    """The covering groups of the configured ``slice_strategy`` (see the module docstring)."""
    columns = config.slice_columns()
    if config.slice_strategy == FINEST_GRAIN:
        return _plan([list(columns)], [0] * len(config.slices), config)
    if config.slice_strategy == GROUPING_SETS:
        every_set = list(range(len(config.slices)))
        return _plan([list(cols) for cols in config.slices], every_set, config)
    groups: list[list[str]] = []
    assignment = [0] * len(config.slices)
    largest_first = sorted(range(len(config.slices)), key=lambda i: -len(config.slices[i]))
    for index in largest_first:
        wanted = set(config.slices[index])
        target = next((g for g, cols in enumerate(groups) if wanted <= set(cols)), None)
        if target is None:
            target = next(
                (
                    g
                    for g, cols in enumerate(groups)
                    if len(wanted | set(cols)) <= FINEST_GRAIN_MAX_COLUMNS
                ),
                None,
            )
        if target is None:
            groups.append([])
            target = len(groups) - 1
        groups[target] += [name for name in config.slices[index] if name not in groups[target]]
        assignment[index] = target
    return _plan(groups, assignment, config)


def _plan(groups: list[list[str]], assignment: list[int], config: Config) -> SlicePlan:
    order = {name: position for position, name in enumerate(config.slice_columns())}
    ordered = tuple(tuple(sorted(cols, key=order.__getitem__)) for cols in groups)
    sets_are_groups = assignment == list(range(len(config.slices))) and all(
        set(ordered[i]) == set(cols) for i, cols in enumerate(config.slices)
    )
    if len(ordered) == 1:
        name = FINEST_GRAIN
    elif sets_are_groups:
        name = GROUPING_SETS
    else:
        name = COVERING_GROUPS
    return SlicePlan(
        groups=ordered, set_group=tuple(assignment), sets_are_groups=sets_are_groups, name=name
    )
