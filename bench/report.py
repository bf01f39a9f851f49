"""Write the results dict as JSON and render it as ``docs/benchmarks.md``."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from bench.cases import ECE_DIFF_KEY, ECE_OK_KEY, ECE_TOLERANCE_KEY, SCAN_FLOOR
from bench.linearity import fit_summary
from bench.phases import DRIVER

MIB = 1024 * 1024


def write_json(results: dict[str, Any], out_dir: Path) -> Path:
    """``<out_dir>/<date>.json`` (a later run of the same day replaces it)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{results['date']}.json"
    path.write_text(json.dumps(results, indent=2, sort_keys=False) + "\n")
    return path


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(value) for value in row) + " |" for row in rows]
    return [*lines, ""]


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 100 else f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value).replace("|", "\\|")


def _bounded(value: float | None, lower_bound: bool) -> str:
    """A table cell; '> value' for a lower bound (a cancelled run)."""
    return f"> {_cell(value)}" if lower_bound and value is not None else _cell(value)


def _times(values: Sequence[float]) -> str:
    return ", ".join(f"{value:.2f}" for value in values)


def _config_summary(cfg: dict[str, Any]) -> str:
    slices = "; ".join("[" + ", ".join(s) + "]" for s in cfg["slices"])
    metrics = ", ".join(cfg.get("metrics", ["defaults"]))
    strategy = cfg.get("slice_strategy", "auto")
    summary = f"slices {slices} · metrics {metrics} · slice_strategy {strategy}"
    binning = cfg.get("binning", {}).get("strategy")
    return f"{summary} · binning.strategy {binning}" if binning else summary


def _stats_rows(counted: dict[str, Any]) -> list[str]:
    largest = counted["largest_key"]
    kinds = ", ".join(
        f"{kind.removeprefix('with_')} {largest[kind]:,}"
        for kind in largest
        if kind.startswith("with_") and largest[kind]
    )
    slice_value = largest["slice_value"] or "—"
    variant = counted.get("variant", "spark_calib")
    source = (
        "an untimed run that wrote only the stats table (every timed run was cancelled) of "
        if counted.get("from_untimed_run")
        else "the last run's stats table of "
    )
    return [
        f"Statistics rows per model version × slice value × class (`class` null, counted after "
        f"the timing from {source}`{variant}`): max {counted['max']:,}, "
        f"median {counted['median']:,.0f} over {counted['keys']:,} keys; "
        f"{counted['keys_with_more_stats_rows_than_input_rows']:,} keys have more statistics "
        f"rows than input rows. Target: ≤ {counted['target_max']:,}, and never more than its "
        f"rows. Largest key: {largest['model_version']} · {largest['slice_name']} = "
        f"{slice_value} ({largest['input_rows']:,} input rows; non-null {kinds}).",
        "",
    ]


