"""``rendered``: a figure function's output drawn once for equal arguments, again for others."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import pytest
from matplotlib.figure import Figure

from spark_calib_cli.report import rendered as module
from spark_calib_cli.report.rendered import CACHE_SIZE, png_bytes, rendered

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class CountingDraw:
    """A figure function that counts its calls: one figure per model version, a line of
    its ``value`` column sorted by ``x``."""

    def __init__(self) -> None:
        self.calls = 0
        self.__qualname__ = "CountingDraw"

    def __call__(self, frame: pd.DataFrame, *, title: str = "t") -> list[tuple[str, Figure]]:
        self.calls += 1
        figures = []
        for version, rows in frame.groupby("model_version", sort=True):
            figure = Figure(figsize=(2, 2))
            ordered = rows.sort_values("x")
            figure.add_subplot().plot(ordered["x"], ordered["value"])
            figure.suptitle(title)
            figures.append((str(version), figure))
        return figures


@pytest.fixture(autouse=True)
def empty_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(module, "_CACHE", type(module._CACHE)())


def frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "model_version": ["v1", "v1", "v2", "v2"],
            "x": [0.0, 1.0, 0.0, 1.0],
            "value": [0.1, 0.4, 0.3, 0.2],
            "bins": [[1, 2], [3], [], [4, 5]],
        }
    )


def test_each_figure_is_png_bytes_of_its_part() -> None:
    draw = CountingDraw()

    drawn = rendered(draw, frame())

    assert [part for part, _ in drawn] == ["v1", "v2"]
    assert all(png.startswith(PNG_SIGNATURE) for _, png in drawn)
    assert drawn[0][1] != drawn[1][1]


def test_equal_rows_in_another_order_are_drawn_once() -> None:
    draw = CountingDraw()
    first = rendered(draw, frame(), title="a")

    shuffled = frame().iloc[[3, 1, 0, 2]]
    again = rendered(draw, shuffled, title="a")
    # Positional or keyword, defaults spelled out or not: the same call.
    default = rendered(draw, frame=frame())
    default_again = rendered(draw, frame(), title="t")

    assert again == first
    assert default_again == default
    assert draw.calls == 2


@pytest.mark.parametrize(
    "change",
    [
        lambda f: f.assign(value=f["value"] + [0.0, 0.0, 0.0, 1e-12]),
        lambda f: f.assign(bins=[[1, 2], [3], [], [4, 6]]),
        lambda f: f.iloc[:3],
        lambda f: f.assign(x=f["x"].astype("float32")),
    ],
    ids=["value", "array element", "row dropped", "dtype"],
)
def test_other_rows_are_drawn_again(change: Callable[[pd.DataFrame], pd.DataFrame]) -> None:
    draw = CountingDraw()
    rendered(draw, frame())

    rendered(draw, change(frame()))

    assert draw.calls == 2


def test_other_arguments_are_drawn_again() -> None:
    draw = CountingDraw()
    rendered(draw, frame(), title="a")

    drawn = rendered(draw, frame(), title="b")

    assert draw.calls == 2
    assert drawn != rendered(draw, frame(), title="a")
    assert draw.calls == 2


def test_the_oldest_result_leaves_the_cache() -> None:
    draw = CountingDraw()
    for index in range(CACHE_SIZE + 1):
        rendered(draw, frame(), title=str(index))

    rendered(draw, frame(), title=str(CACHE_SIZE))
    assert draw.calls == CACHE_SIZE + 1
    rendered(draw, frame(), title="0")
    assert draw.calls == CACHE_SIZE + 2


def test_png_bytes_is_a_png() -> None:
    assert png_bytes(Figure(figsize=(1, 1))).startswith(PNG_SIGNATURE)
