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

**Drawing processes.** Drawing is Python (matplotlib's artists) on one core while Spark's JVM
waits. A figure function with a keyword ``share`` (one figure per model version or metric)
is drawn by up to ``draw_processes()`` worker processes at once, the i-th of n drawing every
n-th figure (``layout.shared``), and their lists are taken in turn, so the result is the one
process's, figure for figure and byte for byte. The workers are started (``spawn``) on first
use, or early by ``start_drawing_processes``, and live as long as this process; a pool that
cannot start or breaks falls back to drawing here. ``SPARK_CALIB_DRAW_PROCESSES`` sets their
number (1: draw in this process; default: the cores, at most ``MAX_DRAW_PROCESSES``).
"""

from __future__ import annotations

import hashlib
import inspect
import io
import multiprocessing
import os
import pickle
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from spark_calib.errors import ConfigError
from spark_calib_cli.report.layout import DPI

CACHE_SIZE = 16
DRAW_PROCESSES_ENV = "SPARK_CALIB_DRAW_PROCESSES"
MAX_DRAW_PROCESSES = 4
SHARE_PARAMETER = "share"
Drawn = list[tuple[str | None, bytes]]
_CACHE: OrderedDict[bytes, Drawn] = OrderedDict()
# The report draws its figure kinds from threads (``commands.report``).
_CACHE_LOCK = threading.Lock()
_POOL: ProcessPoolExecutor | None = None
_POOL_FAILED = False
_POOL_ERRORS = (BrokenProcessPool, OSError)


def rendered(
    draw: Callable[..., Sequence[tuple[str | None, Figure]]], *args: Any, **kwargs: Any
) -> Drawn:
    """``draw(*args, **kwargs)``'s (part, figure) pairs with each figure as PNG bytes
    (``png_bytes``), drawn only when no earlier call of ``draw`` had equal arguments."""
    bound = inspect.signature(draw).bind(*args, **kwargs)
    bound.apply_defaults()
    key = _digest(draw, bound.arguments)
    with _CACHE_LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return list(_CACHE[key])
    drawn = _drawn(draw, bound)
    with _CACHE_LOCK:
        _CACHE[key] = drawn
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    return list(drawn)


def draw_processes() -> int:
    """The number of drawing processes: ``SPARK_CALIB_DRAW_PROCESSES``, else the cores (at
    most ``MAX_DRAW_PROCESSES``). ``ConfigError`` when the variable is not a positive
    integer."""
    value = os.environ.get(DRAW_PROCESSES_ENV)
    if value is None:
        return max(1, min(os.cpu_count() or 1, MAX_DRAW_PROCESSES))
    if not value.strip().isdigit() or int(value) < 1:
        raise ConfigError(f"{DRAW_PROCESSES_ENV} must be a positive integer, got {value!r}")
    return int(value)


def start_drawing_processes() -> None:
    """Start the drawing processes now (their imports take about a second), so that they are
    ready when the first figure is drawn; nothing with one drawing process."""
    pool = _pool()
    if pool is not None:
        try:
            for _ in range(draw_processes()):
                pool.submit(os.getpid)
        except _POOL_ERRORS:
            _give_up()


def forget_drawn() -> None:
    """Empty the cache: the next call of each figure function draws."""
    with _CACHE_LOCK:
        _CACHE.clear()


def stop_drawing_processes() -> bool:
    """Stop the drawing processes (they start again when needed, even after a pool that
    broke); whether any were running."""
    global _POOL, _POOL_FAILED
    pool, _POOL, _POOL_FAILED = _POOL, None, False
    if pool is None:
        return False
    pool.shutdown()
    return True


def _give_up() -> None:
    global _POOL, _POOL_FAILED
    pool, _POOL, _POOL_FAILED = _POOL, None, True
    if pool is not None:
        pool.shutdown(wait=False, cancel_futures=True)


def _pool() -> ProcessPoolExecutor | None:
    global _POOL, _POOL_FAILED
    if _POOL is None and not _POOL_FAILED and draw_processes() > 1:
        try:
            # spawn, not fork: the driver holds the JVM's sockets and py4j's threads.
            context = multiprocessing.get_context("spawn")
            _POOL = ProcessPoolExecutor(max_workers=draw_processes(), mp_context=context)
        except OSError:
            _POOL_FAILED = True
    return _POOL


def _drawn(draw: Callable[..., Sequence[tuple[str | None, Figure]]], bound: Any) -> Drawn:
    """``draw``'s figures as PNG bytes, shared among the drawing processes when it can be."""
    pool = _pool() if SHARE_PARAMETER in bound.kwargs else None
    if pool is not None:
        count = draw_processes()
        try:
            futures: list[Future[Drawn]] = [
                pool.submit(
                    _draw_share, draw, bound.args, {**bound.kwargs, SHARE_PARAMETER: (i, count)}
                )
                for i in range(count)
            ]
            shares = [future.result() for future in futures]
        except _POOL_ERRORS:
            # A worker could not start or died (killed, out of memory): draw here from now on.
            _give_up()
        else:
            total = sum(len(share) for share in shares)
            return [shares[k % count][k // count] for k in range(total)]
    return _draw_share(draw, bound.args, bound.kwargs)


def _draw_share(
    draw: Callable[..., Sequence[tuple[str | None, Figure]]],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Drawn:
    """``draw(*args, **kwargs)``'s (part, PNG bytes); run in a drawing process or here."""
    return [(part, png_bytes(figure)) for part, figure in draw(*args, **kwargs)]


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
