# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""``history`` mode: each cluster's recent runs of a plan, read from the clusters' run records."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.planning.planner import RunEntry
from ansible_collections.phasekit.kube.plugins.module_utils.planning.views import history_lines
from ansible_collections.phasekit.kube.plugins.module_utils.running.lock import parse_stamp
from ansible_collections.phasekit.kube.plugins.module_utils.running.record import RunRecords, run_history
from ansible_collections.phasekit.kube.plugins.module_utils.running.report import role_named, write_report
from ansible_collections.phasekit.kube.plugins.module_utils.running.timeline import iso_stamp, timeline_html


def plan_history(records: RunRecords | None, planned: list[RunEntry], in_play: list[str], concurrency: int, *,
                 timeline: str = "", plan: str = "") -> dict:
    """The task result of ``history``: each cluster's recent runs of the plan (``history``), the clusters whose
    record could not be read or was edited by hand, and why (``unreadable``), and the lines that show them.
    ``timeline``: also write the newest run's timeline there (``last_run``: its id), drawn from the records."""
    if records is None:
        return {"failed": True, "msg": "history reads the clusters' run records: record is false"}
    names = [phase.name for phase in planned if phase.executor]
    hosts = [host for host in in_play if any(host in phase.hosts for phase in planned)]

    def read(host: str):
        try:
            entries = {name: records.entries(host, name) for name in names}
        except PhasekitError as err:
            return host, [], str(err), {}
        # entries edited by hand: named, left out, and the rest shown
        return host, run_history(entries, names), "; ".join(records.problems(host)), entries

    with ThreadPoolExecutor(max(1, min(concurrency, len(hosts) or 1))) as pool:
        found = list(pool.map(read, hosts))
    history = {host: runs for host, runs, _problem, _entries in found}
    problems = {host: problem for host, _runs, problem, _entries in found if problem}
    result = {"changed": False, "history": history, "unreadable": problems,
              "summary": history_lines([(host, runs, problem) for host, runs, problem, _entries in found], names)}
    if timeline:
        last, bars = last_run_entries({host: entries for host, _runs, _problem, entries in found})
        write_report(timeline, timeline_html(bars, plan=plan, mode=f"run {last or '(none recorded)'}"),
                     role_named("report_timeline"), what="the timeline")
        result["last_run"] = last
    return result


def last_run_entries(recorded: dict[str, dict[str, list]]) -> tuple[str, list[dict]]:
    """The newest run over all clusters (by its first start) and its phases there, as the timeline's entries
    (``{phase, cluster, result, started, ended}``, in plan and host order); entries without a readable start are
    left out (the history names them)."""
    found = []
    for host, phases in recorded.items():
        for phase, entries in phases.items():
            found += [(host, phase, entry, parse_stamp(entry.get("started"))) for entry in entries
                      if isinstance(entry, dict)]
    found = [item for item in found if item[3] is not None]
    if not found:
        return "", []
    first: dict = {}
    for _host, _phase, entry, began in found:
        run = str(entry.get("run", "?"))
        first[run] = min(first.get(run, began), began)
    last = max(first, key=lambda run: (first[run], run))
    return last, [{"phase": phase, "cluster": host, "result": str(entry.get("result", "?")),
                   "started": iso_stamp(began), "ended": iso_stamp(began + _seconds(entry.get("duration")))}
                  for host, phase, entry, began in found if str(entry.get("run", "?")) == last]


def _seconds(value) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else 0.0
