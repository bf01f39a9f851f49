"""Figures drawn once per process, as PNG bytes.

A run with ``--report`` and ``--html`` draws the same figures from the same rows twice: the
PNG files, then the page's inline images. Drawing is most of the cost of either (1–2 s a
figure, about 3 s for a recalibration figure of 48 panels), so ``rendered`` keys the PNG
bytes of a figure function's output by the function and a digest of its arguments: the
second call with equal rows is a lookup, and a call with other rows draws.

The digest of a pandas frame ignores its row order and index: the figure functions pick and
sort the rows they draw (by rank, bin, point, window), and the report and the page read the
same rows through different plans, whose row order can differ. The last ``CACHE_SIZE``
results are kept.
"""

from __future__ import annotations

import hashlib
import inspect
import io
import pickle
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from spark_calib_cli.report.layout import DPI

CACHE_SIZE = 16
Drawn = list[tuple[str | None, bytes]]
_CACHE: OrderedDict[bytes, Drawn] = OrderedDict()


def rendered(
    draw: Callable[..., Sequence[tuple[str | None, Figure]]], *args: Any, **kwargs: Any
) -> Drawn:
    """``draw(*args, **kwargs)``'s (part, figure) pairs with each figure as PNG bytes
    (``png_bytes``), drawn only when no earlier call of ``draw`` had equal arguments."""
    bound = inspect.signature(draw).bind(*args, **kwargs)
    bound.apply_defaults()
    key = _digest(draw, bound.arguments)
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return list(_CACHE[key])
    drawn = [(part, png_bytes(figure)) for part, figure in draw(*bound.args, **bound.kwargs)]
    _CACHE[key] = drawn
    while len(_CACHE) > CACHE_SIZE:
        _CACHE.popitem(last=False)
    return list(drawn)


def png_bytes(figure: Figure) -> bytes:
    """``figure`` as PNG at the report's ``DPI``."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()


def _digest(draw: Callable[..., Any], arguments: dict[str, Any]) -> bytes:
    digest = hashlib.sha256(f"{draw.__module__}.{draw.__qualname__}".encode())
    for name, value in arguments.items():
        digest.update(name.encode())
        digest.update(_frame_digest(value) if isinstance(value, pd.DataFrame) else _pickled(value))
    return digest.digest()


def _frame_digest(frame: pd.DataFrame) -> bytes:
    """The columns, their dtypes and the multiset of rows."""
    header = pickle.dumps([(str(name), str(dtype)) for name, dtype in frame.dtypes.items()])
    rows = sorted(_pickled(row) for row in frame.itertuples(index=False, name=None))
    return hashlib.sha256(header + b"".join(rows)).digest()


def _pickled(value: Any) -> bytes:
    encoded = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    # Length-prefixed, so that concatenated values cannot run into each other.
    return len(encoded).to_bytes(8, "big") + encoded
