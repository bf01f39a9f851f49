"""Escaping and element helpers: every text and attribute of the page goes through here."""

from __future__ import annotations

import html
import math
import numbers
from collections.abc import Mapping
from typing import Any

NO_VALUE = "–"
DECIMALS = 4


def text(value: object) -> str:
    """``value`` as escaped HTML text."""
    return html.escape(str(value), quote=False)


def element(tag: str, body: str = "", attributes: Mapping[str, object | None] | None = None) -> str:
    """``<tag attr="…">body</tag>``: ``body`` is HTML already; attribute values are escaped,
    and those that are None are left out."""
    return f"<{tag}{_attributes(attributes)}>{body}</{tag}>"


def void_element(tag: str, attributes: Mapping[str, object | None] | None = None) -> str:
    """``<tag attr="…">`` for an element without content (``img``)."""
    return f"<{tag}{_attributes(attributes)}>"


def _attributes(attributes: Mapping[str, object | None] | None) -> str:
    return "".join(
        f' {name}="{html.escape(str(value), quote=True)}"'
        for name, value in (attributes or {}).items()
        if value is not None
    )


def is_missing(value: Any) -> bool:
    """None, NaN or a pandas missing value."""
    if value is None:
        return True
    try:
        return bool(math.isnan(value))
    except (TypeError, ValueError):
        return False


def show_number(value: Any) -> str:
    """Integers with thousands separators, floats with ``DECIMALS`` decimals (``%g`` when
    tiny or huge), ``–`` when missing."""
    if is_missing(value):
        return NO_VALUE
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}"
    number = float(value)
    if number != 0.0 and (abs(number) < 10**-DECIMALS or abs(number) >= 1e6):
        return f"{number:.4g}"
    return f"{number:.{DECIMALS}f}"
