# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""How plans look to people: the phase table, the indented tree, a Mermaid graph, the run summary, the rendered
bundles as YAML.

Output is plain ASCII lines so that it reads the same in a terminal, in a log
file and in an AWX job event.
"""

from __future__ import annotations

import re

from ansible_collections.phasekit.kube.plugins.module_utils import yaml_io
from ansible_collections.phasekit.kube.plugins.module_utils.kube.preview import ADD, CHANGE, DESTROY
from ansible_collections.phasekit.kube.plugins.module_utils.planning.graph import SAME_CLUSTER
from ansible_collections.phasekit.kube.plugins.module_utils.planning.plan_changes import (
    SHOWN_OBJECTS, PlanChanges, plan_changes, previews)
from ansible_collections.phasekit.kube.plugins.module_utils.planning.planner import Plan, PlannedPhase
from ansible_collections.phasekit.kube.plugins.module_utils.planning.rollout import hosts_label, over_budget, rollout_of

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


def _hosts_label(planned: PlannedPhase, shown: int = 10) -> str:
    """The phase's hosts; a fleet's as its first ones and a count (a 5000-host row per phase helps nobody)."""
    hosts = planned.placement.hosts
    if len(hosts) <= shown:
        return ",".join(hosts) or "-"
    return ",".join(hosts[:shown]) + f",... ({len(hosts)} hosts)"


def needs_of(plan: Plan) -> dict[str, list[str]]:
    """A plan run as a graph: each entry's needs as the views show them (``base``: on all its clusters;
    ``storage (same cluster)``); a rollout's needs are its own entry's. Empty for a line."""
    if plan.graph is None:
        return {}
    return {node.name: [edge.need + (" (same cluster)" if edge.wait == SAME_CLUSTER else "") for edge in node.needs]
            for node in plan.graph.nodes.values()}


def list_lines(plan: Plan) -> list[str]:
    """The plan as a table: one row per phase in run order, and whether it runs; a graph's, what each needs."""
    needs = needs_of(plan)
    graph = plan.graph is not None
    rows = [["PHASE", "CLUSTER", "HOSTS", "EXECUTOR", "SOURCE", *(["NEEDS"] if graph else []), "RUN"]]
    for planned in plan.phases:
        rows.append([planned.name, planned.phase.cluster or "-", _hosts_label(planned),
                     _executor_label(planned), source_label(planned.phase.source),
                     *([", ".join(needs.get(planned.name, [])) or "-"] if graph else []), _run_label(planned)])
    return table(rows)


def tree_lines(plan: Plan) -> list[str]:
    """The plan as an indented tree, children under their parent, with what each phase does and where."""
    title = (f"plan {plan.name}" + (f": {plan.description}" if plan.description else "")
             if plan.name else "all phases (no plan)")
    rows = []
    needs = needs_of(plan)
    for planned in plan.phases:
        phase = planned.phase
        note = "" if planned.selected else f"[not run: {planned.reason}]"
        if needs.get(planned.name):
            note = f"{note} [needs {', '.join(needs[planned.name])}]".strip()
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
    """A Mermaid flowchart: child phases inside their parent's box, arrows in run order; a plan run as a graph, an
    arrow per need instead (dotted and labelled for a need on the same cluster)."""
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
    if plan.graph is not None:
        return lines + _mermaid_needs(plan, ids)
    steps = [ids[planned.name] for planned in plan.phases if planned.phase.executor is not None]
    for before, after in zip(steps, steps[1:]):
        lines.append(f"  {before} --> {after}")
    return lines


def _mermaid_needs(plan: Plan, ids: dict) -> list[str]:
    """The graph's edges, from what is needed to what needs it: a rollout (a node of its own, a parent phase) is
    its box of children."""
    boxes = {planned.name for planned in plan.phases if planned.phase.executor is None}

    def drawn(name: str) -> str:
        return f"{ids[name]}_children" if name in boxes else ids[name]

    lines = []
    for node in plan.graph.nodes.values():
        for edge in node.needs:
            arrow = " -. same cluster .-> " if edge.wait == SAME_CLUSTER else " --> "
            lines.append(f"  {drawn(edge.need)}{arrow}{drawn(node.name)}")
    return lines


