"""The console text of monitoring: the drift references and the fired alerts of a window."""

from __future__ import annotations

from spark_calib_cli.commands.monitoring import MonitorOutcome


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
