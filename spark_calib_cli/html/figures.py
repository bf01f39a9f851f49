"""Figures on the page: a rendered figure as an inline PNG (a ``data:`` URI), with alt text."""

from __future__ import annotations

import base64

from spark_calib_cli.html.markup import element, text, void_element
from spark_calib_cli.html.model import FigureImage

PNG_MEDIA_TYPE = "image/png"


def png_image(png: bytes, *, caption: str, alt: str) -> FigureImage:
    """The PNG bytes ``png`` (``spark_calib_cli.report.rendered``: the report's DPI, the PNG
    files' resolution) encoded as a base64 ``data:`` URI. PNG, not SVG: a diagram of 15 bins
    × 6 panels or 1,000 ROC points stays near 100 kB, where SVG text grows with the points
    drawn."""
    encoded = base64.b64encode(png).decode("ascii")
    return FigureImage(caption=caption, alt=alt, data_uri=f"data:{PNG_MEDIA_TYPE};base64,{encoded}")


def figure_html(image: FigureImage) -> str:
    """``<figure>`` with the image (its alt text) and the caption."""
    return element(
        "figure",
        void_element("img", {"src": image.data_uri, "alt": image.alt})
        + element("figcaption", text(image.caption)),
    )
