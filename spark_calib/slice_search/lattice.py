"""The search lattice on the driver: which segments each level scores, which it prunes, and
the ranked report (no Spark here; the levels' scores come from ``spark_calib.slice_search.rows``).

Per model version, with z the ranking score (``ecce_sigma``; |citl_z| for
``calibration_in_the_large``; ``ece_excess_z`` for ``ece_excess``) and "rankable" meaning
n ≥ ``min_rows``, weight ≥ ``min_weight`` and a finite or infinite z:

- **Level 1** scores every (column = value), and the overall segment.
- **Level l + 1** (apriori, Agrawal & Srikant 1994; SliceLine's enumeration): the children are
  the conjunctions of l + 1 predicates on distinct columns all of whose l parents (the
  conjunction without one predicate) are rankable at level l. A child's rows are a subset of
  each parent's, so a child of a parent below ``min_rows`` or ``min_weight`` cannot reach them:
  this rule loses nothing.
- **Pruning by bound** (``prune``): a child's z is at most the smallest ``score_bound`` of its
  parents (``spark_calib.kernels.multicalibration``). A child whose bound is below θ, the
  ``top_k``-th largest z among the rankable segments scored so far, cannot enter the top_k: it
  is counted as tested (p = 1) and not scored (not for ``ece_excess``: the bound does not
  hold for it, so it prunes by size alone). θ only grows, so the ``top_k`` largest z over
  every rankable segment of the lattice are exactly those of the search.
- **Coarse cells** (``coarse``: pruning on, score not ``ece_excess``): levels 2 and up are
  scored from coarse cells, which give a segment's sums exactly and its fine-cell ecce within
  [ecce, ecce + ecce_bound]. A coarse segment's z is its lower bound (its p-value too, which
  is larger than its fine one), and ``z_high`` its upper bound. ``refinement`` picks the ones
  that could change the report or the multicalibration error, to be scored from fine cells.
- **Multiple testing** over the m segments tested of the version (scored and rankable, plus the
  pruned ones): Benjamini–Hochberg's adjusted p = min_{j ≥ i} min(1, m·p_(j)/j) over the sorted
  p-values, or Bonferroni's min(1, m·p). ``significant``: adjusted p ≤ ``alpha``.
- **The most general form** (after Slice Finder): a segment with a significant parent is
  reported only if its z is above that parent's. A child that adds nothing to a miscalibrated
  parent has a z about √(n_child/n_parent) times the parent's; a child where the problem
  concentrates has a larger one.
- **Report**: the ``top_k`` remaining segments by z (ties: lower level, then column and value
  order), ranked from 1, significant or not.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from spark_calib.config.slice_search import SliceSearchConfig
from spark_calib.constants import SLICE_SEPARATOR
from spark_calib.errors import SparkCalibError
from spark_calib.kernels.multicalibration import BIN_COLUMNS, SEGMENT_COLUMNS
from spark_calib.kernels.special import erfc
from spark_calib.slice_search.rows import COMBO, KEY, OVERALL_COMBO, predicate_column
from spark_calib.slicing.values import slice_name

VERSION = "_model_version"

Version = str | None
Columns = tuple[int, ...]
Values = tuple[str, ...]


@dataclass
class Segment:
    """One scored segment: its predicates (column indices, encoded values) and its scores."""

    version: Version
    columns: Columns
    values: Values
    scores: dict[str, Any]
    z: float = math.nan
    p_value: float = 1.0
    p_adjusted: float = 1.0
    significant: bool = False
    suppressed: bool = False
    refined: bool = True
    z_high: float = math.nan

    @property
    def slice_value(self) -> str:
        """The predicates' values in the ``slice_value`` encoding (each already encoded)."""
        return SLICE_SEPARATOR.join(self.values)

    @property
    def level(self) -> int:
        """The number of predicates."""
        return len(self.columns)


@dataclass
class LevelCount:
    """What one level did: candidate segments sent to Spark, segments scored, rankable among
    them, children pruned by bound, and segments scored from fine cells (all of them at level
    1 or without coarse passes; per all versions)."""

    level: int
    candidates: int = 0
    scored: int = 0
    rankable: int = 0
    pruned: int = 0
    refined: int = 0


