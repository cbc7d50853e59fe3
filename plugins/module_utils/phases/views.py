# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""How plans look to people: the phase table, the indented tree, a Mermaid graph, the run summary.

Output is plain ASCII lines so that it reads the same in a terminal, in a log
file and in an AWX job event.
"""

from __future__ import annotations

from ansible_collections.phasekit.kube.plugins.module_utils.phases.planner import Plan, PlannedPhase

GROUP = "(group)"
NOT_RUN = "not run"
NOT_IN_PLAY = "not in play"


def source_label(value) -> str:
    """A source as written: the path, or a count of inline objects."""
    if value is None:
        return "-"
    if isinstance(value, list):
        return f"(inline: {len(value)} objects)"
    if isinstance(value, dict):
        return "(inline: 1 object)"
    return str(value)


def table(rows: list[list[str]]) -> list[str]:
    """Left-aligned columns, two spaces apart, no trailing blanks."""
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]


def _run_label(planned: PlannedPhase) -> str:
    return "yes" if planned.selected else f"no ({planned.reason})"


def _executor_label(planned: PlannedPhase) -> str:
    return planned.phase.executor or GROUP


def _hosts_label(planned: PlannedPhase) -> str:
    return ",".join(planned.placement.hosts) or "-"


def list_lines(plan: Plan) -> list[str]:
    """The plan as a table: one row per phase in run order, and whether it runs."""
    rows = [["PHASE", "CLUSTER", "HOSTS", "EXECUTOR", "SOURCE", "RUN"]]
    for planned in plan.phases:
        rows.append([planned.name, planned.phase.cluster or "-", _hosts_label(planned),
                     _executor_label(planned), source_label(planned.phase.source), _run_label(planned)])
    return table(rows)


def tree_lines(plan: Plan) -> list[str]:
    """The plan as an indented tree, children under their parent, with what each phase does and where."""
    title = (f"plan {plan.name}" + (f": {plan.description}" if plan.description else "")
             if plan.name else "all phases (no plan)")
    rows = []
    for planned in plan.phases:
        phase = planned.phase
        note = "" if planned.selected else f"[not run: {planned.reason}]"
        if phase.description:
            note = f"{note} {phase.description}".strip()
        rows.append([("  " * (phase.level + 1)) + _short_label(planned), _executor_label(planned),
                     f"@{phase.cluster}" if phase.cluster else "",
                     source_label(phase.source) if phase.source is not None else "", note])
    return [title, *table(rows)] if rows else [title]


def _short_label(planned: PlannedPhase) -> str:
    """The phase's own name in the tree, with which of its runs this entry is when the plan repeats it."""
    return planned.phase.name if planned.occurrence is None else f"{planned.phase.name}#{planned.occurrence}"


def mermaid_lines(plan: Plan) -> list[str]:
    """A Mermaid flowchart: child phases inside their parent's box, arrows in run order."""
    ids = {planned.name: f"p{number}" for number, planned in enumerate(plan.phases)}
    lines = ["flowchart TD", "  classDef notrun stroke-dasharray: 5 5,color:#888"]
    by_parent: dict[str | None, list[PlannedPhase]] = {}
    for planned in plan.phases:
        by_parent.setdefault(planned.parent_name, []).append(planned)
    in_plan_roots = [planned for planned in plan.phases if planned.parent_name not in ids]

    def emit(planned: PlannedPhase, depth: int):
        indent = "  " * depth
        phase, node = planned.phase, ids[planned.name]
        style = "" if planned.selected else ":::notrun"
        label = _mermaid_text(f"{planned.name}<br/>{_executor_label(planned)}"
                              + (f" @ {phase.cluster}" if phase.cluster else ""))
        children = by_parent.get(planned.name, [])
        if phase.executor is not None:
            lines.append(f'{indent}{node}["{label}"]{style}')
        if children:
            lines.append(f'{indent}subgraph {node}_children["{_mermaid_text(planned.name)}"]')
            for child in children:
                emit(child, depth + 1)
            lines.append(f"{indent}end")

    for planned in in_plan_roots:
        emit(planned, 1)
    steps = [ids[planned.name] for planned in plan.phases if planned.phase.executor is not None]
    for before, after in zip(steps, steps[1:]):
        lines.append(f"  {before} --> {after}")
    return lines


def _mermaid_text(text: str) -> str:
    return text.replace('"', "#quot;")


def duration_label(seconds) -> str:
    if seconds is None:
        return "-"
    seconds = float(seconds)
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes}m{rest:02d}s"


# In status mode the executors run in check mode: a change means the live state differs.
STATUS_RESULTS = {"changed": "differs", "ok": "in sync"}
DESTROY_RESULTS = {"changed": "destroyed", "ok": "nothing left"}


