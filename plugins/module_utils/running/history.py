# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""``history`` mode: each cluster's recent runs of a plan, read from the clusters' run records."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.planning.planner import RunEntry
from ansible_collections.phasekit.kube.plugins.module_utils.planning.views import history_lines
from ansible_collections.phasekit.kube.plugins.module_utils.running.record import RunRecords, run_history


def plan_history(records: RunRecords | None, planned: list[RunEntry], in_play: list[str], concurrency: int) -> dict:
    """The task result of ``history``: each cluster's recent runs of the plan (``history``), the clusters whose
    record could not be read or was edited by hand, and why (``unreadable``), and the lines that show them."""
    if records is None:
        return {"failed": True, "msg": "history reads the clusters' run records: record is false"}
    names = [phase.name for phase in planned if phase.executor]
    hosts = [host for host in in_play if any(host in phase.hosts for phase in planned)]

    def read(host: str):
        try:
            runs = run_history({name: records.entries(host, name) for name in names}, names)
        except PhasekitError as err:
            return host, [], str(err)
        # entries edited by hand: named, left out, and the rest shown
        return host, runs, "; ".join(records.problems(host))

    with ThreadPoolExecutor(max(1, min(concurrency, len(hosts) or 1))) as pool:
        found = list(pool.map(read, hosts))
    history = {host: runs for host, runs, _problem in found}
    problems = {host: problem for host, _runs, problem in found if problem}
    return {"changed": False, "history": history, "unreadable": problems,
            "summary": history_lines(found, names)}