@dataclass
class Lattice:
    """The search state of every model version (see the module docstring)."""

    search: SliceSearchConfig
    scored: dict[tuple[Version, Columns, Values], Segment] = field(default_factory=dict)
    overall: dict[Version, Segment] = field(default_factory=dict)
    pruned: dict[Version, int] = field(default_factory=lambda: defaultdict(int))
    levels: list[LevelCount] = field(default_factory=list)
    _pending: dict[tuple[Version, int, tuple[int, ...]], tuple[Columns, Values]] = field(
        default_factory=dict
    )
    _combos: list[Columns] = field(default_factory=list)
    # Per candidate column: each observed value's code (``spark_calib.slice_search.rows``).
    _codes: dict[int, dict[str, int]] = field(default_factory=lambda: defaultdict(dict))
    _values: dict[int, dict[int, str]] = field(default_factory=lambda: defaultdict(dict))

    def first_level(self) -> list[Columns]:
        """Level 1's column combinations: every candidate column alone."""
        self._combos = [(index,) for index in range(len(self.search.columns))]
        self.levels.append(LevelCount(1))
        return self._combos

    @property
    def coarse(self) -> bool:
        """Whether levels 2 and up are scored from coarse cells first (``refinement``): when
        pruning with a score that has an upper bound from coarse cells."""
        return self.search.prune and self.search.score != "ece_excess"

    def add(self, table: pa.Table, refined: bool = True) -> None:
        """Take a pass's scored segments (``level_segments``' table): a level's (its first
        pass), or a refinement's (``refined``: fine cells, replacing coarse scores)."""
        count = self.levels[-1]
        rows = table.to_pydict()
        names = [*SEGMENT_COLUMNS, *BIN_COLUMNS]
        width = self.search.max_level
        first = KEY in table.column_names
        for i in range(table.num_rows):
            version, combo = rows[VERSION][i], rows[COMBO][i]
            codes = tuple(rows[predicate_column(p)][i] for p in range(width))
            scores = {name: rows[name][i] for name in names}
            if combo == OVERALL_COMBO:
                self.overall[version] = self._scored(Segment(version, (), (), scores))
                continue
            columns: Columns
            values: Values
            if first:
                columns, values = self._combos[combo], (rows[KEY][i],)
                self._code(columns[0], values[0], codes[0])
            else:
                level = len(self._combos[combo])
                columns, values = self._pending[(version, combo, codes[:level])]
            key = (version, columns, values)
            segment = self._scored(Segment(version, columns, values, scores, refined=refined))
            if key in self.scored:
                self.levels[segment.level - 1].refined += 1
            else:
                count.scored += 1
                count.rankable += self._rankable(segment)
                count.refined += refined
            self.scored[key] = segment
        self._pending.clear()

    def refinement(self) -> tuple[list[Columns], list[tuple[Version, int, tuple[int, ...]]]]:
        """The coarse-scored segments whose fine scores could change the report or the
        multicalibration error, as (column combinations, candidate rows) like ``next_level``;
        both empty when none is left. Per version, with the report as it stands (z of a
        coarse segment: its lower bound; ``report``): a rankable coarse segment whose upper
        bound z_high reaches the z of the report's last (``top_k``-th) segment, or any z_high
        when the report is shorter; and any coarse segment whose upper bound on ecce_sigma is
        above the largest ecce_sigma known."""
        combos: dict[Columns, int] = {}
        candidates: list[tuple[Version, int, tuple[int, ...]]] = []
        for version in self.versions():
            reported = self.report(version)
            full = len(reported) >= self.search.top_k
            cutoff = reported[-1].z if full else -math.inf
            mine = [s for s in self.scored.values() if s.version == version]
            known = max(sigma_lower(s.scores) for s in [self.overall[version], *mine])
            for segment in mine:
                if segment.refined:
                    continue
                ranks = self._rankable(segment) and segment.z_high >= cutoff
                if not ranks and not sigma_upper(segment.scores) > known:
                    continue
                combo = combos.setdefault(segment.columns, len(combos))
                codes = tuple(
                    self._codes[c][v] for c, v in zip(segment.columns, segment.values, strict=True)
                )
                self._pending[(version, combo, codes)] = (segment.columns, segment.values)
                candidates.append((version, combo, codes))
        self._combos = list(combos)
        return self._combos, candidates

    def next_level(self) -> tuple[list[Columns], list[tuple[Version, int, tuple[int, ...]]]]:
        """The next level's column combinations and its candidate (version, combination index,
        value codes) rows; both empty when no child is left."""
        level = len(self.levels) + 1
        count = LevelCount(level)
        self.levels.append(count)
        parents: dict[Version, dict[Columns, dict[Values, Segment]]] = defaultdict(
            lambda: defaultdict(dict)
        )
        for (version, columns, values), segment in self.scored.items():
            if len(columns) == level - 1 and self._rankable(segment):
                parents[version][columns][values] = segment
        combos: dict[Columns, int] = {}
        candidates: list[tuple[Version, int, tuple[int, ...]]] = []
        for version, by_columns in parents.items():
            theta = self.threshold(version)
            for columns, values, bound in _children(by_columns):
                if self.search.prune and self.search.score != "ece_excess" and bound < theta:
                    self.pruned[version] += 1
                    count.pruned += 1
                    continue
                combo = combos.setdefault(columns, len(combos))
                codes = tuple(self._codes[c][v] for c, v in zip(columns, values, strict=True))
                self._pending[(version, combo, codes)] = (columns, values)
                candidates.append((version, combo, codes))
        self._combos = list(combos)
        count.candidates = len(candidates)
        return self._combos, candidates

    def threshold(self, version: Version) -> float:
        """θ: the top_k-th largest z among the version's rankable segments so far (−∞ while
        there are fewer)."""
        zs = sorted(
            (s.z for s in self.scored.values() if s.version == version and self._rankable(s)),
            reverse=True,
        )
        return zs[self.search.top_k - 1] if len(zs) >= self.search.top_k else -math.inf

    def versions(self) -> list[Version]:
        """Every model version seen, nulls first, then in order."""
        return sorted(self.overall, key=lambda v: (v is not None, v or ""))

    def report(self, version: Version) -> list[Segment]:
        """The version's ranked segments (the module docstring), p-values filled in."""
        tested = [s for s in self.scored.values() if s.version == version and self._rankable(s)]
        adjust(tested, self.pruned[version], self.search)
        significant = {(s.columns, s.values): s for s in tested if s.significant}
        for segment in tested:
            segment.suppressed = any(
                parent.z >= segment.z
                for parent in (
                    significant.get(key) for key in _parent_keys(segment.columns, segment.values)
                )
                if parent is not None
            )
        kept = [s for s in tested if not s.suppressed]
        kept.sort(key=lambda s: (-s.z, s.level, s.columns, s.values))
        return kept[: self.search.top_k]

    def tested(self, version: Version) -> int:
        """m: the version's segments tested (rankable scored, plus pruned)."""
        rankable = sum(
            1 for s in self.scored.values() if s.version == version and self._rankable(s)
        )
        return rankable + self.pruned[version]

    def slice_name(self, segment: Segment, names: Sequence[str]) -> str:
        """The segment's ``slice_name``: its columns' names in config order."""
        return slice_name([names[i] for i in segment.columns])

    def _code(self, column: int, value: str, code: int) -> None:
        # A level joins on codes alone, so two values with one code would merge their rows.
        holder = self._values[column].setdefault(code, value)
        if holder != value:
            raise SparkCalibError(
                f"slice_search values {holder!r} and {value!r} share the 64-bit code {code}; "
                f"rename one of them"
            )
        self._codes[column][value] = code

    def _scored(self, segment: Segment) -> Segment:
        s = segment.scores
        if self.search.score == "ecce_sigma":
            segment.z = _number(s["ecce_sigma"])
            segment.p_value = _number(s["ecce_p"], 1.0)
            if not segment.refined:
                segment.z_high = sigma_upper(s) if not math.isnan(segment.z) else math.nan
                return segment
        elif self.search.score == "ece_excess":
            z = _number(s["ece_excess_z"])
            segment.z = z
            segment.p_value = (
                1.0 if math.isnan(z) else float(erfc(np.array([z / math.sqrt(2)]))[0]) / 2.0
            )
        else:
            z = abs(_number(s["citl_z"]))
            segment.z = z
            segment.p_value = 1.0 if math.isnan(z) else float(erfc(np.array([z / math.sqrt(2)]))[0])
        segment.z_high = segment.z
        return segment

    def _rankable(self, segment: Segment) -> bool:
        s = segment.scores
        return (
            _number(s["n"], 0.0) >= self.search.min_rows
            and _number(s["weight_sum"], 0.0) >= self.search.min_weight
            and not math.isnan(segment.z)
        )


