"""The HTML page from hand-made page data: valid HTML5 (html5lib, strict), escaped text,
every resource inline, alerts linking to their slice rows, optional columns and sections, and
the size of a page with three model versions."""

from __future__ import annotations

import datetime as dt
import re

import html5lib
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from spark_calib_cli.html import Alert, PageData, RunInfo, VersionReport, render_page
from spark_calib_cli.html.anchors import slice_anchor
from spark_calib_cli.html.figures import png_image
from spark_calib_cli.report.rendered import png_bytes

XHTML = "{http://www.w3.org/1999/xhtml}"
RUN = RunInfo(
    run_date=dt.date(2024, 6, 30),
    granularity="day",
    window_start=dt.date(2024, 6, 30),
    window_end=dt.date(2024, 6, 30),
    run_id="abc123",
    config_hash="f00d",
    input_rows=71_376,
    invalid_by_reason={"null_score": 3},
    task="binary",
)
MX_ALERT = Alert(
    rule="v1_country_ece_jump",
    fail=True,
    metric="ece",
    model_version="v1",
    slice_name="country",
    slice_value="MX",
    class_name=None,
    message="ece vs baseline from 0.0121 to 0.1142 <b>",
)
WARN_ALERT = Alert(
    rule="overall_ece_ceiling",
    fail=False,
    metric="ece",
    model_version="v2",
    slice_name="overall",
    slice_value="",
    class_name=None,
    message="ece = 0.1081 > max 0.08",
)


def slices_frame(version: str, values: list[tuple[str, str, int | None, float]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "model_version": version,
                "slice_name": name,
                "slice_value": value,
                "rank": rank,
                "n": 5000,
                "ece": ece,
                "mce": 0.2,
                "brier": 0.2,
                "nll": 0.6,
                "accuracy": 0.7,
                "mean_confidence": 0.3,
                "mean_outcome": 0.3,
                "reliability_slope": 1.0,
            }
            for name, value, rank, ece in values
        ]
    )


def overall_frame(with_intervals: bool) -> pd.DataFrame:
    rows = [{"metric": "ece", "value": 0.0123, "n": 20_000}, {"metric": "brier", "value": 0.2}]
    frame = pd.DataFrame(rows)
    if with_intervals:
        frame["se"] = [0.001, 0.002]
        frame["ci_lower"] = [0.0103, 0.196]
        frame["ci_upper"] = [0.0143, 0.204]
    return frame


def version(
    name: str,
    *,
    with_intervals: bool = False,
    recalibration: pd.DataFrame | None = None,
    figures: tuple = (),
) -> VersionReport:
    slices = slices_frame(
        name,
        [("overall", "", 0, 0.01), ("country", "BR", 1, 0.15), ("country", "MX", None, 0.11)],
    )
    return VersionReport(
        model_version=name,
        overall=overall_frame(with_intervals),
        slices=slices,
        slices_not_shown=575,
        slices_below_min_rows=12,
        figures=figures,
        drift=pd.DataFrame(),
        drift_not_shown=0,
        recalibration=recalibration,
    )


def page(**changes: object) -> PageData:
    defaults: dict[str, object] = {
        "run": RUN,
        "alerts": (MX_ALERT, WARN_ALERT),
        "n_alerts": 2,
        "versions": (version("v1"), version("v2")),
        "min_slice_rows": 500,
        "positive_class": True,
    }
    return PageData(**{**defaults, **changes})  # type: ignore[arg-type]


def parse(document: str):
    return html5lib.HTMLParser(strict=True).parse(document)


def test_page_is_valid_html5() -> None:
    # strict=True raises html5lib.html5parser.ParseError on the first parse error.
    parse(render_page(page()))


def test_text_is_escaped() -> None:
    document = render_page(page())

    assert "0.1142 &lt;b&gt;" in document
    assert "0.1142 <b>" not in document


def test_every_resource_is_inline() -> None:
    image = png_image(png_bytes(Figure(figsize=(1, 1))), caption="c", alt="an empty figure")
    document = render_page(page(versions=(version("v1", figures=(image,)),)))
    tree = parse(document)

    links = [e.get("href") for e in tree.iter() if e.get("href") is not None]
    sources = [e.get("src") for e in tree.iter() if e.get("src") is not None]
    assert sources and all(source.startswith("data:image/png;base64,") for source in sources)
    assert all(link.startswith(("#", "data:")) for link in links)
    assert not re.search(r"https?://", document.replace("http://www.w3.org", ""))
    images = list(tree.iter(f"{XHTML}img"))
    assert [image.get("alt") for image in images] == ["an empty figure"]


def test_failing_alert_comes_first_and_links_to_its_slice_row() -> None:
    tree = parse(render_page(page(alerts=(MX_ALERT, WARN_ALERT))))

    items = [e for e in tree.iter(f"{XHTML}li") if "alert" in (e.get("class") or "")]
    first_link = next(items[0].iter(f"{XHTML}a"))
    assert "".join(items[0].itertext()).startswith("FAIL")
    assert first_link.get("href") == "#" + slice_anchor("v1", "country", "MX")
    (row,) = [
        e for e in tree.iter(f"{XHTML}tr") if e.get("id") == slice_anchor("v1", "country", "MX")
    ]
    assert "v1_country_ece_jump" in "".join(row.itertext())
    # Not by colour alone: the row says FAIL in words.
    assert "FAIL" in "".join(row.itertext())