def _mermaid_text(text: str) -> str:
    return text.replace('"', "#quot;")


MARKDOWN_SUFFIXES = (".md", ".markdown")


def graph_text(mermaid: list[str], path: str = "") -> str:
    """The Mermaid graph as its file holds it: the graph alone (``.mmd``, or any name), or inside a ```mermaid fence
    when ``path`` names a Markdown file (GitHub, GitLab and most Markdown viewers draw it there)."""
    text = "\n".join(mermaid) + "\n"
    if path.lower().endswith(MARKDOWN_SUFFIXES):
        return f"```mermaid\n{text}```\n"
    return text


def bundle_header(entry: dict) -> list[str]:
    """The comment lines that say which phase and cluster a rendered bundle is, and what it is made of."""
    lines = [f"# phase {entry.get('phase')} on cluster {entry.get('cluster')}"]
    if entry.get("source"):
        lines.append(f"# source: {entry['source']}")
    if entry.get("chart"):
        lines.append(f"# helm template of release {entry.get('release')} (chart {entry['chart']}), "
                     f"namespace {entry.get('namespace')}")
    if entry.get("command"):
        command = entry["command"]
        lines.append(f"# command: {' '.join(command) if isinstance(command, list) else command}")
    for variable, files in (entry.get("directories") or {}).items():   # env_dirs: built when the phase runs
        for path, kustomization in (files or {}).items():
            lines.append(f"# builds ${variable}/{path} from {kustomization} when the phase runs")
    if entry.get("note"):
        lines.append(f"# {entry['note']}")
    if not entry.get("objects"):
        lines.append("# (no objects)")
    return lines


def bundle_yaml(entry: dict) -> str:
    """One rendered bundle (an entry of ``phase_plan``'s ``rendered``) as ``kustomize build`` prints it: its objects
    as YAML documents, ``---`` before each, after a comment header naming the phase and cluster. A bundle without
    objects is its header alone (no empty document)."""
    parts = ["\n".join(bundle_header(entry)) + "\n"]
    for obj in entry.get("objects") or []:
        parts.append("---\n" + yaml_io.safe_dump(obj, sort_keys=False, literal_text=True))
    return "".join(parts)


def tree_view(tree: list[str], mermaid: list[str], graph_file: str | None) -> list[str]:
    """What ``plan_action=tree`` prints: the tree, then the Mermaid graph or where it was written."""
    return tree + [""] + ([f"Mermaid graph written to {graph_file}"] if graph_file else mermaid)


def render_view(rendered_yaml_text: str, render_files: list | None, render_dest: str | None) -> list[str]:
    """What ``plan_action=render`` prints: the rendered YAML, or where it was written."""
    if render_files is not None:
        return [f"Rendered bundles written to {len(render_files)} file(s) in {render_dest}"]
    return rendered_yaml_text.splitlines()


def rollout_view(rollout_lines: list[str]) -> list[str]:
    return rollout_lines or ["no phase rolls out in batches"]


def validated_line(phases: int, selected: int, rendered: list[dict]) -> str:
    """What validate checked, in one line: the phases valid, and the objects the bundles render to."""
    objects = sum(len(entry.get("objects") or []) for entry in rendered)
    return f"{phases} phases valid ({selected} selected); {len(rendered)} bundles render to {objects} objects"


def rendered_yaml(rendered: list[dict]) -> str:
    """Every rendered bundle as one YAML stream, in run order (``yaml.safe_load_all`` and ``kubectl apply -f -``
    read it)."""
    return "".join(bundle_yaml(entry) for entry in rendered)


_NOT_IN_FILE_NAME = re.compile(r"[^A-Za-z0-9._-]")


def _file_part(name: str) -> str:
    part = _NOT_IN_FILE_NAME.sub("_", name)
    return "_" if part in ("", ".", "..") else part


