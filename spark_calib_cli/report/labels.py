"""Readable names for slices, shared by the console summary and the diagrams."""

from __future__ import annotations

from spark_calib import decode_slice_value
from spark_calib.constants import OVERALL_SLICE_NAME

NULL_LABEL = "null"


def slice_label(slice_name: str, slice_value: str) -> str:
    """``overall``, or ``name=value`` pairs decoded from the escaped slice columns, e.g.
    ``country=BR, device=tablet``."""
    if slice_name == OVERALL_SLICE_NAME:
        return OVERALL_SLICE_NAME
    names = decode_slice_value(slice_name, 1)
    values = decode_slice_value(slice_value, len(names))
    return ", ".join(
        f"{name}={NULL_LABEL if value is None else value}"
        for name, value in zip(names, values, strict=True)
    )