def test_interval_columns_only_when_the_metrics_have_them() -> None:
    without = render_page(page(versions=(version("v1"),)))
    with_intervals = render_page(page(versions=(version("v1", with_intervals=True),)))

    assert "CI lower" not in without
    assert "CI lower" in with_intervals and 'data-value="0.0103"' in with_intervals


def test_says_how_many_slices_it_left_out() -> None:
    assert "575 more slices with n ≥ 500 not shown" in render_page(page())


def test_recalibration_section_only_when_its_table_exists() -> None:
    recalibration = pd.DataFrame([{"method": "isotonic", "ece_before": 0.11, "ece_after": 0.02}])

    assert "Recalibration" not in render_page(page())
    shown = render_page(page(versions=(version("v1", recalibration=recalibration),)))
    assert "Recalibration" in shown and "isotonic" in shown


def test_slice_search_section_only_when_its_table_exists() -> None:
    searched = pd.DataFrame(
        [
            {
                "rank": 1,
                "slice_name": "country,device",
                "slice_value": "BR,tablet",
                "n": 5210,
                "mean_prediction": 0.61,
                "mean_label": 0.32,
                "ecce_sigma": 41.5,
                "p_adjusted": 2.2e-16,
                "significant": True,
            }
        ]
    )
    assert "Slice search" not in render_page(page())
    plain = version("v1")
    shown = render_page(
        page(versions=(VersionReport(**{**plain.__dict__, "slice_search": searched}),))
    )
    assert "Slice search" in shown
    assert "country=BR, device=tablet" in shown and "41.5" in shown
    parse(shown)
    empty = VersionReport(**{**plain.__dict__, "slice_search": searched.iloc[:0]})
    assert "No segment searched" in render_page(page(versions=(empty,)))


def test_no_alert_says_so() -> None:
    assert "No alert rule fired" in render_page(page(alerts=(), n_alerts=0))


@pytest.mark.slow
@pytest.mark.parametrize("versions", [3])
def test_three_versions_with_figures_stay_under_5_mb(versions: int) -> None:
    """The job reads at most DEFAULT_HTML_SLICES ranked slices per version whatever the
    number of slice keys; what grows the page is the figures: six-panel reliability diagrams
    and a dense ROC curve per version."""
    from spark_calib_cli.html.figures import png_image as encode
    from spark_calib_cli.report.reliability import reliability_figures
    from spark_calib_cli.report.roc import roc_figures

    rng = np.random.default_rng(0)
    names = [f"v{i}" for i in range(1, versions + 1)]
    keys = [("overall", "")] + [("country", f"C{i}") for i in range(5)]
    bins = pd.DataFrame(
        [
            {
                "model_version": name,
                "slice_name": key[0],
                "slice_value": key[1],
                "bin": b,
                "bin_lower": b / 15,
                "bin_upper": (b + 1) / 15,
                "n": 100,
                "weight_sum": 100.0,
                "mean_confidence": (b + 0.5) / 15,
                "accuracy": float(np.clip((b + 0.5) / 15 + rng.normal(0, 0.05), 0, 1)),
                "gap": 0.0,
            }
            for name in names
            for key in keys
            for b in range(15)
        ]
    )
    panels = pd.DataFrame(
        [
            {"model_version": name, "slice_name": k[0], "slice_value": k[1], "rank": rank}
            | {"n": 10_000, "ece": 0.05, "mce": 0.1}
            for name in names
            for rank, k in enumerate(keys)
        ]
    )
    fpr = np.sort(rng.uniform(size=1000))
    points = pd.DataFrame(
        [
            {"model_version": name, "slice_name": "overall", "slice_value": "", "point": i}
            | {"threshold": 1 - x, "fpr": x, "tpr": x**0.5, "precision": 0.5}
            for name in names
            for i, x in enumerate(fpr)
        ]
    )
    summary = panels[panels["rank"] == 0].assign(roc_auc=0.8, pr_auc=0.6)
    summary = summary.assign(roc_auc_binned=None, pr_auc_binned=None)
    figures: dict[str, list] = {name: [] for name in names}
    for name, figure in reliability_figures(bins, panels, run_date="2024-06-30"):
        figures[str(name)].append(encode(png_bytes(figure), caption="r", alt="r"))
    for name, figure in roc_figures(points, summary, run_date="2024-06-30"):
        figures[str(name)].append(encode(png_bytes(figure), caption="roc", alt="roc"))
    many = tuple(
        VersionReport(
            model_version=name,
            overall=overall_frame(True),
            slices=slices_frame(
                name, [("country", f"K{i:03d}", i + 1, 0.1 - i / 1000) for i in range(25)]
            ),
            slices_not_shown=575,
            slices_below_min_rows=0,
            figures=tuple(figures[name]),
            drift=pd.DataFrame(),
            drift_not_shown=0,
        )
        for name in names
    )

    document = render_page(page(versions=many, alerts=(), n_alerts=0))

    assert len(document.encode("utf-8")) < 5 * 1024 * 1024


def test_slice_intervals_follow_their_metric_when_present() -> None:
    plain = version("v1")
    slices = plain.slices.assign(ece_ci_lower=0.005, ece_ci_upper=0.0321)
    with_ci = VersionReport(**{**plain.__dict__, "slices": slices})

    assert "ECE CI lower" not in render_page(page(versions=(plain,)))
    document = render_page(page(versions=(with_ci,)))
    headers = re.findall(r'<th scope="col"[^>]*>([^<]*)</th>', document)
    ece = headers.index("ECE")
    assert headers[ece + 1 : ece + 3] == ["ECE CI lower", "ECE CI upper"]
    assert 'data-value="0.0321"' in document