def rendered_file_name(entry: dict) -> str:
    """Where a rendered bundle goes in a directory: ``<phase path>/<cluster>.yaml`` (``apps/web/target.yaml``), every
    part made safe as a file name."""
    phase = [_file_part(part) for part in str(entry.get("phase")).split("/")]
    return "/".join([*phase, _file_part(str(entry.get("cluster"))) + ".yaml"])


def rendered_files(rendered: list[dict]) -> dict[str, str]:
    """One file per phase and cluster: relative path -> its YAML (a phase rendered twice on one cluster, as a plan
    that repeats it, goes to one file, in run order)."""
    files: dict[str, str] = {}
    for entry in rendered:
        name = rendered_file_name(entry)
        files[name] = files.get(name, "") + bundle_yaml(entry)
    return files


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
DESTROY_CHECK_RESULTS = {"changed": "would be destroyed", "ok": "nothing left"}   # destroy --check deletes nothing


def result_words(mode: str, check_mode: bool = False) -> dict:
    """The summary's word for each record result in ``mode`` (none: the result itself)."""
    if mode == "destroy":
        return DESTROY_CHECK_RESULTS if check_mode else DESTROY_RESULTS
    return STATUS_RESULTS if mode == "status" else {}


def summary_lines(phases: list[dict], records: list[dict], play_hosts: list[str], mode: str = "run",
                  batches: list[dict] | None = None, servers: dict | None = None, check_mode: bool = False,
                  never_started: dict | None = None) -> list[str]:
    """One row per phase and host of the run list: result, duration, objects changed, the host's API server; then,
    for a plan with rollouts, one row per batch (see ``batch_lines``).

    ``phases`` are the selected phases as ``phase_plan`` returns them; ``records``
    what the role recorded per phase and host (``phase``, ``host``, ``result``,
    ``duration``, ``objects_changed``); ``servers`` each resolved host's API
    server as host:port (``-`` for a host not resolved in the run); ``never_started``: a graph run's (phase, host) ->
    why it never started there (see ``never_started_lines``).
    """
    lines = phase_summary_lines(phases, records, play_hosts, mode, servers, check_mode) + never_started_lines(never_started)
    rollouts = batch_lines(phases, records, play_hosts, batches)
    lines = lines + [""] + rollouts if rollouts else lines
    if previews(mode, check_mode):  # a preview ends as ``terraform plan`` does: what would change, in total
        changes = plan_changes(summary_entries(phases, records, play_hosts, mode, servers, check_mode))
        lines = lines + [""] + plan_changes_lines(changes, rollout_plan_lines(phases, play_hosts))
    return lines


def never_started_lines(never_started: dict) -> list[str]:
    """A graph run: the phases that never started on a cluster, and why (``(phase, host) -> why``); none: no line."""
    if not never_started:
        return []
    rows = [["PHASE", "CLUSTER", "NEVER STARTED BECAUSE"]]
    rows += [[phase, host, why] for (phase, host), why in never_started.items()]
    return ["", "Phases that never started:", *table(rows)]


def plan_changes_lines(changes: PlanChanges, rollouts: list[str] = ()) -> list[str]:
    """A preview's plan-wide summary: a table of phases and clusters (ADD, CHANGE, DESTROY, or what the phase would
    do), each one's objects after it (at most ``SHOWN_OBJECTS``, the JSON report has all), the batches each rollout
    would use (``rollouts``: ``rollout_plan_lines`` of the clusters in play), then the totals line."""
    rows = [["PHASE", "CLUSTER", "ADD", "CHANGE", "DESTROY", "PREVIEW"]]
    objects: list[str] = []
    for one in changes.phases:
        counts = [str(one.count(action)) if one.counted else "-" for action in (ADD, CHANGE, DESTROY)]
        rows.append([one.phase, one.cluster, *counts, one.note or "-"])
        if one.objects:
            objects.append(f"{one.phase} on {one.cluster}:")
            objects += [f"  {change.line()}" for change in one.objects[:SHOWN_OBJECTS]]
            if len(one.objects) > SHOWN_OBJECTS:
                objects.append(f"  ... and {len(one.objects) - SHOWN_OBJECTS} more (plan_report_json lists them all)")
    return ["Preview of the plan (nothing was changed):", *table(rows), *objects, *rollouts, changes.totals_line()]


