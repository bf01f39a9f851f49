"""A fixed-width text table for the console: left-aligned labels, right-aligned numbers."""

from __future__ import annotations

from collections.abc import Container, Sequence

NO_VALUE = "-"


def render_table(
    header: Sequence[str], body: Sequence[Sequence[str]], numeric: Container[int]
) -> str:
    """One line per row, columns two spaces apart; the cells whose index is in ``numeric`` are
    right-aligned. Trailing blanks are stripped."""
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]

    def render(line: Sequence[str]) -> str:
        cells = [
            cell.rjust(width) if index in numeric else cell.ljust(width)
            for index, (cell, width) in enumerate(zip(line, widths, strict=True))
        ]
        return "  ".join(cells).rstrip()

    return "\n".join([render(header), *[render(line) for line in body]])


def show_metric(value: float | None) -> str:
    """Four decimals, or ``-`` when there is no value."""
    return NO_VALUE if value is None else f"{value:.4f}"
