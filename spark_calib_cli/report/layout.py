"""What every report figure shares: one figure per model version, its file name, a grid of
panels, and the metric format of the titles."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.gridspec import GridSpec, GridSpecFromSubplotSpec, SubplotSpec

PANELS_PER_ROW = 3
DPI = 110
NO_MODEL_VERSION = "all"
UNSAFE_FILE_CHARACTERS = re.compile(r"[^A-Za-z0-9_.-]+")
NO_VERSION_TITLE = "(no model_version column)"
MIN_TITLE_POINTS = 6.0
# A drawing process's share of a figure function's figures: (i, n), the i-th of n processes.
Share = tuple[int, int]
WHOLE: Share = (0, 1)
_T = TypeVar("_T")


def group_by_model_version(
    panels: pd.DataFrame,
) -> list[tuple[str | None, list[dict[str, Any]]]]:
    """The rows of ``panels`` grouped by ``model_version`` (None first, then by name), each
    group sorted by ``rank`` (0 = overall first)."""
    groups: dict[str | None, list[dict[str, Any]]] = {}
    for record in panels.to_dict("records"):
        version = record["model_version"]
        key = None if version is None or pd.isna(version) else str(version)
        groups.setdefault(key, []).append(record)
    ordered = sorted(groups.items(), key=lambda item: (item[0] is not None, item[0] or ""))
    return [(version, sorted(rows, key=lambda p: int(p["rank"]))) for version, rows in ordered]


def shared(items: Sequence[_T], share: Share) -> list[_T]:
    """The items the i-th of n drawing processes draws (``share`` = (i, n)): every n-th from
    the i-th, so that the n lists taken in turn are ``items`` in their order."""
    index, count = share
    return list(items[index::count])


def panel_grid(
    count: int, panel_inches: tuple[float, float], min_width: float = 0.0
) -> tuple[Figure, int, int]:
    """A constrained-layout figure for ``count`` panels, at most ``PANELS_PER_ROW`` a row, and
    its number of rows and columns. ``min_width`` (inches) leaves room for a figure title or
    legend wider than one panel."""
    rows, columns = grid_shape(count)
    width = max(panel_inches[0] * columns, min_width)
    figure = Figure(figsize=(width, panel_inches[1] * rows), layout="constrained")
    return figure, rows, columns


def grid_shape(count: int) -> tuple[int, int]:
    """(rows, columns) for ``count`` panels, at most ``PANELS_PER_ROW`` a row."""
    columns = min(PANELS_PER_ROW, count)
    return math.ceil(count / columns), columns


def fixed_grid(
    figure: Figure,
    rows: int,
    columns: int,
    *,
    margins: tuple[float, float, float, float],
    gaps: tuple[float, float],
) -> GridSpec:
    """A ``rows`` × ``columns`` grid on ``figure`` with margins (left, right, top, bottom) and
    gaps between cells (horizontal, vertical) in inches.

    For the figures of many panels: a constrained layout measures every tick label of every
    panel first, about 2 s of the 3 s that saving the demo's 16-panel recalibration figure
    took. The inches fit the panels' own text (two-line titles, axis labels, tick labels)."""
    width, height = figure.get_size_inches()
    left, right, top, bottom = margins
    across, down = gaps
    cell_width = (width - left - right - across * (columns - 1)) / columns
    cell_height = (height - top - bottom - down * (rows - 1)) / rows
    return figure.add_gridspec(
        rows,
        columns,
        left=left / width,
        right=1.0 - right / width,
        top=1.0 - top / height,
        bottom=bottom / height,
        wspace=across / cell_width,
        hspace=down / cell_height,
    )


def bars_over_histogram(
    figure: Figure, cell: SubplotSpec, gap_inches: float
) -> GridSpecFromSubplotSpec:
    """``cell`` split in two, 3 : 1 in height (a reliability panel's bars over its histogram),
    ``gap_inches`` apart."""
    height = cell.get_position(figure).height * figure.get_size_inches()[1]
    return cell.subgridspec(
        2, 1, height_ratios=[3, 1], hspace=gap_inches / ((height - gap_inches) / 2)
    )


def fit_titles(figure: Figure, room_inches: float, min_points: float = MIN_TITLE_POINTS) -> None:
    """Shrink the font of each panel title wider than its panel plus ``room_inches`` on each
    side (a long slice label), so that it fits, down to ``min_points``. A fixed layout, unlike
    a constrained one, does not move the panels apart for a long title."""
    renderer = FigureCanvasAgg(figure).get_renderer()
    for axes in figure.axes:
        title = axes.title
        if not title.get_text():
            continue
        allowed = axes.get_window_extent(renderer).width + 2 * room_inches * figure.dpi
        width = title.get_window_extent(renderer).width
        if width > allowed:
            size = float(title.get_fontsize())
            title.set_fontsize(max(min_points, size * allowed / width))


def title_at_top(figure: Figure, text: str) -> None:
    """The figure title, its first line 0.1 inch below the top edge (``fixed_grid``'s top
    margin leaves it room)."""
    height = figure.get_size_inches()[1]
    figure.suptitle(text, fontsize="large", y=1.0 - 0.1 / height, va="top")


def version_title(version: str | None) -> str:
    """The model version as shown in a figure title."""
    return version if version is not None else NO_VERSION_TITLE


def rows_of(frame: pd.DataFrame, panel: dict[str, Any]) -> pd.DataFrame:
    """The rows of ``frame`` with the key of ``panel`` (model_version null-safe)."""
    version = panel["model_version"]
    same_version = (
        frame["model_version"].isna()
        if version is None or pd.isna(version)
        else frame["model_version"] == version
    )
    mask = (
        same_version
        & (frame["slice_name"] == panel["slice_name"])
        & (frame["slice_value"] == panel["slice_value"])
    )
    return frame[mask]


def show_metric(value: Any, digits: int = 4) -> str:
    """A metric for a title: ``n/a`` when missing."""
    return "n/a" if value is None or pd.isna(value) else f"{float(value):.{digits}f}"


def save_png(png: bytes, out_dir: Path, stem: str, version: str | None, taken: list[Path]) -> Path:
    """Write the PNG bytes ``png`` (``rendered``) as ``<stem>_<version>.png`` in ``out_dir``
    (a name not in ``taken``), append the path to ``taken`` and return it."""
    path = unused_path(out_dir / f"{stem}_{file_name_part(version)}.png", taken)
    path.write_bytes(png)
    taken.append(path)
    return path


def file_name_part(version: str | None) -> str:
    """The model version as a safe file name part (``all`` without a version column)."""
    if version is None:
        return NO_MODEL_VERSION
    return UNSAFE_FILE_CHARACTERS.sub("_", version) or NO_MODEL_VERSION


def unused_path(path: Path, taken: list[Path]) -> Path:
    """``path``, or ``<stem>_2``, ``<stem>_3``, … when it is already taken."""
    # Two versions can sanitise to one file name ("v/1" and "v_1"); keep both figures.
    candidate, counter = path, 2
    while candidate in taken:
        candidate = path.with_name(f"{path.stem}_{counter}{path.suffix}")
        counter += 1
    return candidate
