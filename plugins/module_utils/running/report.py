# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The files a plan action writes for people and CI: the run summary as JSON and as JUnit XML (a testsuite per
phase, a testcase per cluster) and as a timeline picture (``timeline.py``), the plan's Mermaid graph, and
``render``'s bundles as YAML.

They carry one entry per phase and cluster of the run list, as the summary
table shows them (``views.summary_entries``): result, duration, its start and
end (UTC, milliseconds), objects changed and message. Messages are the records' own, already masked by the executors;
callers may scrub them once more (``masks_for``). Files are written atomically
(a temporary file and one rename) into a directory that must exist.
"""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.planning.plan_changes import (
    NOT_COUNTED, phase_changes, previews)
from ansible_collections.phasekit.kube.plugins.module_utils.planning.views import (
    NOT_IN_PLAY, NOT_RUN, graph_text, rendered_files, rendered_yaml, summary_entries)
from ansible_collections.phasekit.kube.plugins.module_utils.private_files import write_atomically
from ansible_collections.phasekit.kube.plugins.module_utils.running.timeline import iso_stamp, timeline_html

REPORT_VERSION = 1
FAILED_RESULTS = ("failed",)
SKIPPED_RESULTS = ("skipped", NOT_RUN, NOT_IN_PLAY)
OUTPUT_KEYS = ("stdout", "stderr")  # a command phase's output, in its entry as in its result
REPORT_MODE = 0o644  # a CI artefact: no secret in it, readable by the job's other steps
# what XML 1.0 cannot hold at all, even escaped (a command printing a bell, an escape sequence, U+FFFE)
NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def report_entries(phases: list[dict], records: list[dict], play_hosts: list[str], mode: str = "run",
                   masks_for=None, servers: dict | None = None, check_mode: bool = False) -> list[dict]:
    """One plain entry per phase and cluster: phase, cluster, server (its API server as host:port, "" when it was
    not resolved; ``servers``), executor, result, summary (the summary's word), duration (seconds, None when not
    run), objects_changed, message. ``masks_for(host)``: a ``Masks`` whose secrets are hidden from that cluster's
    message. A preview's entries (check mode, status) also carry ``changes`` (``PhaseChanges.to_dict``)."""
    entries = []
    preview = previews(mode, check_mode)
    for entry in summary_entries(phases, records, play_hosts, mode, servers, check_mode):
        scrub = masks_for(entry["cluster"]).scrub_text if masks_for is not None else str
        message = scrub(entry["msg"]) if entry["msg"] else entry["msg"]
        duration = entry["duration"]
        reported = {"phase": entry["phase"], "cluster": entry["cluster"], "server": entry["server"],
                    "executor": entry["executor"], "result": entry["result"], "summary": entry["label"],
                    "duration": None if duration is None else round(float(duration), 3),
                    "objects_changed": entry["objects_changed"], "message": message}
        record = entry["record"]
        if record.get("started") and duration is not None:     # when it ran: a timeline can be drawn
            reported.update(started=iso_stamp(record["started"]), ended=iso_stamp(record["started"] + float(duration)))
        if any(stream in record for stream in OUTPUT_KEYS):  # a command's: what it printed, as its result keeps it
            reported.update({"rc": record.get("rc")},
                            **{stream: scrub(str(record.get(stream) or "")) for stream in OUTPUT_KEYS})
        if preview:
            changes = phase_changes(entry).to_dict()  # object names and field paths; masked like the message
            reported["changes"] = masks_for(entry["cluster"]).scrub(changes) if masks_for is not None else changes
        entries.append(reported)
    return entries


def json_report(entries: list[dict], *, plan: str, mode: str, check_mode: bool, stopped_by: str = "") -> str:
    """The report as JSON text: the run (plan, mode, check mode, what stopped it), totals per result, the entries."""
    totals: dict[str, int] = {}
    for entry in entries:
        totals[entry["result"]] = totals.get(entry["result"], 0) + 1
    document = {"version": REPORT_VERSION, "plan": plan, "mode": mode, "check_mode": check_mode,
                "stopped_by": stopped_by, "failed": bool(totals.get("failed")), "totals": totals,
                "results": entries}
    if previews(mode, check_mode):  # the preview's totals, as its summary's last line says them
        document["changes"] = planned_totals(entries)
    return json.dumps(document, indent=2, sort_keys=False) + "\n"


