"""The whole page: head with the inline style, the run, the alerts, the contents, one section
per model version, the trends, and the inline sorting script."""

from __future__ import annotations

from spark_calib_cli.html.assets import SCRIPT, STYLE
from spark_calib_cli.html.markup import element, text
from spark_calib_cli.html.model import PageData
from spark_calib_cli.html.sections import (
    AlertKey,
    alerts_section,
    run_section,
    toc,
    trends_section,
    version_section,
)

DOCTYPE = "<!DOCTYPE html>"


def page_title(page: PageData) -> str:
    """``Calibration report 2024-06-30 (day)``."""
    return f"Calibration report {page.run.run_date} ({page.run.granularity})"


def render_page(page: PageData) -> str:
    """The HTML document of ``page``: one string, every figure a ``data:`` URI, the style and
    script inline, so the file opens from disk or as an attachment without a request."""
    linked: set[AlertKey] = {
        (version.model_version, name, value)
        for version in page.versions
        for name, value in zip(
            version.slices["slice_name"], version.slices["slice_value"], strict=True
        )
    }
    head = (
        '<meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        # No request may leave the page, even one a browser would make on its own (favicon).
        '<link rel="icon" href="data:,">'
        + element("title", text(page_title(page)))
        + element("style", STYLE)
    )
    body = (
        element(
            "header",
            element("h1", text(page_title(page)))
            + element(
                "p",
                "The run's tables, drawn: the alerts first, then each model version. "
                "Click a table header to sort.",
                {"class": "note"},
            ),
        )
        + element(
            "main",
            run_section(page.run)
            + alerts_section(page, linked)
            + toc(page)
            + "".join(version_section(page, version) for version in page.versions)
            + trends_section(page),
        )
        + element("script", SCRIPT)
    )
    return (
        DOCTYPE
        + "\n"
        + element("html", element("head", head) + element("body", body), {"lang": "en"})
        + "\n"
    )