def summary_lines(phases: list[dict], records: list[dict], play_hosts: list[str], mode: str = "run") -> list[str]:
    """One row per phase and host of the run list: result, duration, objects changed.

    ``phases`` are the selected phases as ``phase_plan`` returns them; ``records``
    what the role recorded per phase and host (``phase``, ``host``, ``result``,
    ``duration``, ``objects_changed``).
    """
    results = {"status": STATUS_RESULTS, "destroy": DESTROY_RESULTS}.get(mode, {})
    if mode == "destroy":
        phases = list(reversed(phases))  # in the order destroy undid them
    recorded = {(record.get("phase"), record.get("host")): record for record in records}
    last_runs = mode == "status" and any("last_run" in record for record in records)
    rows = [["PHASE", "CLUSTER", "RESULT", "DURATION", "CHANGED"] + (["LAST RUN"] if last_runs else [])]
    for phase in phases:
        if not phase.get("executor"):
            continue
        for host in phase.get("hosts") or []:
            record = recorded.get((phase["name"], host))
            if record is None:
                rows.append([phase["name"], host, NOT_RUN if host in play_hosts else NOT_IN_PLAY, "-", "-"]
                            + (["-"] if last_runs else []))
                continue
            changed = record.get("objects_changed")
            result = str(record.get("result", "ok"))
            label = "skipped (resumed)" if record.get("resumed") else results.get(result, result)
            rows.append([phase["name"], host, label, duration_label(record.get("duration")),
                         "-" if changed is None else str(changed)]
                        + ([last_run_label(record.get("last_run"))] if last_runs else []))
    return table(rows)


def last_run_label(last: dict | None) -> str:
    """Status: a phase's last recorded run on a cluster, e.g. 'ok 2026-11-24T14:45:01Z by ci@runner'."""
    if not last:
        return "none recorded"
    action = "" if last.get("action", "run") == "run" else f"{last['action']}: "
    label = f"{action}{last.get('result')} {last.get('started')} by {last.get('by')}"
    return label if last.get("same_bundle") else label + " (bundle changed since)"


def history_lines(found: list, phases: list[str]) -> list[str]:
    """``history``: per cluster its recorded runs, newest first, with each phase's result (``found``: (host,
    runs as ``record.run_history`` makes them, why the record could not be read))."""
    rows = [["CLUSTER", "STARTED", "RUN", "ACTION", "BY", "VERSION", "PHASES"]]
    for host, runs, problem in found:
        if problem:
            rows.append([host, "-", "-", "-", "-", "-", problem])
        elif not runs:
            rows.append([host, "-", "-", "-", "-", "-", "no run recorded"])
        for run in runs:
            results = ", ".join(f"{name} {run['phases'][name]}" for name in phases if name in run["phases"])
            rows.append([host, run["started"], run["run"], run["action"], run["by"], run["version"], results])
    return table(rows)


def plan_failure_message(records: list[dict]) -> str | None:
    """'phase X failed on cluster Y: why' for the first failed phase, or ``None``."""
    failed = [record for record in records if record.get("result") == "failed"]
    if not failed:
        return None
    first = failed[0]
    message = f"phase {first.get('phase')} failed on cluster {first.get('host')}"
    if first.get("msg"):
        message += f": {first['msg']}"
    others = sorted({(record.get("phase"), record.get("host")) for record in failed[1:]})
    if others:
        message += "; also failed: " + ", ".join(f"{phase} on {host}" for phase, host in others)
    return message


MAX_DRIFT_OBJECTS = 10  # objects named per phase and cluster in the drift gate's report


def drift_lines(records: list[dict]) -> list[str]:
    """What a drift gate fails on, one line per phase and cluster: a dry run (status, check mode) that found
    differences (the objects and fields, never values), objects not ready, or a phase that could not be checked."""
    lines = []
    for record in records:
        result, where = record.get("result"), f"{record.get('phase')} on {record.get('host')}"
        if result == "changed":
            drift = list(record.get("drift") or [])
            named = "; ".join(drift[:MAX_DRIFT_OBJECTS]) or "would change"
            more = f"; and {len(drift) - MAX_DRIFT_OBJECTS} more objects" if len(drift) > MAX_DRIFT_OBJECTS else ""
            lines.append(f"{where}: differs: {named}{more}")
        elif result == "not ready":
            lines.append(f"{where}: not ready: {record.get('msg') or ''}".rstrip(" :"))
        elif result == "failed":
            lines.append(f"{where}: could not be checked: {record.get('msg') or ''}".rstrip(" :"))
    return lines
