"""The report and the HTML page of a run with a recalibration section: one before/after
figure per model version, next to the reliability diagrams, and embedded in the page's
Recalibration section (whose table leaves the bin arrays to the figure)."""

from __future__ import annotations

import base64
import re
from collections import OrderedDict
from pathlib import Path

import html5lib
import pytest
from matplotlib.figure import Figure
from pyspark.sql import SparkSession

from spark_calib.config import Config
from spark_calib_cli.commands.evaluate import run_evaluate
from spark_calib_cli.commands.html_figures import RECALIBRATION_CAPTION
from spark_calib_cli.commands.html_report import write_html_report
from spark_calib_cli.commands.report import run_report
from spark_calib_cli.report import rendered as rendered_module
from spark_calib_cli.report.rendered import png_bytes
from tests.support.jobs import RUN_DATE, job_config, log_rows, write_log

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
EMBEDDED_PNG = r"data:image/png;base64,([A-Za-z0-9+/=]+)"


def test_report_and_page_draw_reliability_before_and_after_the_maps(
    spark: SparkSession, tmp_path: Path
) -> None:
    page = tmp_path / "page.html"
    config = evaluated(spark, tmp_path, ["temperature", "isotonic"])

    paths = run_report(spark, config, RUN_DATE, tmp_path / "report", trend_windows=0)
    write_html_report(spark, config, RUN_DATE, page, min_slice_rows=1, trend_windows=0)

    names = sorted(path.name for path in paths)
    # Versions a and b of tests/support/jobs.py's log.
    assert {"recalibration_a.png", "recalibration_b.png"} <= set(names)
    assert {"reliability_a.png", "reliability_b.png"} <= set(names)
    for path in paths:
        assert path.read_bytes()[:8] == PNG_SIGNATURE
    document = page.read_text("utf-8")
    html5lib.HTMLParser(strict=True).parse(document)
    assert document.count(RECALIBRATION_CAPTION) == 2
    assert "reliability_before" not in document and "reliability_after" not in document


def test_a_page_after_the_report_embeds_its_pngs_without_drawing_again(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = tmp_path / "page.html"
    config = evaluated(spark, tmp_path, ["temperature"])
    drawn: list[bytes] = []

    def counted(figure: Figure) -> bytes:
        drawn.append(png_bytes(figure))
        return drawn[-1]

    monkeypatch.setattr(rendered_module, "png_bytes", counted)
    # Nothing drawn by an earlier test of this process.
    monkeypatch.setattr(rendered_module, "_CACHE", OrderedDict())
    paths = run_report(spark, config, RUN_DATE, tmp_path / "report")
    after_report = len(drawn)
    write_html_report(spark, config, RUN_DATE, page)

    # Reliability and recalibration of versions a and b, and the trends.
    assert after_report == len(paths) >= 4
    assert len(drawn) == after_report
    document = page.read_text("utf-8")
    embedded = [base64.b64decode(data) for data in re.findall(EMBEDDED_PNG, document)]
    assert sorted(embedded) == sorted(path.read_bytes() for path in paths)


def evaluated(spark: SparkSession, tmp_path: Path, methods: list[str]) -> Config:
    """The config of a run of RUN_DATE over a 40-row log with recalibration by ``methods``,
    after that run."""
    log, out = tmp_path / "log", tmp_path / "out"
    write_log(spark, log, log_rows(40))
    config = job_config(
        {"path": str(log)},
        {"path": str(out)},
        recalibration={"methods": methods, "min_fit_rows": 15},
    )
    run_evaluate(spark, config, RUN_DATE)
    return config
