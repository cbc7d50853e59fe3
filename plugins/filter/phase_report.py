# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Filters phase_summary and phase_failure: the end-of-plan report of the plan role."""

from __future__ import annotations

from ansible_collections.phasekit.kube.plugins.module_utils.planning.views import (
    drift_lines, plan_failure_message, summary_lines)


def phase_summary(records, phases, play_hosts=None, mode="run", servers=None):
    """Table lines: one row per phase and host of the run list, with result, duration, objects changed and the
    host's API server (``servers``: host -> host:port, as RV(run_phases) returns them)."""
    return summary_lines(list(phases or []), list(records or []), list(play_hosts or []), mode=str(mode),
                         servers={str(host): str(server) for host, server in dict(servers or {}).items()})


def phase_failure(records, phases=None):
    """'phase X failed on cluster Y: why' for the first failed phase, or an empty string; with ``phases`` (the run
    list) it names the phase's document too."""
    return plan_failure_message(list(records or []), list(phases or [])) or ""


def phase_drift(records):
    """What differs, is not ready or could not be checked, one line per phase and cluster (the drift gate)."""
    return drift_lines(list(records or []))


class FilterModule:
    def filters(self):
        return {"phase_summary": phase_summary, "phase_failure": phase_failure, "phase_drift": phase_drift}
