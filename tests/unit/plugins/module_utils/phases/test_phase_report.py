"""The run summary for CI: one entry per phase and cluster, as JSON and as JUnit XML, written atomically."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.masking import Masks
from ansible_collections.phasekit.kube.plugins.module_utils.running.report import (
    json_report, junit_report, report_entries, write_report)

TOKEN = "s3cr3t-token-0123456789"
PHASES = [
    {"name": "infra", "executor": None, "hosts": ["a", "b"]},     # a group: no row of its own
    {"name": "infra/ns", "executor": "apply", "hosts": ["a", "b"]},
    {"name": "smoke", "executor": "command", "hosts": ["a", "b", "c"]},
    {"name": "later", "executor": "apply", "hosts": ["a"]},
]
RECORDS = [
    {"phase": "infra/ns", "host": "a", "result": "changed", "duration": 1.23456, "objects_changed": 2},
    {"phase": "infra/ns", "host": "b", "result": "ok", "duration": 0.5, "objects_changed": 0},
    {"phase": "smoke", "host": "a", "result": "ok", "duration": 0.1, "objects_changed": None},
    {"phase": "smoke", "host": "b", "result": "failed", "duration": 2.0, "objects_changed": None,
     "msg": f"exit 3: token {TOKEN} refused"},
]


def entries():
    return report_entries(PHASES, RECORDS, ["a", "b"], "run", masks_for=lambda host: Masks([TOKEN]))


@pytest.mark.parametrize("phase, cluster, result, duration, changed", [
    ("infra/ns", "a", "changed", 1.235, 2),
    ("infra/ns", "b", "ok", 0.5, 0),
    ("smoke", "b", "failed", 2.0, None),
    ("smoke", "c", "not in play", None, None),
    ("later", "a", "not run", None, None),
], ids=["changed", "ok", "failed", "not-in-play", "not-run-after-a-failure"])
def test_one_entry_per_phase_and_cluster(phase, cluster, result, duration, changed):
    found = [entry for entry in entries() if (entry["phase"], entry["cluster"]) == (phase, cluster)]
    assert len(found) == 1
    assert (found[0]["result"], found[0]["duration"], found[0]["objects_changed"]) == (result, duration, changed)
    assert len(entries()) == 6   # groups have no entry


def test_json_report_has_totals_and_masked_messages():
    report = json.loads(json_report(entries(), plan="site", mode="run", check_mode=False, stopped_by="smoke"))
    assert report["failed"] is True and report["stopped_by"] == "smoke" and report["plan"] == "site"
    assert report["totals"] == {"changed": 1, "ok": 2, "failed": 1, "not in play": 1, "not run": 1}
    failed = [entry for entry in report["results"] if entry["result"] == "failed"][0]
    assert failed["message"] == "exit 3: token *** refused"
    assert TOKEN not in json.dumps(report)


def test_junit_report_has_a_suite_per_phase_and_a_case_per_cluster():
    root = ET.fromstring(junit_report(entries(), plan="site", mode="run"))
    assert root.tag == "testsuites" and root.get("tests") == "6" and root.get("failures") == "1"
    assert [suite.get("name") for suite in root] == ["infra/ns", "smoke", "later"]
    smoke = root[1]
    assert (smoke.get("tests"), smoke.get("failures"), smoke.get("skipped")) == ("3", "1", "1")
    cases = {case.get("name"): case for case in smoke}
    assert cases["b"].find("failure").get("message") == "failed: exit 3: token *** refused"
    assert cases["c"].find("skipped") is not None and cases["a"].find("failure") is None
    assert cases["a"].get("classname") == "site.smoke" and cases["b"].get("time") == "2.000"


def test_reports_are_written_atomically(tmp_path):
    path = tmp_path / "report.json"
    path.write_text("old")
    write_report(str(path), "new\n", "report_json")
    assert path.read_text() == "new\n" and os.listdir(tmp_path) == ["report.json"]


@pytest.mark.parametrize("where, message", [
    ("missing/report.xml", "its directory"),
    (".", "it is a directory"),
], ids=["directory-must-exist", "not-a-directory"])
def test_bad_report_paths_are_refused_clearly(tmp_path, where, message):
    with pytest.raises(PhasekitError, match=f"report_junit: cannot write the report .*{message}"):
        write_report(str(tmp_path / where), "x", "report_junit")
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("printed", [
    "ring \x07 the bell", "colour \x1b[31mred\x1b[0m", "start of heading \x01", "not a character \ufffe",
    "a lone surrogate \ud800", "tab\tand newline\n kept",
], ids=["bell", "escape-sequence", "soh", "u-fffe", "lone-surrogate", "allowed-whitespace"])
def test_junit_report_parses_whatever_a_phase_printed(printed):
    records = [{"phase": "smoke", "host": "a", "result": "failed", "duration": 1.0, "objects_changed": None,
                "msg": printed}]
    text = junit_report(report_entries(PHASES[2:3], records, ["a"], "run"), plan=f"site {printed}", mode="run")
    root = ET.fromstring(text.encode("utf-8"))
    failure = root.find("testsuite/testcase/failure")
    assert all(char in "\t\n\r" or ord(char) >= 0x20 for char in failure.text + root.get("name"))
    kept = printed.replace("\x07", "\\x07").replace("\x1b", "\\x1b").replace("\x01", "\\x01")
    kept = kept.replace("\ufffe", "\\ufffe").replace("\ud800", "\\ud800")
    assert failure.text == kept


OUTPUT_RECORDS = [
    {"phase": "smoke", "host": "a", "result": "ok", "duration": 0.1, "objects_changed": None, "rc": 0,
     "msg": "rc 0: deployment hello ready", "stdout": f"deployment hello ready\ntoken {TOKEN}\n",
     "stderr": "warning \x1b[33mslow\x1b[0m\n"},
    {"phase": "smoke", "host": "b", "result": "failed", "duration": 2.0, "objects_changed": None, "rc": 3,
     "msg": "command x exited with rc 3: refused", "stdout": "", "stderr": "refused\n"},
]


def output_entries():
    return report_entries(PHASES[2:3], OUTPUT_RECORDS, ["a", "b"], "run", masks_for=lambda host: Masks([TOKEN]))


def test_json_report_holds_a_commands_output_masked():
    results = {entry["cluster"]: entry for entry in json.loads(
        json_report(output_entries(), plan="site", mode="run", check_mode=False))["results"]}
    assert (results["a"]["rc"], results["a"]["stdout"]) == (0, "deployment hello ready\ntoken ***\n")
    assert (results["b"]["rc"], results["b"]["stderr"]) == (3, "refused\n")
    assert "stdout" not in results["c"]   # not run: nothing printed


def test_junit_report_holds_a_commands_output_as_system_out_and_err():
    root = ET.fromstring(junit_report(output_entries(), plan="site", mode="run").encode("utf-8"))
    cases = {case.get("name"): case for case in root.find("testsuite")}
    assert cases["a"].find("system-out").text == "deployment hello ready\ntoken ***\n"
    assert cases["a"].find("system-err").text == "warning \\x1b[33mslow\\x1b[0m\n"
    assert cases["b"].find("failure") is not None and cases["b"].find("system-err").text == "refused\n"
    assert TOKEN not in ET.tostring(root, encoding="unicode")


def test_reports_show_each_cluster_server_never_a_missing_one():
    servers = {"a": "127.0.0.1:6443", "b": "127.0.0.1:6443"}   # a and b share one server: the reports show it
    found = report_entries(PHASES, RECORDS, ["a", "b"], "run", servers=servers)
    assert {(entry["cluster"], entry["server"]) for entry in found} == {
        ("a", "127.0.0.1:6443"), ("b", "127.0.0.1:6443"), ("c", "")}
    report = json.loads(json_report(found, plan="site", mode="run", check_mode=False))
    assert report["results"][0]["server"] == "127.0.0.1:6443"
    root = ET.fromstring(junit_report(found, plan="site", mode="run"))
    cases = {case.get("name"): case for case in root[1]}
    assert cases["a"].find("properties/property").attrib == {"name": "server", "value": "127.0.0.1:6443"}
    assert cases["c"].find("properties") is None
