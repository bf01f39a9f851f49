"""Tables of the page: plain HTML tables, sortable when the page's script runs.

Every cell carries ``data-value`` (the raw number or text) so that the script sorts by value,
not by the formatted text; without the script the table reads in its given order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from spark_calib_cli.html.markup import element, is_missing, show_number, text

SORTABLE_CLASS = "sortable"
NUMBER, TEXT = "number", "text"

CellRenderer = Callable[[Mapping[str, Any]], str]


@dataclass(frozen=True)
class Column:
    """A column of the frame (``key``) and its header; ``render`` gives the cell's HTML from
    the row when the value alone does not say enough (a slice label with its link)."""

    key: str
    title: str
    numeric: bool = True
    render: CellRenderer | None = None


def sortable_table(
    frame: pd.DataFrame,
    columns: Sequence[Column],
    *,
    caption: str,
    table_id: str | None = None,
    row_id: Callable[[Mapping[str, Any]], str | None] | None = None,
    row_class: Callable[[Mapping[str, Any]], str | None] | None = None,
) -> str:
    """A ``<table class="sortable">`` of ``frame``'s rows in their order: one ``<th>`` per
    column (``data-type`` ``number`` or ``text``), one ``<td data-value>`` per cell, and the
    ``caption`` (escaped). ``row_id`` and ``row_class`` give a row's ``id`` and ``class``."""
    header = "".join(
        element("th", text(column.title), {"scope": "col", "data-type": _kind(column)})
        for column in columns
    )
    body = "".join(
        element(
            "tr",
            "".join(_cell(record, column) for column in columns),
            {
                "id": row_id(record) if row_id else None,
                "class": row_class(record) if row_class else None,
            },
        )
        for record in frame.to_dict("records")
    )
    return element(
        "table",
        element("caption", text(caption))
        + element("thead", element("tr", header))
        + element("tbody", body),
        {"class": SORTABLE_CLASS, "id": table_id},
    )


def _kind(column: Column) -> str:
    return NUMBER if column.numeric else TEXT


def _cell(record: Mapping[str, Any], column: Column) -> str:
    value: Any = record.get(column.key)
    if column.render is not None:
        shown = column.render(record)
    elif column.numeric:
        shown = text(show_number(value))
    else:
        shown = text("" if is_missing(value) else value)
    # Missing values sort last whatever the direction (the script reads an empty value so).
    raw = "" if is_missing(value) else repr(float(value)) if column.numeric else str(value)
    return element("td", shown, {"data-value": raw, "class": "num" if column.numeric else None})
