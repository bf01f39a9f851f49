"""The ``slice_search:`` section: where calibration breaks, over crossed segments nobody named.

See ``docs/slice_search.md`` for the method; each key's meaning is on its field below.
"""

from __future__ import annotations

import itertools
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from spark_calib.config.base import Float, Int, StrictModel

# ecce_sigma: MCGrad's per-segment ECCE over its standard deviation under perfect calibration;
# calibration_in_the_large: |Σw(s − y)| over the same standard deviation (a z);
# ece_excess: the ECE minus its mean under perfect calibration, over its standard deviation.
SearchScore = Literal["ecce_sigma", "calibration_in_the_large", "ece_excess"]
Correction = Literal["benjamini_hochberg", "bonferroni"]

DEFAULT_MAX_LEVEL = 3
DEFAULT_MIN_ROWS = 1000
DEFAULT_TOP_K = 20
DEFAULT_ALPHA = 0.05
# A column cut at quantiles gets at most this many ranges: more is a categorical column.
MAX_SEARCH_BINS = 100


class SearchColumn(StrictModel):
    """A numeric candidate column cut into ranges at ``edges`` (ascending), or at ``bins`` − 1
    quantiles of its values (read from the input in one aggregation before the search): the
    value of a row is the range [e_i, e_{i+1}) it falls in, written ``[e_i, e_{i+1})``; below
    the first edge ``(-inf, e_0)``, from the last ``[e_last, inf)``; a null stays null."""

    column: str
    edges: Annotated[tuple[Float, ...], Field(min_length=1)] | None = None
    bins: Annotated[Int, Field(ge=2, le=MAX_SEARCH_BINS)] | None = None

    @field_validator("edges")
    @classmethod
    def _ascending(cls, edges: tuple[float, ...] | None) -> tuple[float, ...] | None:
        if edges is not None and any(b <= a for a, b in itertools.pairwise(edges)):
            raise ValueError("slice_search edges must be strictly ascending")
        return edges

    @model_validator(mode="after")
    def _edges_or_bins(self) -> SearchColumn:
        if (self.edges is None) == (self.bins is None):
            raise ValueError(
                f"slice_search column {self.column!r} needs exactly one of edges and bins"
            )
        return self


class SliceSearchConfig(StrictModel):
    """``columns``: candidate columns, each a column name (its values, cast to string, are the
    predicates: strings, booleans, small integers) or a ``{column, edges}`` or
    ``{column, bins}`` range cut;
    ``max_level``: conjunctions of up to this many columns; ``min_rows`` / ``min_weight``: a
    slice with fewer rows or less weight is neither scored nor expanded; ``score``: what ranks
    the slices; ``top_k``: how many are reported per model version; ``alpha`` and
    ``correction``: a slice is significant when its p-value, adjusted over every slice tested
    of its model version, is at most alpha; ``prune``: drop children whose score bound cannot
    reach the current top_k (off: every child with enough rows is scored)."""

    columns: tuple[SearchColumn | str, ...] = Field(min_length=1)
    max_level: Int = Field(default=DEFAULT_MAX_LEVEL, ge=1)
    min_rows: Int = Field(default=DEFAULT_MIN_ROWS, ge=1)
    min_weight: Float = Field(default=0.0, ge=0.0)
    score: SearchScore = "ecce_sigma"
    top_k: Int = Field(default=DEFAULT_TOP_K, ge=1)
    alpha: Float = Field(default=DEFAULT_ALPHA, gt=0.0, lt=1.0)
    correction: Correction = "benjamini_hochberg"
    prune: bool = True

    @model_validator(mode="after")
    def _distinct_columns(self) -> SliceSearchConfig:
        names = self.column_names()
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"slice_search.columns names {repeated[0]!r} twice")
        if self.max_level > len(names):
            raise ValueError(
                f"slice_search.max_level {self.max_level} is more than its {len(names)} columns"
            )
        return self

    def column_names(self) -> list[str]:
        """The candidate columns' input names, in config order."""
        return [c if isinstance(c, str) else c.column for c in self.columns]

    def cut_of(self, name: str) -> SearchColumn | None:
        """The range cut of a numeric candidate column (given edges or a number of
        quantile bins), None for a categorical one."""
        for c in self.columns:
            if not isinstance(c, str) and c.column == name:
                return c
        return None
