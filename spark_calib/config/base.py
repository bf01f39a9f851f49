"""Shared pieces of the config models: strict sections and strictly typed numbers."""

from __future__ import annotations

from typing import Annotated

from pydantic import AllowInfNan, BaseModel, BeforeValidator, ConfigDict


def _number_as_written(value: object) -> object:
    """Reject booleans and text where a number is expected: pydantic's lax mode would read
    YAML's `yes`/`true` as 1 and a quoted '10' as 10 without a word."""
    if isinstance(value, bool):
        raise ValueError("expected a number, not a boolean")
    if isinstance(value, str):
        raise ValueError("expected a number, not text")
    return value


# Numeric config values: numbers only (an int where a float is expected is fine). Float is
# finite too: YAML's .nan or .inf as a tolerance or threshold would silently pass or fail every
# row. (class_weights and cost_matrix take Number: their validators name the bad entry.)
Int = Annotated[int, BeforeValidator(_number_as_written)]
Number = Annotated[float, BeforeValidator(_number_as_written)]
Float = Annotated[Number, AllowInfNan(False)]


class StrictModel(BaseModel):
    """A frozen config section that rejects unknown keys."""

    model_config = ConfigDict(extra="forbid", frozen=True)
