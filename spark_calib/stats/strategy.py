"""Choose how the one aggregation produces every slice set.

``finest_grain``: group once by model version × every slice column × class × bin, then derive each
slice set by re-aggregating that small table (sums are additive). Cheap while the cross of the
slice columns is small. ``grouping_sets``: one GROUPING SETS aggregation (Spark's Expand copies each
row once per slice set), which avoids a finest-grain table as large as the input when many or
high-cardinality slice columns are crossed.
"""

from __future__ import annotations

from spark_calib.config import Config
from spark_calib.constants import FINEST_GRAIN_MAX_COLUMNS

FINEST_GRAIN = "finest_grain"
GROUPING_SETS = "grouping_sets"


def choose_strategy(config: Config) -> str:
    """The configured strategy; ``auto`` picks finest_grain for at most
    ``FINEST_GRAIN_MAX_COLUMNS`` distinct slice columns (or a single slice set), else
    grouping_sets."""
    if config.slice_strategy != "auto":
        return config.slice_strategy
    if len(config.slices) == 1 or len(config.slice_columns()) <= FINEST_GRAIN_MAX_COLUMNS:
        return FINEST_GRAIN
    return GROUPING_SETS