def phase_summary_lines(phases: list[dict], records: list[dict], play_hosts: list[str], mode: str = "run",
                        servers: dict | None = None, check_mode: bool = False) -> list[str]:
    """The summary's table of phases and hosts."""
    entries = summary_entries(phases, records, play_hosts, mode, servers, check_mode)
    last_runs = mode == "status" and any("last_run" in entry["record"] for entry in entries)
    rows = [["PHASE", "CLUSTER", "RESULT", "DURATION", "CHANGED", "SERVER"] + (["LAST RUN"] if last_runs else [])]
    for entry in entries:
        changed = entry["objects_changed"]
        rows.append([entry["phase"], entry["cluster"], entry["label"], duration_label(entry["duration"]),
                     "-" if changed is None else str(changed), entry["server"] or "-"]
                    + ([last_run_label(entry["record"].get("last_run"))] if last_runs else []))
    return table(rows)


def summary_entries(phases: list[dict], records: list[dict], play_hosts: list[str], mode: str = "run",
                    servers: dict | None = None, check_mode: bool = False) -> list[dict]:
    """One entry per phase and host of the run list, in the summary's order: ``phase``, ``cluster``,
    ``executor``, ``result`` (the record's word: ok, changed, failed, skipped, not ready, not run, not in play),
    ``label`` (the summary's word for it in ``mode``), ``duration`` and ``objects_changed`` (None when not
    run), ``msg``, ``server`` (the host's API server as host:port, "" when not resolved), and the ``record``
    itself ({} when not run). The summary table and the CI reports read it."""
    servers = servers or {}
    play_hosts = set(play_hosts)  # a row per phase and host: a list here made the summary quadratic in the fleet
    results = result_words(mode, check_mode)
    if mode == "destroy":
        phases = list(reversed(phases))  # in the order destroy undid them
    recorded = {(record.get("phase"), record.get("host")): record for record in records}
    entries = []
    for phase in phases:
        if not phase.get("executor"):
            continue
        for host in phase.get("hosts") or []:
            record = recorded.get((phase["name"], host)) or {}
            if not record:
                result = label = NOT_RUN if host in play_hosts else NOT_IN_PLAY
            else:
                result = str(record.get("result", "ok"))
                label = "skipped (resumed)" if record.get("resumed") else results.get(result, result)
                if mode == "destroy" and record.get("kept_namespaces") and result in ("ok", "changed"):
                    label = kept_label(label if result == "changed" else "", check_mode)
            entries.append({"phase": phase["name"], "cluster": host, "executor": phase["executor"],
                            "result": result, "label": label, "duration": record.get("duration"),
                            "objects_changed": record.get("objects_changed"), "msg": str(record.get("msg") or ""),
                            "server": str(servers.get(host) or ""), "record": record})
    return entries


def kept_label(destroyed: str, check_mode: bool) -> str:
    """A destroy's word for a phase that left a namespace holding objects the plan did not apply."""
    kept = "namespace would be kept" if check_mode else "namespace kept"
    return f"{destroyed}, {kept}" if destroyed else kept


def last_run_label(last: dict | None) -> str:
    """Status: a phase's last recorded run on a cluster, e.g. 'ok 2026-11-24T14:45:01Z by ci@runner'."""
    if not last:
        return "none recorded"
    action = "" if last.get("action", "run") == "run" else f"{last['action']}: "
    label = f"{action}{last.get('result')} {last.get('started')} by {last.get('by')}"
    same = last.get("same_bundle")
    if same is None:
        return label + " (bundle not compared)"
    return label if same else label + " (bundle changed since)"


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
            if run.get("batch"):
                results += f" (rollout {run['batch']})"
            rows.append([host, run["started"], run["run"], run["action"], run["by"], run["version"], results])
    return table(rows)


