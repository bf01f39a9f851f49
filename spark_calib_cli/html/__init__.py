"""The self-contained HTML report of one run date and granularity (``--html FILE``).

This package only builds text: ``render_page`` turns a ``PageData`` (small pandas frames and
figures already encoded as data URIs) into one HTML document with its CSS and script inline.
The job layer (``spark_calib_cli.commands.html_report``) reads the tables and writes the file.
"""

from spark_calib_cli.html.model import Alert, FigureImage, PageData, RunInfo, VersionReport
from spark_calib_cli.html.page import render_page

__all__ = ["Alert", "FigureImage", "PageData", "RunInfo", "VersionReport", "render_page"]
