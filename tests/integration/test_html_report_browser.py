"""The HTML report in a real browser: the demo's binary job (its config, on a smaller seeded
log) writes the page of 2024-06-30, and headless Chromium (Debian's ``chromium``, driven by
playwright over the DevTools protocol) opens it from a file URL.

Checked: a strict HTML5 parse; no request leaves the page (every request the browser makes is
recorded, and DNS is disabled); the failing alert on v1 / country=MX is the first item at the
top and its link lands on that slice's row; clicking the ECE header reorders the rows by ECE.
Expected values come from the written tables (read with Spark), never from the page's code.
A full-page screenshot is saved into the test's output directory.

Playwright drives the browser instead of ``chromium --dump-dom``: a click and the DOM after
it, the requests made and a full-page screenshot are each one call, where --dump-dom would
need a script injected into the page under test.
"""

from __future__ import annotations

import datetime as dt
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import html5lib
import pytest
import yaml
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from spark_calib_cli.exit_codes import ExitCode
from spark_calib_cli.report.labels import slice_label
from tests.support.cli_process import REPO, conf_arguments, spark_calib_alone

RUN_DATE = dt.date(2024, 6, 30)
# The last two days of the demo's baseline week: two runs instead of seven keep the test short.
BASELINE = (dt.date(2024, 6, 22), dt.date(2024, 6, 23))
# Enough rows that v1 on country=MX has ~700 rows a day; the rules' min_n is lowered to fit.
BINARY_ROWS = 400_000
SMALL_ROWS = 200
MIN_N = 300
APT_TIMEOUT_SECONDS = 900
BROWSER_TIMEOUT_MS = 60_000


def chromium_path() -> str:
    """Debian's chromium, installed with apt-get when missing; skip when that fails."""
    found = shutil.which("chromium")
    if found:
        return found
    apt = shutil.which("apt-get")
    if apt is None:
        pytest.skip("chromium is not installed and there is no apt-get to install it")
    for command in ([apt, "update", "-q"], [apt, "install", "-y", "-q", "chromium"]):
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=APT_TIMEOUT_SECONDS, check=False
        )
        if done.returncode != 0:
            pytest.skip(
                f"chromium is not installed and {' '.join(command[1:])} failed: "
                f"{done.stderr.strip().splitlines()[-1:] or done.returncode}"
            )
    found = shutil.which("chromium")
    if found is None:
        pytest.skip("apt-get install chromium succeeded but no chromium on PATH")
    return found


def write_config(workdir: Path) -> Path:
    """conf/demo_binary.yaml with its logs and tables under ``workdir``, the baseline
    shortened to ``BASELINE`` and min_n lowered."""
    config = yaml.safe_load((REPO / "conf" / "demo_binary.yaml").read_text())
    config["input"]["path"] = str(workdir / "logs" / "binary")
    config["output"] = {"path": str(workdir / "tables")}
    config["drift"]["min_n"] = MIN_N
    config["drift"]["baseline_dates"] = {"start": BASELINE[0], "end": BASELINE[1]}
    for rule in config["alerts"]:
        if "min_n" in rule:
            rule["min_n"] = MIN_N
    path = workdir / "demo_binary.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def check(done: subprocess.CompletedProcess[str], *codes: ExitCode) -> None:
    assert done.returncode in {int(code) for code in codes}, done.stdout + done.stderr


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's binary job on a smaller log: the baseline days, then the run date with
    ``--html``, as one ``spark-calib batch`` (one JVM for the logs and both runs). Returns the
    work directory (``tables/``, ``report.html``)."""
    workdir = tmp_path_factory.mktemp("html_demo")
    rows = [f"--{kind}-rows" for kind in ("multiclass", "regression", "ctr", "segments")]
    small = [argument for flag in rows for argument in (flag, str(SMALL_ROWS))]
    config = str(write_config(workdir))
    first, last = BASELINE
    report = workdir / "report.html"
    commands = [
        ["demo-data", "--out", str(workdir / "logs"), "--binary-rows", str(BINARY_ROWS), *small],
        ["evaluate", "--config", config, "--from", str(first), "--run-date", str(last)],
        ["evaluate", "--config", config, "--run-date", str(RUN_DATE), "--html", str(report)],
    ]
    batch = workdir / "batch.txt"
    batch.write_text("".join(shlex.join([*line, *conf_arguments()]) + "\n" for line in commands))
    done = spark_calib_alone("batch", str(batch), cwd=workdir)
    # Every command ran to its end, and an alert fired (the run date's, test_failing_mx_alert…).
    check(done, ExitCode.ALERT)
    assert f"HTML report: {report}" in done.stdout
    return workdir


@pytest.fixture(scope="module")
def browser(demo_run: Path) -> Iterator[Any]:
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright (the test extras) drives the browser"
    )
    executable = chromium_path()
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=executable,
            # No DNS: a request to any host would fail even if one slipped through.
            args=["--no-sandbox", "--host-resolver-rules=MAP * ~NOTFOUND"],
        )
        yield launched
        launched.close()


@pytest.fixture()
def opened(browser: Any, demo_run: Path) -> Iterator[tuple[Any, list[str]]]:
    """The page opened from its file URL, and every URL the browser requested for it."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(BROWSER_TIMEOUT_MS)
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto((demo_run / "report.html").as_uri(), wait_until="load")
    yield page, requested
    page.close()