def _case(name: str, case: dict[str, Any]) -> list[str]:
    lines = [f"### {name}", ""]
    if "same_as" in case:
        return [*lines, f"The same config as `{case['same_as']}`, measured once there.", ""]
    kind = case.get("log_kind", case["task"])
    task = "" if kind == case["task"] else f" (task {case['task']})"
    lines.append(
        f"{kind} log{task}, {case['rows']:,} rows; scan columns: "
        + ", ".join(f"`{c}`" for c in case["scan_columns"])
        + "."
    )
    lines.append("")
    for variant, cfg in case["configs"].items():
        lines.append(f"- `{variant}`: {_config_summary(cfg)}")
    lines.append("")
    ratios = case["ratios"]
    bounds = set(case.get("lower_bound_ratios", []))
    floors = case.get("aggregation_floors") or {}
    floor_of = {variant: name for name, floor in floors.items() for variant in floor["variants"]}
    floor_ratios = {f"{variant}/{name}" for variant, name in floor_of.items()}
    rows = []
    for variant, entry in case["variants"].items():
        notes = list(entry.get("notes", []))
        if entry.get("strategy"):
            notes.append(f"strategy {entry['strategy']}")
        if entry.get("extrapolated"):
            notes.append(
                f"extrapolated from {entry['measured_passes_per_run']} measured passes "
                f"(wall {entry['measured_wall_median_s']:.2f} s) to "
                f"{entry['passes_full_slice_list']} passes"
            )
        key = f"{variant}/{SCAN_FLOOR}"
        row = [
            f"`{variant}`",
            _bounded(entry["median_s"], entry.get("lower_bound", False)),
            _times(entry["timings_s"]),
            _bounded(ratios.get(key), key in bounds) if variant != SCAN_FLOOR else 1.0,
        ]
        if floors:
            row.append(_floor_cell(variant, floors, floor_of, ratios, bounds, notes))
        rows.append([*row, "; ".join(notes)])
    header = ["variant", "median s", "runs s", "× scan floor"]
    header += ["× aggregation floor"] if floors else []
    lines += _table([*header, "notes"], rows)
    others = {
        k: v
        for k, v in ratios.items()
        if not k.endswith(f"/{SCAN_FLOOR}") and k not in floor_ratios
    }
    if others:
        described = [f"{k} {'>' if k in bounds else '='} {_cell(v)}" for k, v in others.items()]
        lines += ["Ratios: " + ", ".join(described), ""]
    lines += _phases(case)
    if case.get("stats_rows_per_key"):
        lines += _stats_rows(case["stats_rows_per_key"])
    checks = case.get("checks", {})
    if ECE_DIFF_KEY in checks:
        verdict = "ok" if checks[ECE_OK_KEY] else "MISMATCH"
        lines += [
            f"Check: max over model versions of |overall ECE (pandas) − ECE (spark_calib)| = "
            f"{checks[ECE_DIFF_KEY]:.2g} (tolerance {checks[ECE_TOLERANCE_KEY]:g}): {verdict}.",
            "",
        ]
    lines += [f"Note: {note}" for note in case.get("notes", [])]
    return [*lines, ""] if case.get("notes") else lines


def _floor_cell(
    variant: str,
    floors: dict[str, Any],
    floor_of: dict[str, str],
    ratios: dict[str, Any],
    bounds: set[str],
    notes: list[str],
) -> Any:
    """The "× aggregation floor" cell of ``variant``: 1.0 for a floor (whose grain goes to its
    ``notes``), the ratio to its floor for a spark_calib variant (named in ``notes`` when it is
    not the case's first floor), else none."""
    if variant in floors:
        floor = floors[variant]
        of = ", ".join(f"`{name}`" for name in floor["variants"])
        notes.append(f"`{floor['query']}`: {floor['grain']}; the floor of {of}")
        return 1.0
    name = floor_of.get(variant)
    if name is None:
        return None
    if name != next(iter(floors)):
        notes.append(f"÷ `{name}`")
    key = f"{variant}/{name}"
    return _bounded(ratios.get(key), key in bounds)


def _phases(case: dict[str, Any]) -> list[str]:
    """The phases table of the case's spark_calib variants (``bench.phases``), if any."""
    rows = []
    for variant, entry in case["variants"].items():
        phases = entry.get("phases")
        if not phases:
            continue
        path = f"{phases['path']}, {phases['statistics_rows']:,} statistics rows"
        if phases["path"] == DRIVER and phases.get("statistics_to_arrow_s") is not None:
            path += f" (toArrow {phases['statistics_to_arrow_s']:.2f} s)"
        rows.append(
            [
                f"`{variant}`",
                phases["aggregation_s"],
                phases["finishing_s"],
                phases["writing_s"],
                phases["evaluate_s"],
                phases["write_s"],
                path,
            ]
        )
    if not rows:
        return []
    header = [
        "variant",
        "aggregation s",
        "finishing s",
        "writing s",
        "evaluate s",
        "writes s",
        "finishing",
    ]
    intro = (
        "Phases (medians over the timed runs; finishing timed alone after the rounds, see the "
        "notes):"
    )
    return [intro, "", *_table(header, rows)]


def _machine(results: dict[str, Any]) -> list[str]:
    machine = results["machine"]
    rows = [[key, str(value)] for key, value in machine.items() if key != "total_ram_bytes"]
    rows += [[key, str(value)] for key, value in results["settings"]["spark"].items()]
    return _table(["", ""], rows)


def _targets(results: dict[str, Any]) -> list[str]:
    rows = [
        [t["target"], t.get("measured"), t["status"], t.get("note", "")] for t in results["targets"]
    ]
    return _table(["target", "measured", "status", "note"], rows)