def plan_failure_message(records: list[dict], phases: list[dict] | None = None) -> str | None:
    """'phase X failed on cluster Y: why' for the first failed phase, or ``None``. With ``phases`` (the run list,
    each with its ``origin``), the phase's document is named after why: '...; phase X is defined in
    phases/site.yaml document 3'."""
    failed = [record for record in records if record.get("result") == "failed"]
    if not failed:
        return None
    first = failed[0]
    message = f"phase {first.get('phase')} failed on cluster {first.get('host')}"
    batch = first.get("rollout")
    if isinstance(batch, dict):
        message += f" in batch {batch.get('batch')} of {batch.get('of')} of the rollout of {batch.get('phase')}"
    if first.get("msg"):
        message += f": {first['msg']}"
    document = phase_document(phases or [], first.get("phase"))
    if document:
        message += f"; phase {first.get('phase')} is defined in {document}"
    others = sorted({(record.get("phase"), record.get("host")) for record in failed[1:]})
    if others:
        message += "; also failed: " + ", ".join(f"{phase} on {host}" for phase, host in others)
    return message


_KIND_AND_NAME = re.compile(r" \([^()]*\)$")


def phase_document(phases: list[dict], name) -> str:
    """Where the run list's phase ``name`` is defined, without the kind and name its origin adds (the message names
    the phase already): ``phases/site.yaml document 3``; empty when unknown."""
    for phase in phases:
        if isinstance(phase, dict) and phase.get("name") == name and phase.get("origin"):
            return _KIND_AND_NAME.sub("", str(phase["origin"]))
    return ""


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


def drift_gate_applies(fail_on_drift: bool, mode: str, check_mode: bool) -> bool:
    """Whether the drift gate judges a run: asked for (plan_fail_on_drift), and a dry run that compares with the
    clusters (status, or a run in check mode)."""
    return fail_on_drift and (mode == "status" or (mode == "run" and check_mode))


def drift_verdict(records: list[dict], plan: str) -> list[str]:
    """What the drift gate fails on, after the summary's table: a blank line, a line per drifted phase and cluster,
    then the verdict (the failed task's message); nothing when nothing drifted."""
    drift = drift_lines(records)
    if not drift:
        return []
    named = f"plan {plan}: " if plan else ""
    return ["", *drift, f"{named}{len(drift)} phase run(s) differ from the clusters, are not ready or could not be "
                        f"checked (listed above); plan_fail_on_drift is set"]


def summary_tail(rollout_messages: list[str], verdict: list[str]) -> list[str]:
    """What a run's summary shows after its table: why a rollout ended the run (over its failure budget, or paused
    after plan_rollout_stop_after batches), then the drift gate's verdict."""
    said = [message for message in rollout_messages if message]
    return (["", *said] if said else []) + verdict


def rollouts_of(phases: list[dict]) -> list:
    """The rollouts of the plan's phases, in plan order (``rollout.RolloutOf``)."""
    found = {}
    for phase in phases:
        rollout = rollout_of(phase)
        if rollout is not None and rollout.phase not in found:
            found[rollout.phase] = rollout
    return list(found.values())


def rollout_plan_lines(phases: list[dict], in_play: list[str]) -> list[str]:
    """``list``, ``tree`` and ``render``: the batches each rollout would use for the clusters in play."""
    lines = []
    for rollout in rollouts_of(phases):
        batches = rollout.batches(in_play)
        rules = rollout.rollout
        lines.append(f"rollout of phase {rollout.phase}{' (plan_rollout)' if rollout.default else ''}: "
                     f"{sum(len(hosts) for hosts in batches)} cluster(s) in play in {len(batches)} batch(es) "
                     f"{list(rules.batches)}, order {rules.order}, max_fail_percentage {rules.max_fail_percentage:g}, "
                     f"pause {rules.pause:g}s")
        lines += [f"  batch {number}: {hosts_label(hosts, shown=5)}" for number, hosts in enumerate(batches, start=1)]
    return lines