def adjust(segments: list[Segment], pruned: int, search: SliceSearchConfig) -> None:
    """Fill ``p_adjusted`` and ``significant`` over m = len(segments) + ``pruned`` tests (the
    pruned ones count with p = 1, which only raises the others' adjusted p)."""
    m = len(segments) + pruned
    if not segments:
        return
    p = np.array([s.p_value for s in segments])
    if search.correction == "bonferroni":
        adjusted = np.minimum(1.0, m * p)
    else:
        order = np.argsort(p, kind="stable")
        ranked = m * p[order] / np.arange(1, len(p) + 1)
        ranked = np.minimum.accumulate(ranked[::-1])[::-1]
        adjusted = np.empty_like(p)
        adjusted[order] = np.minimum(1.0, ranked)
    for segment, value in zip(segments, adjusted, strict=True):
        segment.p_adjusted = float(value)
        segment.significant = bool(value <= search.alpha)


def _children(
    by_columns: dict[Columns, dict[Values, Segment]],
) -> Iterable[tuple[Columns, Values, float]]:
    """Apriori: each child whose parents are all in ``by_columns``, with the smallest of its
    parents' score bounds."""
    column_sets = sorted(by_columns)
    for a_index, a in enumerate(column_sets):
        for b in column_sets[a_index + 1 :]:
            if a[:-1] != b[:-1]:
                continue
            columns = (*a, b[-1])
            b_by_prefix: dict[Values, list[Values]] = defaultdict(list)
            for values in by_columns[b]:
                b_by_prefix[values[:-1]].append(values)
            for a_values in by_columns[a]:
                for b_values in b_by_prefix.get(a_values[:-1], ()):
                    values = (*a_values, b_values[-1])
                    bounds = []
                    for parent_columns, parent_values in _parent_keys(columns, values):
                        parent = by_columns.get(parent_columns, {}).get(parent_values)
                        if parent is None:
                            break
                        bounds.append(_number(parent.scores["score_bound"], math.inf))
                    else:
                        yield columns, values, min(bounds)


def _parent_keys(columns: Columns, values: Values) -> list[tuple[Columns, Values]]:
    if len(columns) < 2:
        return []
    return [
        (columns[:i] + columns[i + 1 :], values[:i] + values[i + 1 :]) for i in range(len(columns))
    ]


def sigma_lower(scores: dict[str, Any]) -> float:
    """The segment's ecce_sigma, −∞ when null or NaN (no weight)."""
    value = scores["ecce_sigma"]
    return -math.inf if value is None or math.isnan(value) else float(value)


def sigma_upper(scores: dict[str, Any]) -> float:
    """(ECCE + ecce_bound)/σ: the largest sigma-scale ECCE of the segment's finer cells and
    rows."""
    top = scores["ecce"] + scores["ecce_bound"]
    if scores["sigma"] > 0:
        return float(top / scores["sigma"])
    return math.inf if top > 0 else 0.0


def _number(value: object, default: float = math.nan) -> float:
    return default if value is None else float(value)  # type: ignore[arg-type]
