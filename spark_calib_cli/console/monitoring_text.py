"""The console text of monitoring: fired alerts, drift references and rollup windows."""

from __future__ import annotations

from spark_calib_cli.commands.monitoring import MonitorOutcome
from spark_calib_cli.commands.rollup import RollupOutcome


def alerts_text(monitoring: MonitorOutcome, n_rules: int) -> str:
    """``drift: …`` and one line per fired alert (``FAIL`` for ``fail: true`` rules)."""
    baseline = monitoring.baseline or "none configured"
    lines = [f"drift: previous window {monitoring.previous}; baseline {baseline}"]
    if n_rules == 0:
        lines.append("alerts: no rules configured")
        return "\n".join(lines)
    if monitoring.n_alerts == 0:
        lines.append(f"alerts: none of {n_rules} rules fired")
        return "\n".join(lines)
    failing = " (a failing rule fired)" if monitoring.failed else ""
    lines.append(f"alerts: {monitoring.n_alerts:,} fired{failing}")
    for alert in monitoring.alerts:
        level = "FAIL" if alert.fail else "warn"
        lines.append(f"  {level}  [{alert.rule}] {alert.message}")
    hidden = monitoring.n_alerts - len(monitoring.alerts)
    if hidden > 0:
        lines.append(f"  … and {hidden:,} more in the calibration_alerts table")
    return "\n".join(lines)


def rollup_text(outcome: RollupOutcome, n_rules: int) -> str:
    """The window, its days, its rows, the tables written and the alerts."""
    window = outcome.window
    present = len(outcome.present)
    expected = present + len(outcome.missing)
    missing = (
        f"; missing {', '.join(day.isoformat() for day in outcome.missing)}"
        if outcome.missing
        else ""
    )
    lines = [
        "",
        f"{window.granularity} {window.label()}  run_id {outcome.run_id}  "
        f"config_hash {outcome.config_hash}",
        f"{present} of {expected} days present{missing}",
        f"{outcome.n_rows:,} input rows (summed from the daily statistics)",
        "",
        alerts_text(outcome.monitoring, n_rules),
        "",
        f"tables (partition run_date={window.end}, granularity={window.granularity}):",
        *[f"  {location}" for location in outcome.tables.values()],
    ]
    return "\n".join(lines)
