"""The run's timeline (issue #41): the reports give each phase's start and end per cluster, and the timeline page
draws them, one row per cluster; names are escaped and no message is in it."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from phase_helpers import run_entry

from ansible_collections.phasekit.kube.plugins.module_utils.running.history import last_run_entries, plan_history
from ansible_collections.phasekit.kube.plugins.module_utils.running.report import (
    json_report, junit_report, report_entries)
from ansible_collections.phasekit.kube.plugins.module_utils.running.timeline import (
    Bar, bars_of, epoch_of, iso_stamp, tick_step, timeline_html)

T0 = 1795000000.25
PHASES = [
    {"name": "base", "executor": "command", "hosts": ["a", "b"]},
    {"name": "<addon>", "executor": "command", "hosts": ["a", "b"]},
]
RECORDS = [
    {"phase": "base", "host": "a", "result": "changed", "duration": 1.0, "started": T0},
    {"phase": "base", "host": "b", "result": "ok", "duration": 2.5, "started": T0 + 0.5},
    {"phase": "<addon>", "host": "a", "result": "failed", "duration": 0.75, "started": T0 + 1.0,
     "msg": "exit 3: the token s3cr3t was refused"},
]


def entries():
    return report_entries(PHASES, RECORDS, ["a", "b"], "run")


def test_a_stamp_keeps_milliseconds_and_reads_back():
    assert iso_stamp(T0) == "2026-11-18T11:06:40.250Z"
    assert epoch_of(iso_stamp(T0)) == pytest.approx(T0, abs=0.001)


def test_the_json_report_gives_each_run_phase_its_start_and_end():
    results = {(entry["phase"], entry["cluster"]): entry for entry in json.loads(json_report(
        entries(), plan="site", mode="run", check_mode=False))["results"]}
    assert results[("base", "b")]["started"] == iso_stamp(T0 + 0.5)
    assert results[("base", "b")]["ended"] == iso_stamp(T0 + 3.0)
    assert "started" not in results[("<addon>", "b")]         # not run: no times


def test_the_junit_report_gives_start_and_end_as_properties():
    suites = ET.fromstring(junit_report(entries(), plan="site", mode="run"))
    case = suites.find("testsuite[@name='base']/testcase[@name='a']")
    properties = {prop.get("name"): prop.get("value") for prop in case.iter("property")}
    assert properties == {"started": iso_stamp(T0), "ended": iso_stamp(T0 + 1.0)}


def test_bars_count_from_the_first_start_and_what_did_not_run_is_listed():
    bars, not_run = bars_of(entries())
    assert Bar("base", "a", "changed", 0.0, 1.0) in bars
    assert Bar("<addon>", "a", "failed", 1.0, 1.75) in bars
    assert [(entry["phase"], entry["cluster"]) for entry in not_run] == [("<addon>", "b")]


@pytest.mark.parametrize("span, step", [(0.5, 0.1), (3.0, 0.5), (7.9, 1), (40, 5), (3000, 600)],
                         ids=["under-a-second", "seconds", "eight-seconds", "a-minute", "an-hour"])
def test_ticks_are_round_and_about_eight(span, step):
    assert tick_step(span) == step


def test_the_page_draws_a_bar_per_phase_and_cluster_escaped_without_messages():
    page = timeline_html(entries(), plan="site", mode="run")
    assert page.count('<g class="bar"') == 3
    assert 'data-phase="&lt;addon&gt;" data-cluster="a" data-result="failed" data-start="1.000" data-end="1.750"' \
        in page
    assert "<addon>" not in page
    assert "s3cr3t" not in page and "refused" not in page
    assert '<ul id="not-run"><li>&lt;addon&gt; on b: not run</li></ul>' in page


def test_a_run_where_nothing_ran_is_a_page_of_what_did_not():
    page = timeline_html(report_entries(PHASES, [], ["a", "b"], "run"), plan="site", mode="run")
    assert '<g class="bar"' not in page and page.count("<li>") == 4


# ---------------------------------------------------------------- the last run's timeline, from the run records


def record_entry(run, started, duration=1.0, result="changed", **extra):
    return {"run": run, "started": started, "duration": duration, "result": result, **extra}


OLD, NEW = "20261128T100000Z-aaaa", "20261128T110000Z-bbbb"


@pytest.mark.parametrize("recorded, last, expected", [
    ({}, "", []),
    ({"a": {"base": [record_entry(OLD, "2026-11-28T10:00:00Z")]}}, OLD,
     [("base", "a", "changed", "2026-11-28T10:00:00.000Z", "2026-11-28T10:00:01.000Z")]),
    # the newest run over all clusters, by its first start; its entries on every cluster, nothing of older runs
    ({"a": {"base": [record_entry(NEW, "2026-11-28T11:00:02Z", 2.5, "ok"), record_entry(OLD, "2026-11-28T10:00:00Z")]},
      "b": {"base": [record_entry(OLD, "2026-11-28T10:00:00Z")],
            "app": [record_entry(NEW, "2026-11-28T11:00:00Z", 0.5, "failed")]}}, NEW,
     [("base", "a", "ok", "2026-11-28T11:00:02.000Z", "2026-11-28T11:00:04.500Z"),
      ("app", "b", "failed", "2026-11-28T11:00:00.000Z", "2026-11-28T11:00:00.500Z")]),
    # entries edited by hand: a start that is no time, or no entry at all, left out; a bad duration counts as 0
    ({"a": {"base": [record_entry(NEW, "yesterday"), "not an entry",
                     record_entry(OLD, "2026-11-28T10:00:00Z", duration="long")]}}, OLD,
     [("base", "a", "changed", "2026-11-28T10:00:00.000Z", "2026-11-28T10:00:00.000Z")]),
], ids=["nothing-recorded", "one-entry", "newest-run-over-all-clusters", "hand-edited-entries-left-out"])
def test_the_last_runs_timeline_entries_come_from_the_records(recorded, last, expected):
    found, entries = last_run_entries(recorded)
    assert found == last
    assert [(entry["phase"], entry["cluster"], entry["result"], entry["started"], entry["ended"])
            for entry in entries] == expected


def test_history_with_a_timeline_draws_the_last_run(tmp_path):
    class Records:
        def entries(self, host, phase):
            return {("a", "base"): [record_entry(NEW, "2026-11-28T11:00:00Z", msg="token s3cr3t")],
                    ("b", "base"): [record_entry(NEW, "2026-11-28T11:00:01Z", result="failed")]}.get((host, phase), [])

        def problems(self, host):
            return []

    planned = [run_entry("base", "command", ("a", "b"))]
    path = tmp_path / "timeline.html"
    result = plan_history(Records(), planned, ["a", "b"], 2, timeline=str(path), plan="site")
    assert result["last_run"] == NEW
    page = path.read_text()
    assert f"Plan site: run {NEW} timeline" in page
    assert page.count("<rect ") == 2 and "s3cr3t" not in page