def batch_lines(phases: list[dict], records: list[dict], play_hosts: list[str],
                reports: list[dict] | None = None) -> list[str]:
    """One row per batch of every rollout of the run: its clusters, what happened to them, the soak, and where
    the rollout stopped. ``reports``: the runner's batch reports (``BatchReport.to_dict``), for the soak and why
    it stopped; without them both are told from the records."""
    rollouts = rollouts_of(phases)
    if not rollouts:
        return []
    by_batch: dict[tuple, list] = {}
    for record in records:
        info = record.get("rollout")
        if isinstance(info, dict):
            by_batch.setdefault((info.get("phase"), info.get("batch")), []).append(record)
    told = {(report["rollout"], report["batch"]): report for report in reports or []}
    rows = [["ROLLOUT", "BATCH", "CLUSTERS", "RESULT", "DETAIL"]]
    for rollout in rollouts:
        # the runner's batches when it reported them (a sliced run's are the fleet's), else the play's
        batches = [report["hosts"] for report in reports or () if report["rollout"] == rollout.phase] or \
            rollout.batches(play_hosts)
        stopped_at = ""
        for number, hosts in enumerate(batches, start=1):
            found = by_batch.get((rollout.phase, number), [])
            report = told.get((rollout.phase, number), {})
            result, failed = _batch_result(found)
            if not found:
                result = f"not run ({stopped_at})" if stopped_at else "not run"
            reason = report.get("stopped", "")
            if reports is None and found and over_budget(len(failed), len(hosts), rollout.rollout.max_fail_percentage):
                reason = f"{len(failed)} of {len(hosts)} cluster(s) failed (over max_fail_percentage " \
                         f"{rollout.rollout.max_fail_percentage:g}%)"
            notes = [f"soak {report['soak']}"] if report.get("soak") else []
            if reason:
                notes.append(f"stopped: {reason}")
                paused = reason.startswith("plan_rollout_stop_after")
                stopped_at = f"rollout {'paused' if paused else 'stopped'} after batch {number}"
            if failed:
                notes.append("failed: " + ", ".join(failed[:10]) + (f" and {len(failed) - 10} more"
                                                                    if len(failed) > 10 else ""))
            rows.append([rollout.phase, f"{number}/{len(batches)}", hosts_label(hosts), result,
                         "; ".join(notes) or "-"])
    return table(rows)


def _batch_result(records: list[dict]) -> tuple[str, list[str]]:
    """'3 changed, 1 ok, 1 failed' counted per cluster (its worst phase), and the failed clusters."""
    worst: dict[str, str] = {}
    rank = {"failed": 4, "not ready": 3, "changed": 2, "ok": 1, "skipped": 0}
    for record in records:
        result = "resumed" if record.get("resumed") else str(record.get("result"))
        host = record.get("host")
        if host not in worst or rank.get(result, 0) > rank.get(worst[host], 0):
            worst[host] = result
    counts: dict[str, int] = {}
    for result in worst.values():
        counts[result] = counts.get(result, 0) + 1
    failed = [host for host, result in worst.items() if result == "failed"]
    return ", ".join(f"{count} {result}" for result, count in sorted(counts.items())) or "-", failed


def rollout_stop_message(stop: dict, plan: str | None = None) -> str:
    """Why a rollout ended the run: its phase, the batch, the failed clusters and their errors, the clusters
    never touched (or, after ``plan_rollout_stop_after``, how to go on)."""
    head = f"plan {plan}: " if plan else ""
    untouched = stop.get("untouched") or []
    never = (f"{len(untouched)} cluster(s) never touched: {', '.join(untouched)}" if untouched
             else "no cluster left untouched")
    where = f"rollout of phase {stop['phase']} {{}} batch {stop['batch']} of {stop['of']}"
    if stop.get("paused"):
        return f"{head}{where.format('paused after')} ({stop['reason']}); {never}"
    failed = "; ".join(f"{host}: {why}" for host, why in (stop.get("failed") or {}).items())
    return f"{head}{where.format('stopped at')}: {stop['reason']}: {failed}; {never}"