def planned_totals(entries: list[dict]) -> dict:
    """A preview's totals from its report entries (each with its ``changes``): objects to add, change and destroy,
    the phases and clusters not counted (failed or not run), and those not previewed (``known_after_run``)."""
    totals = {action: sum((entry.get("changes") or {}).get(action, 0) for entry in entries)
              for action in ("add", "change", "destroy")}
    return {**totals, "incomplete": [f"{entry['phase']} on {entry['cluster']}" for entry in entries
                                     if entry["result"] in NOT_COUNTED],
            "known_after_run": [f"{entry['phase']} on {entry['cluster']}" for entry in entries
                                if (entry.get("changes") or {}).get("known_after_run")]}


def junit_report(entries: list[dict], *, plan: str, mode: str) -> str:
    """The report as JUnit XML: a testsuite per phase (plan order), a testcase per cluster; ``failure`` for a
    failed cluster, ``skipped`` for one skipped or not run."""
    suites = ET.Element("testsuites", name=f"phasekit plan {plan}".rstrip() + f" ({mode})")
    by_phase: dict[str, list[dict]] = {}
    for entry in entries:
        by_phase.setdefault(entry["phase"], []).append(entry)
    for phase, cases in by_phase.items():
        suite = ET.SubElement(suites, "testsuite", name=phase)
        for entry in cases:
            case = ET.SubElement(suite, "testcase", name=entry["cluster"], classname=f"{plan or 'plan'}.{phase}",
                                 time=f"{entry['duration'] or 0:.3f}")
            shown = {name: entry[name] for name in ("server", "started", "ended") if entry.get(name)}
            if shown:  # the cluster's API server (hosts that share one show it), when the phase ran there
                properties = ET.SubElement(case, "properties")
                for name, value in shown.items():
                    ET.SubElement(properties, "property", name=name, value=value)
            summary = entry["summary"] + (f": {entry['message']}" if entry["message"] else "")
            if entry["result"] in FAILED_RESULTS:
                ET.SubElement(case, "failure", message=summary, type=entry["executor"]).text = entry["message"]
            elif entry["result"] in SKIPPED_RESULTS:
                ET.SubElement(case, "skipped", message=summary)
            if entry.get("stdout") or entry["result"] not in (*FAILED_RESULTS, *SKIPPED_RESULTS):
                changed = "" if entry["objects_changed"] is None else f", {entry['objects_changed']} objects changed"
                # a command's output as CI systems show a test's: system-out and system-err
                ET.SubElement(case, "system-out").text = entry.get("stdout") or summary + changed
            if entry.get("stderr"):
                ET.SubElement(case, "system-err").text = entry["stderr"]
        _count(suite, cases)
    _count(suites, entries)
    _xml_safe(suites)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def check_report_path(path: str, option: str, what: str = "the report") -> None:
    """Refuse a report path whose directory does not exist, or that is a directory (``option`` names the
    option that set it, ``what`` the file)."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise PhasekitError(f"{option}: cannot write {what} {path}: its directory {directory} does not exist "
                            f"(create it first)")
    if os.path.isdir(path):
        raise PhasekitError(f"{option}: cannot write {what} {path}: it is a directory (expected a file path)")


def write_report(path: str, text: str, option: str, what: str = "the report") -> None:
    """``text`` written to ``path`` atomically; the directory must exist (``option`` names what set the path)."""
    check_report_path(path, option, what)
    try:
        write_atomically(path, text, mode=REPORT_MODE)
    except OSError as err:
        raise PhasekitError(f"{option}: cannot write {what} {path}: {err.strerror or err}") from None


YAML_SUFFIXES = (".yaml", ".yml")


def write_graph(path: str, mermaid: list[str], option: str) -> None:
    """The plan's Mermaid graph written to ``path`` atomically: Markdown with a mermaid fence for a ``.md`` name, the
    graph alone otherwise (``.mmd``)."""
    write_report(path, graph_text(mermaid, path), option, what="the graph")


def check_render_dest(dest: str, option: str) -> None:
    """Refuse a render destination before anything is rendered: a ``.yaml`` file whose directory is missing, or a
    directory whose parent is missing or that is a file."""
    if dest.lower().endswith(YAML_SUFFIXES):
        check_report_path(dest, option, what="the rendered bundles")
        return
    parent = os.path.dirname(os.path.abspath(dest))
    if not os.path.isdir(parent):
        raise PhasekitError(f"{option}: cannot write the rendered bundles in {dest}: its parent directory {parent} "
                            f"does not exist (create it first)")
    if os.path.exists(dest) and not os.path.isdir(dest):
        raise PhasekitError(f"{option}: cannot write the rendered bundles in {dest}: it is a file (expected a "
                            f"directory, or a file name ending in .yaml)")


def write_rendered(dest: str, rendered: list[dict], option: str) -> list[str]:
    """``render``'s bundles as YAML in ``dest``: one stream in one file when it names a ``.yaml``/``.yml`` file, else a
    directory (made if missing) with one file per phase and cluster (``apps/web/target.yaml``). Each file is replaced
    atomically; other files in the directory are left alone. Returns the paths written."""
    check_render_dest(dest, option)
    if dest.lower().endswith(YAML_SUFFIXES):
        write_report(dest, rendered_yaml(rendered), option, what="the rendered bundles")
        return [dest]
    written = []
    for name, text in rendered_files(rendered).items():
        path = os.path.join(dest, *name.split("/"))
        try:
            write_atomically(path, text, mode=REPORT_MODE)
        except OSError as err:
            raise PhasekitError(f"{option}: cannot write the rendered bundle {path}: {err.strerror or err}") from None
        written.append(path)
    return written


def write_reports(paths: dict, entries: list[dict], *, plan: str, mode: str, check_mode: bool,
                  stopped_by: str = "") -> None:
    """The reports asked for, ``paths`` mapping ``report_json``/``report_junit``/``report_timeline`` to a file
    (empty: not asked). Errors name the option as the plan role's variable too (``report_json (plan_report_json)``)."""
    makers = {"report_json": lambda: json_report(entries, plan=plan, mode=mode, check_mode=check_mode,
                                                 stopped_by=stopped_by),
              "report_junit": lambda: junit_report(entries, plan=plan, mode=mode),
              "report_timeline": lambda: timeline_html(entries, plan=plan, mode=mode)}
    for option, path in paths.items():
        if path:
            write_report(path, makers[option](), role_named(option))


def role_named(option: str) -> str:
    """A report option as errors name it: also as the plan role's variable that sets it."""
    return f"{option} (plan_{option})"


def xml_text(text: str) -> str:
    """``text`` with every character XML 1.0 cannot hold shown as its escape (``\\x07``, ``\\ufffe``), so a JUnit
    parser reads the report whatever a phase printed."""
    return NOT_XML.sub(lambda found: found.group().encode("unicode_escape").decode("ascii"), text)


def _xml_safe(element) -> None:
    for node in element.iter():
        if node.text:
            node.text = xml_text(node.text)
        for name, value in node.attrib.items():
            node.set(name, xml_text(value))


def _count(element, entries: list[dict]) -> None:
    element.set("tests", str(len(entries)))
    element.set("failures", str(sum(1 for entry in entries if entry["result"] in FAILED_RESULTS)))
    element.set("errors", "0")
    element.set("skipped", str(sum(1 for entry in entries if entry["result"] in SKIPPED_RESULTS)))
    element.set("time", f"{sum(entry['duration'] or 0 for entry in entries):.3f}")