def _scaling(results: dict[str, Any]) -> list[str]:
    scaling = results.get("scaling")
    if not scaling or not scaling.get("points"):
        return ["Not measured.", ""]
    points = scaling["points"]
    fits = {variant: fit_summary(points, variant) for variant in (SCAN_FLOOR, "spark_calib")}
    rows = [
        [
            p["rows"],
            p["scan_floor_s"],
            p["scan_floor_s_per_million_rows"],
            _vs_fit(fits[SCAN_FLOOR], index),
            p["spark_calib_s"],
            p["spark_calib_s_per_million_rows"],
            _vs_fit(fits["spark_calib"], index),
            p["source"],
        ]
        for index, p in enumerate(points)
    ]
    header = [
        "rows",
        "scan floor s",
        "s / M rows",
        "vs fit",
        "spark_calib s",
        "s / M rows",
        "vs fit",
        "source",
    ]
    described = [
        f"{name}: t ≈ {fit['fixed_s']:.2f} s + {fit['per_million_rows_s']:.3f} s per million rows"
        for name, fit in (("scan floor", fits[SCAN_FLOOR]), ("spark_calib", fits["spark_calib"]))
        if fit is not None
    ]
    intro = (
        f"Config `{scaling['config']}`. Least-squares lines t = a + b·n ({'; '.join(described)}); "
        '"vs fit" is each time over its line (1.00 on the line). The fixed part a is why seconds '
        "per million rows fall with size."
    )
    return [intro, "", *_table(header, rows)]


def _vs_fit(fit: dict[str, Any] | None, index: int) -> float | None:
    return None if fit is None else fit["vs_fit"][index]


def _mib(value: int | None) -> str:
    return f"{value / MIB:,.0f} MiB" if value else "—"


def _memory(results: dict[str, Any]) -> list[str]:
    memory = results.get("memory") or {}
    lines = [
        f"- Driver JVM peak RSS (VmHWM): {_mib(memory.get('driver_jvm_peak_rss_bytes'))} "
        f"(max heap {memory.get('driver_jvm_max_heap_mib')} MiB, "
        f"spark.driver.memory {results['settings']['driver_memory']})",
        f"- Python peak RSS (ru_maxrss): {_mib(memory.get('python_peak_rss_bytes'))}",
    ]
    low = results.get("low_memory")
    if low:
        if low.get("ok"):
            lines.append(
                f"- With spark.driver.memory {low['driver_memory']}: the typical config on "
                f"{low['rows']:,} rows evaluated in {low['seconds']:.2f} s (one cold run), "
                f"driver JVM peak RSS {_mib(low.get('driver_jvm_peak_rss_bytes'))}"
            )
        else:
            lines.append(
                f"- With spark.driver.memory {low['driver_memory']} on {low['rows']:,} rows: "
                f"FAILED ({low.get('error', 'unknown error')})"
            )
    return [*lines, ""]


def _method(settings: dict[str, Any]) -> str:
    warmup = "after one warm-up run" if settings.get("warmup", True) else "WITHOUT warm-up runs"
    return (
        f"Median of {settings['repeats']} timed runs per variant {warmup}; within each round "
        'the variants alternate. Seconds are wall-clock. A variant noted "timed once" has '
        "a single timed run (see its note)."
    )


def render_markdown(results: dict[str, Any], json_path: Path | None = None) -> str:
    """The whole benchmarks page."""
    source = f" (raw results: `{json_path}`)" if json_path is not None else ""
    lines = [
        "# Benchmarks",
        "",
        f"Generated by `bench.run` on {results['date']}{source}; rerun `make bench` rather than "
        "editing this page.",
        "",
        "## Command",
        "",
        "```text",
        results["command"],
        "```",
        "",
        "## Machine",
        "",
        *_machine(results),
        "## Targets",
        "",
        *_targets(results),
        "## Cases",
        "",
        _method(results["settings"]),
        "",
    ]
    for name, case in results["cases"].items():
        lines += _case(name, case)
    lines += ["## Scaling", "", *_scaling(results), "## Memory", "", *_memory(results)]
    lines += ["## Notes", "", *[f"- {note}" for note in results["notes"]], ""]
    return "\n".join(lines)


def write_docs(results: dict[str, Any], path: Path, json_path: Path | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_markdown(results, json_path))
    return path