def table(spark: SparkSession, workdir: Path, name: str) -> Any:
    return (
        spark.read.parquet(str(workdir / "tables" / name))
        .where(F.col("run_date") == F.lit(RUN_DATE))
        .where(F.col("granularity") == F.lit("day"))
    )


def test_page_is_valid_html5(demo_run: Path) -> None:
    html5lib.HTMLParser(strict=True).parse((demo_run / "report.html").read_text("utf-8"))


def test_no_request_leaves_the_page_and_a_screenshot_is_saved(
    opened: tuple[Any, list[str]], demo_run: Path, tmp_path: Path
) -> None:
    page, requested = opened
    screenshot = tmp_path / "report.png"

    page.screenshot(path=str(screenshot), full_page=True)

    assert requested == [(demo_run / "report.html").as_uri()]
    references = page.eval_on_selector_all(
        "[src], [href]", "els => els.map(e => e.getAttribute('src') || e.getAttribute('href'))"
    )
    assert references
    assert all(ref.startswith(("data:", "#")) for ref in references), references
    assert screenshot.stat().st_size > 0
    print(f"screenshot: {screenshot}")


def test_failing_mx_alert_is_at_the_top_and_links_to_its_slice(
    opened: tuple[Any, list[str]], demo_run: Path, spark: SparkSession
) -> None:
    alerts = table(spark, demo_run, "calibration_alerts").select(
        "fail", "model_version", "slice_name", "slice_value"
    )
    failing = {tuple(row)[1:] for row in alerts.where(F.col("fail")).collect()}
    assert ("v1", "country", "MX") in failing
    page, _ = opened

    items = page.locator("ol.alerts li")
    texts = items.all_inner_texts()
    assert len(texts) == alerts.count()
    # Failing first: as many FAIL items at the top as failing rows in the table.
    assert [text.startswith("FAIL") for text in texts] == sorted(
        [True] * len(failing) + [False] * (len(texts) - len(failing)), reverse=True
    )
    mx = items.filter(has_text="v1 / country=MX").first
    assert mx.inner_text().startswith("FAIL")
    first_version_top = page.locator("section[id^='model-']").first.bounding_box()["y"]
    assert mx.bounding_box()["y"] < first_version_top

    mx.locator("a").click()

    target = page.locator(":target")
    assert target.evaluate("e => e.tagName") == "TR"
    assert target.locator("td").first.inner_text() == "country=MX"
    heading = target.evaluate("e => e.closest('section').querySelector('h2').textContent")
    assert heading == "Model v1"


def test_sorting_by_ece_reorders_the_rows_by_the_tables_values(
    opened: tuple[Any, list[str]], demo_run: Path, spark: SparkSession
) -> None:
    ece = {
        slice_label(row["slice_name"], row["slice_value"]): row["value"]
        for row in table(spark, demo_run, "calibration_metrics")
        .where(
            (F.col("model_version") == "v1") & (F.col("metric") == "ece") & F.col("class").isNull()
        )
        .collect()
    }
    page, _ = opened
    slices_table = page.locator("section#model-v1 table[id^='slices-']")
    rows = slices_table.locator("tbody tr")
    labels_before = rows.evaluate_all("rs => rs.map(r => r.cells[0].textContent)")

    slices_table.locator("thead th button", has_text=re.compile(r"^ECE$")).click()

    labels = rows.evaluate_all("rs => rs.map(r => r.cells[0].textContent)")
    assert labels != labels_before and sorted(labels) == sorted(labels_before)
    # The ECE the table wrote for each row's slice, in the order the page now shows them.
    assert [ece[label] for label in labels] == sorted(ece[label] for label in labels)
